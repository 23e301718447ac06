#pragma once
// The numeric kernels of a Llama forward pass. Each public function dispatches
// at run time (ActiveIsa() from base/cpu_features.h) to a SIMD version and has
// a scalar twin in namespace ridge::kernels::scalar that tests compare against.
// Kernels are pure functions over spans: they never see a model config.
#include <cstdint>

#include "ridge/base/thread_pool.h"
#include "ridge/gguf/ggml_type.h"
#include "ridge/kernels/kernel_types.h"

namespace ridge::kernels {

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
