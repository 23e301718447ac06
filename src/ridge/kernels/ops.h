#pragma once
// The numeric kernels of a Llama forward pass. Each public function dispatches
// at run time (ActiveIsa() from base/cpu_features.h) to a SIMD version and has
// a scalar twin in namespace ridge::kernels::scalar that tests compare against.
// Kernels are pure functions over spans: they never see a model config.
#include <cstdint>
#include <span>

#include "ridge/base/thread_pool.h"
#include "ridge/gguf/architecture.h"  // RopeStyle
#include "ridge/gguf/ggml_type.h"
#include "ridge/kernels/kernel_types.h"

namespace ridge::kernels {

// y[t, r] = Σ_c W[r, c] · x[t, c]
//   x: [n_tokens, n_cols] f32, y: [n_tokens, n_rows] f32.
// n_tokens == 1 is the decode (matrix-vector) case; larger is prefill.
// What the SIMD targets round first (the scalar twin rounds nothing): for
// quantized W, x to int8 blocks of 32 (as llama.cpp's CPU kernels); for BF16 W
// on AVX-512, x to BF16 (nearest even), so that the BF16 dot takes 32 exact
// products an instruction (F32, F16 and BF16 elsewhere: x as it is).
void MatMul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);

// One product of a MatMulGroup call: y = W · x as MatMul computes it, x
// either the job's own rows or gathered from a shared input.
struct MatMulJob {
  const WeightMatrix* w = nullptr;
  const float* x = nullptr;  // [n_tokens, w->n_cols], or with rows: [x_tokens, w->n_cols]
  int64_t n_tokens = 0;
  float* y = nullptr;  // [n_tokens, w->n_rows]; overlaps no other job's output and no job's input
  // A gather (the tokens a mixture routes to one expert): the job's token t is
  // row rows[t] of x, each in [0, x_tokens).
  const int64_t* rows = nullptr;  // [n_tokens]
  int64_t x_tokens = 0;
};

// Several independent MatMuls, the same bits as calling MatMul on each (batch
// invariance), with one wake-up and one barrier of the pool for all of them
// instead of one each (their row chunks and panels are tasks of one job of
// the pool), and one activation quantization for jobs that share x (Q/K/V,
// gate/up). This is how a step's expert matmuls run: each expert sees a few
// tokens, and ~100 barriers a layer would otherwise cost more than the products.
// Jobs that gather from the same x with the same preparation quantize each of
// x's rows once and copy the quantized rows, however many experts a token is
// routed to (x_tokens rows prepared, whether gathered or not).
void MatMulGroup(std::span<const MatMulJob> jobs, ThreadPool& pool);

// Weights repacked once at load into the layout the active ISA's panel kernels
// read (kernels/weight_panels.h: Q8_0, Q4_0, IQ4_NL and MXFP4 on AVX-512 today), so that
// prefill and batched decode do not pack panels per call and decode and small
// batches take the panel kernel (no reduction across lanes). The repacked
// matrix takes the same bytes as the file's.
// Whether RepackInPlace applies to w under the active ISA (whole panels of 32
// rows, a type with weight-panel kernels, not already repacked).
bool CanRepack(const WeightMatrix& w);
// Rewrites w's bytes in place into weight panels and sets w.panels; `bytes`
// is w.data, writable. MatMul of the result gives the same bits as before on
// every ISA (an ISA without weight-panel kernels unpacks them per call: slow,
// for tests that switch ISA after loading).
void RepackInPlace(WeightMatrix& w, uint8_t* bytes);
// Rows [r_begin, r_end) of a repacked matrix as the file had them (exactly the
// bytes before RepackInPlace): rows [(r_end − r_begin) × row_bytes]. One row
// reads only its own bytes of its panel (a tied embedding's lookup).
void UnpackPanels(const WeightMatrix& w, int64_t r_begin, int64_t r_end, uint8_t* rows);

// out[i] = x[i] / sqrt(mean(x²) + eps) · weight[i]; x, weight, out: [n]. out may alias x.
void RmsNorm(const float* x, const float* weight, int64_t n, float eps, float* out);

