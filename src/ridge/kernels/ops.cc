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
    case Isa::kAmx:
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
  if (!ops) return scalar::Rope(x, n_heads, head_dim, freqs, position);
  RIDGE_CHECK(freqs.n_pairs >= 0 && 2 * freqs.n_pairs <= head_dim);
  // The angles exactly as the scalar twin computes them, once for all heads,
  // and kept for the next call with the same position, table values and
  // mscale on this thread (a token's keys after its queries): the sines and
  // cosines had been ~1/3 of RoPE's time.
  thread_local std::vector<float> cos, sin, last_inv_freq;
  thread_local int64_t last_position = -1;
  thread_local float last_mscale = 0.0f;
  const size_t n = static_cast<size_t>(freqs.n_pairs);
  if (position != last_position || freqs.mscale != last_mscale || n != last_inv_freq.size() ||
      !std::equal(last_inv_freq.begin(), last_inv_freq.end(), freqs.inv_freq)) {
    cos.resize(n);
    sin.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const float angle = static_cast<float>(position) * freqs.inv_freq[i];
      cos[i] = std::cos(angle) * freqs.mscale;
      sin[i] = std::sin(angle) * freqs.mscale;
    }
    last_inv_freq.assign(freqs.inv_freq, freqs.inv_freq + n);
    last_position = position;
    last_mscale = freqs.mscale;
  }
  const auto rotate = freqs.style == RopeStyle::kAdjacentPairs ? ops->rotate_pairs : ops->rotate_halves;
  rotate(x, n_heads, head_dim, 2 * freqs.n_pairs, cos.data(), sin.data());
}

void SoftmaxInPlace(float* x, int64_t n) {
  if (const auto* ops = ActiveOps()) return ops->softmax(x, n, -std::numeric_limits<float>::infinity());
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
  if (const auto* ops = ActiveOps()) return ops->swiglu_oai(gate, up, n, alpha, limit, out);
  scalar::SwigluOai(gate, up, n, alpha, limit, out);
}

void SoftCap(float* x, int64_t n, float cap) {
  if (const auto* ops = ActiveOps()) return ops->soft_cap(x, n, cap);
  scalar::SoftCap(x, n, cap);
}

void AttendHead(const float* q, int64_t head_dim, const KvHeadView& k, const KvHeadView& v, int64_t n_positions,
                float scale, float softcap, float sink, float* scores, float* out) {
  const AttentionRow row{q, out, n_positions, sink};
  AttendRows(&row, 1, head_dim, k, v, scale, softcap, scores);
}

namespace {

// The view from `first` positions further on.
KvHeadView From(const KvHeadView& view, int64_t first) {
  KvHeadView shifted = view;
  shifted.first_position += first;
  return shifted;
}

// Split `split` of n <= kMaxAttentionRows rows, part[0] being row r_base of
// a call of n_rows (whose states are laid out by that call's row index).
void AttendPartSplit(const AttentionRow* part, int64_t n, int64_t r_base, int64_t n_rows, int64_t head_dim,
                     const KvHeadView& k, const KvHeadView& v, float scale, float softcap, int64_t split,
                     float* states, float* scores) {
  const int64_t p0 = split * kAttentionSplitPositions;
  AttentionRow sub[kMaxAttentionRows];  // the rows with positions in this split, on them alone
  float* state[kMaxAttentionRows];      // their partial states (nullptr: an unsplit row, computed whole)
  const AttentionRow* source[kMaxAttentionRows];
  int64_t m = 0, stride = 0;            // scores of sub-row i at scores + i · stride
  for (int64_t r = 0; r < n; ++r) {
    const AttentionRow& row = part[r];
    if (AttentionSplits(row.n_positions) == 1) {
      if (split != 0) continue;
      sub[m] = row;
      state[m] = nullptr;
    } else {
      if (row.n_positions <= p0) continue;
      state[m] = states + (split * n_rows + r_base + r) * AttentionStateFloats(head_dim);
      sub[m] = {row.q, state[m] + 2, std::min(kAttentionSplitPositions, row.n_positions - p0), row.sink};
    }
    source[m] = &row;
    stride = std::max(stride, sub[m++].n_positions);
  }
  if (m == 0) return;
  const KvHeadView k_split = From(k, p0), v_split = From(v, p0);
  if (const auto* ops = ActiveOps(); ops && ops->rows_scores(sub, m, head_dim, k_split, scale, scores, stride)) {
    for (int64_t i = 0; i < m; ++i) {
      float* s = scores + i * stride;
      const int64_t n_positions = sub[i].n_positions;
      if (softcap > 0.0f) ops->soft_cap(s, n_positions, softcap);
      if (state[i] != nullptr) {
        ops->softmax_partial(s, n_positions, &state[i][0], &state[i][1]);
      } else {
        ops->softmax(s, n_positions, sub[i].sink);
      }
    }
    if (ops->rows_values(sub, m, scores, stride, v_split, head_dim)) return;
  }
  for (int64_t i = 0; i < m; ++i) {  // the scalar target, or a KV type without vector kernels
    const AttentionRow& row = *source[i];
    if (state[i] != nullptr) {
      scalar::AttendHeadSplit(row.q, head_dim, k, v, row.n_positions, split, scale, softcap, scores, state[i]);
    } else {
      scalar::AttendHead(row.q, head_dim, k, v, row.n_positions, scale, softcap, row.sink, scores, row.out);
    }
  }
}

}  // namespace

