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
  // angle whose cosine and sine are cos[i], sin[i] (RopeStyle::kAdjacentPairs;
  // the halves style is rotated in ops.cc, its cost is negligible).
  void (*rotate_pairs)(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dim, const float* cos,
                       const float* sin);
  void (*softmax)(float* x, int64_t n);
  void (*swiglu)(const float* gate, const float* up, int64_t n, float* out);
  void (*geglu)(const float* gate, const float* up, int64_t n, float* out);
  // As kernels::AttendHead; returns false (having done nothing) for a KV
  // type it does not handle.
  bool (*attend_head)(const float* q, int64_t head_dim, const KvHeadView& k, const KvHeadView& v,
                      int64_t n_positions, float scale, float* scores, float* out);
  // The two halves of attend_head, for callers that transform the scores in
  // between (soft-capping): scores[p] = scale · q·k_p; out = Σ_p weights[p] · v_p.
  bool (*head_scores)(const float* q, int64_t head_dim, const KvHeadView& k, int64_t n_positions, float scale,
                      float* scores);
  bool (*head_values)(const float* weights, int64_t n_positions, const KvHeadView& v, int64_t head_dim, float* out);
  // As kernels::StoreKv, bit for bit equal to QuantizeRow; false for a type
  // it does not handle.
  bool (*store_kv)(const float* x, int64_t head_dim, GgmlType type, uint8_t* dst);
};

// Call only when the CPU supports that ISA.
const OpsKernels& Avx512Ops();
const OpsKernels& Avx2Ops();

}  // namespace ridge::kernels::internal
