#pragma once
// The numeric kernels of a Llama forward pass. Each public function dispatches
// at run time (ActiveIsa() from base/cpu_features.h) to a SIMD version and has
// a scalar twin in namespace ridge::kernels::scalar that tests compare against.
// Kernels are pure functions over spans: they never see a model config.
#include <cstdint>

#include "ridge/base/thread_pool.h"
#include "ridge/gguf/ggml_type.h"

namespace ridge::kernels {

// A weight matrix used in place from the mapped file: n_rows rows of n_cols
// elements of `type`, row r starting at data + r * row_bytes.
struct WeightMatrix {
  GgmlType type = GgmlType::kF32;
  const uint8_t* data = nullptr;
  int64_t n_rows = 0;     // output features
  int64_t n_cols = 0;     // input features
  int64_t row_bytes = 0;  // RowBytes(type, n_cols)
};

// y[t, r] = Σ_c W[r, c] · x[t, c]
//   x: [n_tokens, n_cols] f32, y: [n_tokens, n_rows] f32.
// n_tokens == 1 is the decode (matrix-vector) case; larger is prefill.
void MatMul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);

// out[i] = x[i] / sqrt(mean(x²) + eps) · weight[i]; x, weight, out: [n]. out may alias x.
void RmsNorm(const float* x, const float* weight, int64_t n, float eps, float* out);

// Rotates adjacent pairs (x[2i], x[2i+1]) of the first rope_dim dims of each
// head by position · freq_base^(−2i/rope_dim) (GGUF llama "normal" RoPE).
//   x: [n_heads, head_dim], modified in place.
void Rope(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dim, int64_t position, float freq_base);

// x[i] = exp(x[i] − max) / Σ exp(x[j] − max); x: [n].
void SoftmaxInPlace(float* x, int64_t n);

// out[i] = silu(gate[i]) · up[i] = gate[i] / (1 + exp(−gate[i])) · up[i]; all [n]. out may alias gate.
void SwiGlu(const float* gate, const float* up, int64_t n, float* out);

// Cached keys or values of one KV head, possibly spread over fixed-size blocks
// (paged KV cache). Position p lives in blocks[p / block_tokens] at byte
// (p % block_tokens) · token_stride_bytes + head_offset_bytes, as head_dim
// elements of `type` (F32, F16, BF16 or Q8_0).
struct KvHeadView {
  GgmlType type = GgmlType::kF16;
  const uint8_t* const* blocks = nullptr;
  int64_t block_tokens = 0;
  int64_t token_stride_bytes = 0;
  int64_t head_offset_bytes = 0;
};

// Attention of one query head over positions [0, n_positions):
//   scores[p] = scale · q·k_p;  w = softmax(scores);  out = Σ_p w[p] · v_p
//   q: [head_dim], out: [head_dim], scores: scratch of n_positions floats.
void AttendHead(const float* q, int64_t head_dim, const KvHeadView& k, const KvHeadView& v, int64_t n_positions,
                float scale, float* scores, float* out);

// Stores one head's vector (head_dim floats) into a KV slot of `type`.
void StoreKv(const float* x, int64_t head_dim, GgmlType type, uint8_t* dst);

// Bytes one head of head_dim elements takes in a KV slot of `type`.
int64_t KvHeadBytes(GgmlType type, int64_t head_dim);

namespace scalar {
void MatMul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);
void RmsNorm(const float* x, const float* weight, int64_t n, float eps, float* out);
void Rope(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dim, int64_t position, float freq_base);
void SoftmaxInPlace(float* x, int64_t n);
void SwiGlu(const float* gate, const float* up, int64_t n, float* out);
void AttendHead(const float* q, int64_t head_dim, const KvHeadView& k, const KvHeadView& v, int64_t n_positions,
                float scale, float* scores, float* out);
}  // namespace scalar

}  // namespace ridge::kernels
