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
  // The two halves of kernels::AttendGroup, for n_q <= kMaxGroupHeads heads
  // sharing one KV head, each reading K (V) once for all of them; ops.cc
  // transforms the scores in between (soft-cap, softmax, sink). Return false
  // (having done nothing) for a KV type they do not handle:
  //   scores[g·n_positions + p] = scale · q_g·k_p, q_g = q + g·q_stride;
  //   out_g = Σ_p weights[g·n_positions + p] · v_p, out_g = out + g·out_stride.
  bool (*group_scores)(const float* q, int64_t q_stride, int64_t n_q, int64_t head_dim, const KvHeadView& k,
                       int64_t n_positions, float scale, float* scores);
  bool (*group_values)(const float* weights, int64_t n_q, int64_t n_positions, const KvHeadView& v,
                       int64_t head_dim, float* out, int64_t out_stride);
  // As kernels::StoreKv, bit for bit equal to QuantizeRow; false for a type
  // it does not handle.
  bool (*store_kv)(const float* x, int64_t head_dim, GgmlType type, uint8_t* dst);
};

// Call only when the CPU supports that ISA.
const OpsKernels& Avx512Ops();
const OpsKernels& Avx2Ops();

}  // namespace ridge::kernels::internal
