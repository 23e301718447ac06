#pragma once
// Plain views the kernels take (no threads, no allocation): kept apart from
// ops.h so that the per-ISA files can include them alone.
#include <cstdint>
#include <limits>

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
  // The rows are repacked into weight panels (kernels/weight_panels.h; see
  // RepackInPlace): the same bytes, not the file's layout. Only MatMul,
  // MatMulGroup and UnpackPanels may read them.
  bool panels = false;
};

// Cached keys or values of one KV head, possibly spread over fixed-size blocks
// (paged KV cache; blocks[b] points at this head's part of block b). Cache
// position p lives in blocks[p / block_tokens] at byte
// (p % block_tokens) · token_stride_bytes, as head_dim elements of `type`
// (F32, F16, BF16 or Q8_0): one after the other (dim_stride_bytes = 0), or
// element c dim_stride_bytes · c further on (F32, F16, BF16: a head's part
// of a block as [head_dim, block_tokens], the layout of PagedKvCache's keys,
// so that one vector load reads a dimension of consecutive positions). The view's position i is cache position
// first_position + i (a sliding window starts past 0).
struct KvHeadView {
  GgmlType type = GgmlType::kF16;
  const uint8_t* const* blocks = nullptr;
  int64_t block_tokens = 0;
  int64_t token_stride_bytes = 0;
  int64_t first_position = 0;
  int64_t dim_stride_bytes = 0;
};

// One row of attention: a query head of one token over positions
// [0, n_positions) of a KV head's views (the views shared by every row of a
// kernels::AttendRows call).
struct AttentionRow {
  const float* q = nullptr;  // [head_dim]
  float* out = nullptr;      // [head_dim]
  int64_t n_positions = 0;
  float sink = -std::numeric_limits<float>::infinity();  // gpt-oss's learned sink (−∞: none)
};

// Rows the vector attention kernels take in one pass over K and V (more go
// in parts of this many).
constexpr int64_t kMaxAttentionRows = 16;

// Tokens of a prompt whose rows share one pass over a KV head that serves
// `group` query heads (each token brings `group` rows): the model's tiling of
// a step's tokens for attention.
constexpr int64_t AttentionTileTokens(int64_t group) {
  return group >= kMaxAttentionRows ? 1 : kMaxAttentionRows / group;
}

// A row over more than kAttentionSplitPositions positions is attended in
// splits, positions [j·S, (j + 1)·S) of its view (S = kAttentionSplitPositions):
// each split's unnormalized softmax gives a partial state (max score, Σ exp,
// Σ exp · v), and the states are merged in split order (flash-decoding). The
// bounds depend on nothing but the row's own positions, so a split may run on
// any thread (decode spreads one KV head's positions over all of them) and a
// row's bits stay the same whatever the batch, the tiling or the thread count.
// A multiple of the kernels' 128-position stretches and of every vector width.
constexpr int64_t kAttentionSplitPositions = 256;

// The splits of a row over n_positions: 1 (unsplit, a plain softmax) up to S.
constexpr int64_t AttentionSplits(int64_t n_positions) {
  return n_positions <= kAttentionSplitPositions
             ? 1
             : (n_positions + kAttentionSplitPositions - 1) / kAttentionSplitPositions;
}

// Floats of one partial state: [max score, Σ exp(score − max), Σ exp(score − max) · v (head_dim)].
constexpr int64_t AttentionStateFloats(int64_t head_dim) { return head_dim + 2; }

}  // namespace ridge::kernels
