#pragma once
// The contract between ops.cc (run-time dispatch) and the per-ISA versions of
// the small kernels (ops_avx2.cc, ops_avx512.cc, attention_*.cc). Plain
// function pointers; the same rules as matmul_isa.h (no shared inline code or
// templates in ISA files, no <cmath> calls there: trigonometry for RoPE is
// computed in ops.cc and passed in).
#include <cstdint>

#include "ridge/gguf/ggml_type.h"
#include "ridge/kernels/kernel_types.h"

namespace ridge::kernels::internal {

struct OpsKernels {
  void (*rms_norm)(const float* x, const float* weight, int64_t n, float eps, float* out);
  // Rotates the pairs (x[2i], x[2i+1]), i < rope_dim / 2, of each head by the
  // angle whose cosine and sine are cos[i], sin[i] (RopeStyle::kAdjacentPairs).
  void (*rotate_pairs)(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dim, const float* cos,
                       const float* sin);
  // The same for RopeStyle::kHalves: pair i is (x[i], x[i + rope_dim / 2]).
  void (*rotate_halves)(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dim, const float* cos,
                        const float* sin);
  // x[i] = exp(x[i] − m) / (Σ_j exp(x[j] − m) + exp(sink − m)), m = max(x, sink);
  // sink −∞: none, a plain softmax (scalar::SoftmaxWithSink's contract).
  void (*softmax)(float* x, int64_t n, float sink);
  // The unnormalized softmax of one split of attention (n >= 1): *max = max_i
  // x[i], x[i] = exp(x[i] − *max), *sum = Σ x[i] (softmax's steps without the
  // division).
  void (*softmax_partial)(float* x, int64_t n, float* max, float* sum);
  void (*swiglu)(const float* gate, const float* up, int64_t n, float* out);
  void (*geglu)(const float* gate, const float* up, int64_t n, float* out);
  void (*swiglu_oai)(const float* gate, const float* up, int64_t n, float alpha, float limit, float* out);
  // x[i] = cap · tanh(x[i] / cap) (Gemma 2's soft-capped scores and logits).
  void (*soft_cap)(float* x, int64_t n, float cap);
  // The two halves of kernels::AttendRows for n_rows <= kMaxAttentionRows
  // rows over one KV head, K (V) read once for all of them; ops.cc transforms
  // the scores in between (soft-cap, softmax, sink). Return false (having
  // done nothing) for a KV type they do not handle:
  //   scores[r·scores_stride + p] = scale · q_r·k_p for p < n_positions_r;
  //   out_r = Σ_p weights[r·scores_stride + p] · v_p.
  bool (*rows_scores)(const AttentionRow* rows, int64_t n_rows, int64_t head_dim, const KvHeadView& k, float scale,
                      float* scores, int64_t scores_stride);
  bool (*rows_values)(const AttentionRow* rows, int64_t n_rows, const float* weights, int64_t scores_stride,
                      const KvHeadView& v, int64_t head_dim);
  // As kernels::StoreKv, bit for bit equal to QuantizeRow; false for a type
  // it does not handle.
  bool (*store_kv)(const float* x, int64_t head_dim, GgmlType type, uint8_t* dst);
};

// Call only when the CPU supports that ISA.
const OpsKernels& Avx512Ops();
const OpsKernels& Avx2Ops();

}  // namespace ridge::kernels::internal
