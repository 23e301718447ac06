#pragma once
// RoPE angles per layer kind, with the file's scaling folded in once at load:
// every variant (plain, Llama 3.1 rope_freqs divisors, linear, YaRN, phi3
// LongRoPE) turns pair i by position · inv_freq[i], only the table differs.
#include <cstdint>
#include <vector>

#include "ridge/model/model_config.h"

namespace ridge {

struct RopeTable {
  std::vector<float> inv_freq;  // [rope_dim / 2] radians per position
  float mscale = 1.0f;          // multiplies cos and sin
};

// The table of global layers (sliding == false) or sliding-window layers.
// freq_divisors: [rope_dim / 2] (rope_freqs.weight or rope_factors_*), or empty.
//   theta_i = base^(−2i/rope_dim) / divisor_i
//   linear: theta_i / factor
//   YaRN:   theta_i · ((1 − ramp_i) / factor + ramp_i), ramp_i = 1 for the fast
//           (high-frequency) dims, 0 for the slow ones, linear between the
//           dims that turn beta_fast and beta_slow times over the original
//           context; mscale = attn_factor · (1 + 0.1 · ln factor)
//   LongRoPE: mscale = attn_factor
// Gemma 3's sliding layers use their own base and no scaling.
RopeTable BuildRopeTable(const ModelConfig& c, bool sliding, const std::vector<float>& freq_divisors);

}  // namespace ridge