// The angles of RoPE for one kind of layer: pair i of a head turns by
// position · inv_freq[i] radians, and its cosine and sine are scaled by mscale
// (YaRN / LongRoPE attention factor; 1 otherwise). The pairs are
// (x[2i], x[2i+1]) or (x[i], x[i + n_pairs]) by style.
struct RopeFrequencies {
  const float* inv_freq = nullptr;  // [n_pairs]
  int64_t n_pairs = 0;              // rope_dim / 2
  float mscale = 1.0f;
  RopeStyle style = RopeStyle::kAdjacentPairs;
};

// inv_freq[i] = freq_base^(−2i/rope_dim), i < rope_dim / 2: plain RoPE, before any scaling.
void RopeBaseFrequencies(float freq_base, int64_t rope_dim, float* inv_freq);

// Rotates the first 2 · n_pairs dims of each head.
//   x: [n_heads, head_dim], modified in place.
void Rope(float* x, int64_t n_heads, int64_t head_dim, const RopeFrequencies& freqs, int64_t position);

// x[i] = exp(x[i] − max) / Σ exp(x[j] − max); x: [n].
void SoftmaxInPlace(float* x, int64_t n);

// out[i] = silu(gate[i]) · up[i] = gate[i] / (1 + exp(−gate[i])) · up[i]; all [n]. out may alias gate.
void SwiGlu(const float* gate, const float* up, int64_t n, float* out);

// out[i] = gelu_tanh(gate[i]) · up[i], gelu_tanh(g) = ½g(1 + tanh(√(2/π)(g + 0.044715g³))); all [n].
// out may alias gate.
void GeGlu(const float* gate, const float* up, int64_t n, float* out);

// out[i] = g·sigmoid(alpha·g)·(u + 1), g = min(gate[i], limit), u = clamp(up[i], −limit, limit):
// gpt-oss's clamped SwiGLU (ggml_swiglu_oai); all [n]. out may alias gate.
void SwigluOai(const float* gate, const float* up, int64_t n, float alpha, float limit, float* out);

// x[i] = cap · tanh(x[i] / cap) for i < n: Gemma 2's soft-capped attention scores and final logits.
void SoftCap(float* x, int64_t n, float cap);

// Attention of one query head over the views' positions [0, n_positions):
//   scores[p] = scale · q·k_p;  with softcap > 0: scores[p] = softcap · tanh(scores[p] / softcap);
//   w = softmax(scores, sink);  out = Σ_p w[p] · v_p
// where softmax(s, sink)[p] = exp(s[p]) / (Σ_j exp(s[j]) + exp(sink)): gpt-oss's
// learned sink, a logit whose weight is dropped (−∞: none, a plain softmax).
// With BF16 keys q is first rounded to BF16 (nearest even), with BF16 values
// the weights w (as llama.cpp's CPU attention rounds q to its keys' type), on
// every target: each product is then exact in FP32, and AVX-512 takes two of
// them an instruction (vdpbf16ps) where FP32 FMAs take one. A weight's
// rounding moves the output by ≤ 2⁻⁹ of its share.
//   q: [head_dim], out: [head_dim], scores: scratch of n_positions floats.
void AttendHead(const float* q, int64_t head_dim, const KvHeadView& k, const KvHeadView& v, int64_t n_positions,
                float scale, float softcap, float sink, float* scores, float* out);

// AttendHead computes a row over more than kAttentionSplitPositions positions
// split by split (kernel_types.h), the splits' partial states merged in order.

// Attention of several rows over one KV head's views (the query heads of a
// grouped-query group, of one token or of a few tokens of one sequence):
// each row's output is bit for bit its own AttendHead call's (rows[r].q,
// rows[r].n_positions, rows[r].sink, written to rows[r].out), but a stretch of
// K and V is read from memory once for every row that needs it, while it is in
// L1, where separate calls read it once per row.
//   scores: scratch of AttentionScoresFloats(rows, n_rows) floats.
void AttendRows(const AttentionRow* rows, int64_t n_rows, int64_t head_dim, const KvHeadView& k, const KvHeadView& v,
                float scale, float softcap, float* scores);