int64_t AttentionSplits(const AttentionRow* rows, int64_t n_rows) {
  int64_t n = 0;
  for (int64_t r = 0; r < n_rows; ++r) n = std::max(n, AttentionSplits(rows[r].n_positions));
  return n;
}

int64_t AttentionScoresFloats(const AttentionRow* rows, int64_t n_rows) {
  int64_t longest = 0;
  for (int64_t r = 0; r < n_rows; ++r) longest = std::max(longest, rows[r].n_positions);
  return std::min(n_rows, kMaxAttentionRows) * std::min(longest, kAttentionSplitPositions);
}

void AttendRowsSplit(const AttentionRow* rows, int64_t n_rows, int64_t head_dim, const KvHeadView& k,
                     const KvHeadView& v, float scale, float softcap, int64_t split, float* states, float* scores) {
  for (int64_t r0 = 0; r0 < n_rows; r0 += kMaxAttentionRows)
    AttendPartSplit(rows + r0, std::min(kMaxAttentionRows, n_rows - r0), r0, n_rows, head_dim, k, v, scale, softcap,
                    split, states, scores);
}

void MergeAttentionSplits(const AttentionRow* rows, int64_t n_rows, int64_t head_dim, const float* states) {
  const int64_t stride = AttentionStateFloats(head_dim);
  for (int64_t r = 0; r < n_rows; ++r)
    if (const int64_t n_splits = AttentionSplits(rows[r].n_positions); n_splits > 1)
      scalar::MergeSplitStates(states + r * stride, n_splits, n_rows * stride, head_dim, rows[r].sink, rows[r].out);
}

void AttendRows(const AttentionRow* rows, int64_t n_rows, int64_t head_dim, const KvHeadView& k, const KvHeadView& v,
                float scale, float softcap, float* scores) {
  const int64_t n_splits = AttentionSplits(rows, n_rows);
  thread_local std::vector<float> states;
  states.resize(static_cast<size_t>(n_splits > 1 ? n_splits * n_rows * AttentionStateFloats(head_dim) : 0));
  for (int64_t j = 0; j < n_splits; ++j)
    AttendRowsSplit(rows, n_rows, head_dim, k, v, scale, softcap, j, states.data(), scores);
  if (n_splits > 1) MergeAttentionSplits(rows, n_rows, head_dim, states.data());
}

void StoreKv(const float* x, int64_t head_dim, GgmlType type, uint8_t* dst) {
  if (const auto* ops = ActiveOps()) {
    if (ops->store_kv(x, head_dim, type, dst)) return;
  }
  QuantizeRow(type, x, dst, head_dim);
}

int64_t KvHeadBytes(GgmlType type, int64_t head_dim) { return RowBytes(type, head_dim); }

bool ValuesByDimension(GgmlType type) {
  if (type == GgmlType::kQ8_0) return false;
  switch (ActiveIsa()) {
    case Isa::kAmx:
    case Isa::kAvx512: return false;
    case Isa::kAvx2:
    case Isa::kScalar: return true;
  }
  return false;
}

}  // namespace ridge::kernels
