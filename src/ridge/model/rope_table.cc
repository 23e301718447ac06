#include "ridge/model/rope_table.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "ridge/base/error.h"
#include "ridge/kernels/ops.h"

namespace ridge {
namespace {

// The dim (of rope_dim) whose pair turns n_turns times over the original context.
double YarnCorrectionDim(double rope_dim, double original_context, double base, double n_turns) {
  return rope_dim * std::log(original_context / (n_turns * 2.0 * std::numbers::pi)) / (2.0 * std::log(base));
}

}  // namespace

RopeTable BuildRopeTable(const ModelConfig& c, bool sliding, const std::vector<float>& freq_divisors) {
  const int64_t n_pairs = c.rope_dim / 2;
  RIDGE_CHECK(freq_divisors.empty() || static_cast<int64_t>(freq_divisors.size()) == n_pairs);
  // Gemma 3 gives its sliding layers their own base and leaves them unscaled;
  // where every layer slides (mistral style) they are the model's layers, and
  // gpt-oss's alternate ones turn as its global layers do.
  const bool own_kind = sliding && c.arch().global_layer_every != 0 && c.arch().sliding_layers_own_rope;
  RopeTable t;
  t.inv_freq.resize(static_cast<size_t>(n_pairs));
  kernels::RopeBaseFrequencies(own_kind ? c.rope_freq_base_swa : c.rope_freq_base, c.rope_dim, t.inv_freq.data());
  for (size_t i = 0; i < freq_divisors.size(); ++i) t.inv_freq[i] /= freq_divisors[i];
  if (own_kind) return t;
  const RopeScaling& s = c.rope_scaling;
  switch (s.type) {
    case RopeScalingType::kNone: break;
    case RopeScalingType::kLinear:
      for (float& f : t.inv_freq) f /= s.factor;
      break;
    case RopeScalingType::kYarn: {
      const double d = static_cast<double>(c.rope_dim), ctx = static_cast<double>(s.original_context);
      const double low = std::max(0.0, std::floor(YarnCorrectionDim(d, ctx, c.rope_freq_base, s.yarn_beta_fast)));
      const double high = std::min(d - 1.0, std::ceil(YarnCorrectionDim(d, ctx, c.rope_freq_base, s.yarn_beta_slow)));
      for (int64_t i = 0; i < n_pairs; ++i) {
        const double y = (static_cast<double>(i) - low) / std::max(0.001, high - low);
        const double ramp = 1.0 - std::clamp(y, 0.0, 1.0);  // 1: keep the original angle (extrapolate)
        const double f = t.inv_freq[static_cast<size_t>(i)];
        t.inv_freq[static_cast<size_t>(i)] = static_cast<float>(f / s.factor * (1.0 - ramp) + f * ramp);
      }
      t.mscale = s.attn_factor * (1.0f + 0.1f * std::log(s.factor));
      break;
    }
    case RopeScalingType::kLongRope: t.mscale = s.attn_factor; break;
  }
  return t;
}

}  // namespace ridge
