// Run-time dispatch of the kernels in ops.h.
#include "ridge/kernels/ops.h"

#include "ridge/base/error.h"
#include "ridge/gguf/dequantize.h"

namespace ridge::kernels {

void RmsNorm(const float* x, const float* weight, int64_t n, float eps, float* out) {
  scalar::RmsNorm(x, weight, n, eps, out);
}
void Rope(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dim, int64_t position, float freq_base) {
  scalar::Rope(x, n_heads, head_dim, rope_dim, position, freq_base);
}
void SoftmaxInPlace(float* x, int64_t n) { scalar::SoftmaxInPlace(x, n); }
void SwiGlu(const float* gate, const float* up, int64_t n, float* out) { scalar::SwiGlu(gate, up, n, out); }
void AttendHead(const float* q, int64_t head_dim, const KvHeadView& k, const KvHeadView& v, int64_t n_positions,
                float scale, float* scores, float* out) {
  scalar::AttendHead(q, head_dim, k, v, n_positions, scale, scores, out);
}

void StoreKv(const float* x, int64_t head_dim, GgmlType type, uint8_t* dst) { QuantizeRow(type, x, dst, head_dim); }

int64_t KvHeadBytes(GgmlType type, int64_t head_dim) { return RowBytes(type, head_dim); }

}  // namespace ridge::kernels
