// Run-time dispatch of the small kernels in ops.h (MatMul: matmul.cc).
#include "ridge/kernels/ops.h"

#include <cmath>
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

void Rope(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dim, int64_t position, float freq_base) {
  const auto* ops = ActiveOps();
  if (!ops) return scalar::Rope(x, n_heads, head_dim, rope_dim, position, freq_base);
  RIDGE_CHECK(rope_dim >= 0 && rope_dim <= head_dim);
  const int64_t n_pairs = (rope_dim + 1) / 2;  // as the scalar twin: an odd rope_dim rotates one more pair
  RIDGE_CHECK(2 * n_pairs <= head_dim);
  // The angles exactly as the scalar twin computes them, once for all heads.
  thread_local std::vector<float> cos, sin;
  cos.resize(static_cast<size_t>(n_pairs));
  sin.resize(static_cast<size_t>(n_pairs));
  for (int64_t i = 0; i < rope_dim; i += 2) {
    float freq = std::pow(freq_base, -static_cast<float>(i) / static_cast<float>(rope_dim));
    float angle = static_cast<float>(position) * freq;
    cos[static_cast<size_t>(i / 2)] = std::cos(angle);
    sin[static_cast<size_t>(i / 2)] = std::sin(angle);
  }
  ops->rotate_pairs(x, n_heads, head_dim, 2 * n_pairs, cos.data(), sin.data());
}

void SoftmaxInPlace(float* x, int64_t n) {
  if (const auto* ops = ActiveOps()) return ops->softmax(x, n);
  scalar::SoftmaxInPlace(x, n);
}

void SwiGlu(const float* gate, const float* up, int64_t n, float* out) {
  if (const auto* ops = ActiveOps()) return ops->swiglu(gate, up, n, out);
  scalar::SwiGlu(gate, up, n, out);
}

void AttendHead(const float* q, int64_t head_dim, const KvHeadView& k, const KvHeadView& v, int64_t n_positions,
                float scale, float* scores, float* out) {
  if (const auto* ops = ActiveOps()) {
    if (ops->attend_head(q, head_dim, k, v, n_positions, scale, scores, out)) return;
  }
  scalar::AttendHead(q, head_dim, k, v, n_positions, scale, scores, out);
}

void StoreKv(const float* x, int64_t head_dim, GgmlType type, uint8_t* dst) {
  if (const auto* ops = ActiveOps()) {
    if (ops->store_kv(x, head_dim, type, dst)) return;
  }
  QuantizeRow(type, x, dst, head_dim);
}

int64_t KvHeadBytes(GgmlType type, int64_t head_dim) { return RowBytes(type, head_dim); }

}  // namespace ridge::kernels