// AttendRows in pieces that may run on different threads, in any order:
// AttendRowsSplit for every split < AttentionSplits(rows, n_rows), then
// MergeAttentionSplits, give every row the bits AttendRows gives it. Split j
// of a split row (over more than kAttentionSplitPositions positions) leaves
// its partial state at states + (j · n_rows + r) · AttentionStateFloats(head_dim);
// split 0 also computes the unsplit rows whole, into their out.
//   states: AttentionSplits(rows, n_rows) · n_rows · AttentionStateFloats(head_dim) floats.
//   scores: scratch of AttentionScoresFloats(rows, n_rows) floats.
void AttendRowsSplit(const AttentionRow* rows, int64_t n_rows, int64_t head_dim, const KvHeadView& k,
                     const KvHeadView& v, float scale, float softcap, int64_t split, float* states, float* scores);
// Merges the split rows' states in split order into their out (softmax over
// every split and the row's sink).
void MergeAttentionSplits(const AttentionRow* rows, int64_t n_rows, int64_t head_dim, const float* states);
// max_r AttentionSplits(rows[r].n_positions) (0 for no rows).
int64_t AttentionSplits(const AttentionRow* rows, int64_t n_rows);
// min(n_rows, kMaxAttentionRows) · min(max_r n_positions_r, kAttentionSplitPositions).
int64_t AttentionScoresFloats(const AttentionRow* rows, int64_t n_rows);

// Stores one head's vector (head_dim floats) into a KV slot of `type`.
void StoreKv(const float* x, int64_t head_dim, GgmlType type, uint8_t* dst);

// Bytes one head of head_dim elements takes in a KV slot of `type`.
int64_t KvHeadBytes(GgmlType type, int64_t head_dim);

// Whether a KV cache of `type` made now should lay its values out by
// dimension (KvHeadView::dim_stride_bytes), as its keys: every target reads
// both layouts, and this says which the active target's values pass takes
// faster. Q8_0 values never are (their scales belong to one position's 32
// elements); AVX-512 keeps them token-major (its BF16 values take the BF16
// dot in position pairs there; values by dimension have not been measured on
// an AVX-512 machine).
bool ValuesByDimension(GgmlType type);

namespace scalar {
void MatMul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool);
void RmsNorm(const float* x, const float* weight, int64_t n, float eps, float* out);
void Rope(float* x, int64_t n_heads, int64_t head_dim, const RopeFrequencies& freqs, int64_t position);
void SoftmaxInPlace(float* x, int64_t n);
void SwiGlu(const float* gate, const float* up, int64_t n, float* out);
void GeGlu(const float* gate, const float* up, int64_t n, float* out);
void SwigluOai(const float* gate, const float* up, int64_t n, float alpha, float limit, float* out);
void SoftCap(float* x, int64_t n, float cap);
void AttendHead(const float* q, int64_t head_dim, const KvHeadView& k, const KvHeadView& v, int64_t n_positions,
                float scale, float softcap, float sink, float* scores, float* out);
// x[i] = exp(x[i] − m) / (Σ_j exp(x[j] − m) + exp(sink − m)), m = max(x, sink); x: [n] (sink −∞: SoftmaxInPlace).
void SoftmaxWithSink(float* x, int64_t n, float sink);
// Split `split` of a row over n_positions > kAttentionSplitPositions: state =
// [m, l, o] with m = max_p s_p, l = Σ_p exp(s_p − m), o = Σ_p exp(s_p − m) · v_p
// over the split's positions p (s_p: AttendHead's scores). scores: scratch of
// kAttentionSplitPositions floats (left holding exp(s_p − m)).
void AttendHeadSplit(const float* q, int64_t head_dim, const KvHeadView& k, const KvHeadView& v, int64_t n_positions,
                     int64_t split, float scale, float softcap, float* scores, float* state);
// out = Σ_j c_j · o_j, c_j = exp(m_j − M) / (Σ_i l_i · exp(m_i − M) + exp(sink − M)),
// M = max(sink, max_j m_j): a split row's result from its n_splits states
// (state j at states + j · state_stride). Every target merges with this.
void MergeSplitStates(const float* states, int64_t n_splits, int64_t state_stride, int64_t head_dim, float sink,
                      float* out);
}  // namespace scalar

}  // namespace ridge::kernels
