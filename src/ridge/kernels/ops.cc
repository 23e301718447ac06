// Run-time dispatch of the small kernels in ops.h (MatMul: matmul.cc).
#include "ridge/kernels/ops.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "ridge/base/cpu_features.h"
#include "ridge/base/error.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/kernels/ops_isa.h"

namespace ridge::kernels {
namespace {

const internal::OpsKernels* ActiveOps() {
  switch (ActiveIsa()) {
    case Isa::kAvx512: return &internal::Avx512Ops();
    case Isa::kAvx2: return &internal::Avx2Ops();
    case Isa::kScalar: return nullptr;
  }
  return nullptr;
}

}  // namespace

void RmsNorm(const float* x, const float* weight, int64_t n, float eps, float* out) {
  if (const auto* ops = ActiveOps(); ops && n > 0) return ops->rms_norm(x, weight, n, eps, out);
  scalar::RmsNorm(x, weight, n, eps, out);
}

void RopeBaseFrequencies(float freq_base, int64_t rope_dim, float* inv_freq) {
  for (int64_t i = 0; i < rope_dim; i += 2)
    inv_freq[i / 2] = std::pow(freq_base, -static_cast<float>(i) / static_cast<float>(rope_dim));
}

void Rope(float* x, int64_t n_heads, int64_t head_dim, const RopeFrequencies& freqs, int64_t position) {
  const auto* ops = ActiveOps();
  if (!ops || freqs.style != RopeStyle::kAdjacentPairs) return scalar::Rope(x, n_heads, head_dim, freqs, position);
  RIDGE_CHECK(freqs.n_pairs >= 0 && 2 * freqs.n_pairs <= head_dim);
  // The angles exactly as the scalar twin computes them, once for all heads.
  thread_local std::vector<float> cos, sin;
  cos.resize(static_cast<size_t>(freqs.n_pairs));
  sin.resize(static_cast<size_t>(freqs.n_pairs));
  for (int64_t i = 0; i < freqs.n_pairs; ++i) {
    const float angle = static_cast<float>(position) * freqs.inv_freq[i];
    cos[static_cast<size_t>(i)] = std::cos(angle) * freqs.mscale;
    sin[static_cast<size_t>(i)] = std::sin(angle) * freqs.mscale;
  }
  ops->rotate_pairs(x, n_heads, head_dim, 2 * freqs.n_pairs, cos.data(), sin.data());
}

void SoftmaxInPlace(float* x, int64_t n) {
  if (const auto* ops = ActiveOps()) return ops->softmax(x, n);
  scalar::SoftmaxInPlace(x, n);
}

void SwiGlu(const float* gate, const float* up, int64_t n, float* out) {
  if (const auto* ops = ActiveOps()) return ops->swiglu(gate, up, n, out);
  scalar::SwiGlu(gate, up, n, out);
}

void GeGlu(const float* gate, const float* up, int64_t n, float* out) {
  if (const auto* ops = ActiveOps()) return ops->geglu(gate, up, n, out);
  scalar::GeGlu(gate, up, n, out);
}

void SwigluOai(const float* gate, const float* up, int64_t n, float alpha, float limit, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = std::fmin(gate[i], limit), u = std::fmax(std::fmin(up[i], limit), -limit);
    out[i] = g / (1.0f + std::exp(-alpha * g)) * (u + 1.0f);
  }
}

void AttendHead(const float* q, int64_t head_dim, const KvHeadView& k, const KvHeadView& v, int64_t n_positions,
                float scale, float softcap, float sink, float* scores, float* out) {
  const AttentionRow row{q, out, n_positions, sink};
  AttendRows(&row, 1, head_dim, k, v, scale, softcap, scores);
}

void AttendRows(const AttentionRow* rows, int64_t n_rows, int64_t head_dim, const KvHeadView& k, const KvHeadView& v,
                float scale, float softcap, float* scores) {
  const auto* ops = ActiveOps();
  for (int64_t r0 = 0; r0 < n_rows; r0 += kMaxAttentionRows) {
    const AttentionRow* part = rows + r0;
    const int64_t n = std::min(kMaxAttentionRows, n_rows - r0);
    int64_t stride = 0;  // scores of row r at scores + r · stride
    for (int64_t r = 0; r < n; ++r) stride = std::max(stride, part[r].n_positions);
    if (ops && ops->rows_scores(part, n, head_dim, k, scale, scores, stride)) {
      for (int64_t r = 0; r < n; ++r) {
        float* s = scores + r * stride;
        const int64_t n_positions = part[r].n_positions;
        if (softcap > 0.0f)
          for (int64_t p = 0; p < n_positions; ++p) s[p] = softcap * std::tanh(s[p] / softcap);
        if (part[r].sink != -std::numeric_limits<float>::infinity()) {
          scalar::SoftmaxWithSink(s, n_positions, part[r].sink);
        } else if (n_positions > 0) {
          ops->softmax(s, n_positions);
        }
      }
      if (ops->rows_values(part, n, scores, stride, v, head_dim)) continue;
    }
    for (int64_t r = 0; r < n; ++r)
      scalar::AttendHead(part[r].q, head_dim, k, v, part[r].n_positions, scale, softcap, part[r].sink, scores,
                         part[r].out);
  }
}

void StoreKv(const float* x, int64_t head_dim, GgmlType type, uint8_t* dst) {
  if (const auto* ops = ActiveOps()) {
    if (ops->store_kv(x, head_dim, type, dst)) return;
  }
  QuantizeRow(type, x, dst, head_dim);
}

int64_t KvHeadBytes(GgmlType type, int64_t head_dim) { return RowBytes(type, head_dim); }

}  // namespace ridge::kernels
