#pragma once
// The values pass over values laid out by dimension (KvHeadView::dim_stride_bytes
// on the V view), written against the vector traits V of ops_simd_impl.h (same rules).
#include "ridge/kernels/attention_keys_by_dim_impl.h"

namespace ridge::kernels::internal {
namespace {

// A block holds each head's values as [head_dim, block_tokens], as keys by
// dimension: one vector load reads one dimension of kLanes consecutive
// positions, and a row's softmax weights of those positions are one vector
// load too. So each converted value vector serves every row of a pass with
// one FMA and no broadcast (the token-major pass broadcasts a weight per row
// and position, and on AVX2 converts each value vector once for every 2 rows).
// Row r's sum for dimension c is kept per lane (lane j: position j of every
// group, the groups in order) and its lanes are added at the end by
// ReducePair / ReduceQuad / ReduceQuads: its bits depend on its weights, the
// values and the view's blocks alone, not on the other rows or the pass.

// Rows of a pass, and the dimensions each walk over the groups takes: kR · kD
// sums in registers, up to 8 (a power of two, so kD divides kLanes).
constexpr int kValuesByDimMaxRows = 8;
constexpr int ValuesByDimDims(int rows) { return 8 / rows >= 8 ? 8 : 8 / rows >= 4 ? 4 : 8 / rows >= 2 ? 2 : 1; }

// A pass's weights for the walks over its groups: [group][row][kLanes],
// lane j of (g, r) = w_r[i_g + j] while that is one of row r's positions and
// of group g's, 0 past either end. One pointer with constant offsets for
// every row in the walks (eight row pointers did not stay in registers).
template <typename V, int kR>
void PackValueWeights(const float* const* w, const int64_t* n, const PositionGroup* groups, int64_t n_groups,
                      float* packed) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  int64_t i = 0;
  for (int64_t g = 0; g < n_groups; i += groups[g++].n) {
    for (int r = 0; r < kR; ++r) {
      const int64_t left = n[r] - i, m = left < groups[g].n ? left : groups[g].n;
      const R wr = m == L ? V::Load(w[r] + i) : m > 0 ? V::LoadPartial(w[r] + i, m) : V::Zero();
      V::Store(packed + (g * kR + r) * L, wr);
    }
  }
}

// sums[r][d] (lane j: Σ over the groups of w_r[i + j] · v_{i + j}[c + d], i
// the group's first view index) for kR rows over groups[0, n_groups), which
// cover view indices [0, Σ n) in order, their weights packed by
// PackValueWeights. Row r has n[r] positions; the first whole_groups groups
// (view indices [0, whole_positions)) are the row's every one. A row ending
// inside a later group takes its lanes of it alone, the value vector's
// others zeroed too (0 · ∞ would be NaN: a later position must not reach an
// earlier token's row), and no group past its end.
template <typename V, GgmlType kType, int kR, int kD>
void ValueSumsByDim(const float* packed, const int64_t* n, int64_t whole_groups, int64_t whole_positions,
                    const PositionGroup* groups, int64_t n_groups, int64_t dim_stride, int64_t c,
                    typename V::R (*sums)[kD]) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  R acc[kR][kD];
#pragma GCC unroll 8
  for (int r = 0; r < kR; ++r)
#pragma GCC unroll 8
    for (int d = 0; d < kD; ++d) acc[r][d] = V::Zero();
  int64_t g = 0;
  for (; g < whole_groups; ++g) {
    const PositionGroup& group = groups[g];
    const float* pw = packed + g * kR * L;
    R v[kD];
#pragma GCC unroll 8
    for (int d = 0; d < kD; ++d) v[d] = LoadKv<V, kType>(group.base + (c + d) * dim_stride, 0, group.n);
#pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) {
      const R wr = V::Load(pw + r * L);
#pragma GCC unroll 8
      for (int d = 0; d < kD; ++d) acc[r][d] = V::Fma(v[d], wr, acc[r][d]);
    }
  }
  for (int64_t i = whole_positions; g < n_groups; i += groups[g++].n) {
    const PositionGroup& group = groups[g];
    const float* pw = packed + g * kR * L;
    R v[kD];
#pragma GCC unroll 8
    for (int d = 0; d < kD; ++d) v[d] = LoadKv<V, kType>(group.base + (c + d) * dim_stride, 0, group.n);
    for (int r = 0; r < kR; ++r) {
      const int64_t left = n[r] - i;
      if (left <= 0) continue;
      const R wr = V::Load(pw + r * L);
#pragma GCC unroll 8
      for (int d = 0; d < kD; ++d) acc[r][d] = V::Fma(left < group.n ? V::KeepFirst(v[d], left) : v[d], wr, acc[r][d]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kR; ++r)
#pragma GCC unroll 8
    for (int d = 0; d < kD; ++d) sums[r][d] = acc[r][d];
}

// Lane j of the result = Σ of the lanes of x[j], j < kLanes.
template <typename V>
typename V::R ReduceLanes(const typename V::R* x) {
  typename V::R quads[V::kLanes / 4];
#pragma GCC unroll 4
  for (int j0 = 0; j0 < V::kLanes; j0 += 4)
    quads[j0 / 4] = V::ReduceQuad(V::ReducePair(x[j0], x[j0 + 1]), V::ReducePair(x[j0 + 2], x[j0 + 3]));
  return V::ReduceQuads(quads);
}

// rows[active[r]].out = Σ_p w_r[p] · v_p for exactly kR rows of `active`
// (each with ≥ 1 position) over groups[0, n_groups): kLanes dimensions at a
// time, kD of them a walk over the groups (the last < kD one a walk each).
template <typename V, GgmlType kType, int kR>
void ValuesRowsByDim(const AttentionRow* rows, const int64_t* active, const float* w, int64_t w_stride,
                     const PositionGroup* groups, int64_t n_groups, int64_t head_dim, int64_t dim_stride) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  constexpr int kD = ValuesByDimDims(kR);
  const float* w_rows[kR];
  int64_t n[kR], shortest = rows[active[0]].n_positions;
  for (int r = 0; r < kR; ++r) {
    w_rows[r] = w + active[r] * w_stride;
    n[r] = rows[active[r]].n_positions;
    shortest = n[r] < shortest ? n[r] : shortest;
  }
  thread_local std::vector<float> packed;
  packed.resize(static_cast<size_t>(n_groups * kR * L));
  PackValueWeights<V, kR>(w_rows, n, groups, n_groups, packed.data());
  int64_t whole_groups = 0, whole_positions = 0;
  while (whole_groups < n_groups && whole_positions + groups[whole_groups].n <= shortest)
    whole_positions += groups[whole_groups++].n;
  for (int64_t c0 = 0; c0 < head_dim; c0 += L) {
    const int64_t dims = head_dim - c0 < L ? head_dim - c0 : L;
    R lanes[kR][L];
    int64_t d = 0;
    for (; d + kD <= dims; d += kD) {
      R sums[kR][kD];
      ValueSumsByDim<V, kType, kR, kD>(packed.data(), n, whole_groups, whole_positions, groups, n_groups, dim_stride,
                                       c0 + d, sums);
      for (int r = 0; r < kR; ++r)
        for (int j = 0; j < kD; ++j) lanes[r][d + j] = sums[r][j];
    }
    for (; d < dims; ++d) {
      R sums[kR][1];
      ValueSumsByDim<V, kType, kR, 1>(packed.data(), n, whole_groups, whole_positions, groups, n_groups, dim_stride,
                                      c0 + d, sums);
      for (int r = 0; r < kR; ++r) lanes[r][d] = sums[r][0];
    }
    for (int r = 0; r < kR; ++r) {
      for (int64_t j = dims; j < L; ++j) lanes[r][j] = V::Zero();
      float* out = rows[active[r]].out + c0;
      if (dims == L) {
        V::Store(out, ReduceLanes<V>(lanes[r]));
      } else {
        V::StorePartial(out, dims, ReduceLanes<V>(lanes[r]));
      }
    }
  }
}

// RowsValues over a view of values laid out by dimension: each row's out =
// Σ_p weights_r[p] · v_p (weights_r = w + r · w_stride), zeros for a row of
// no positions; the rows with positions kValuesByDimMaxRows a pass, then the
// rest in one pass of their own count. The groups cover the longest row's
// positions; a pass walks them once for every kD dimensions, the value
// vectors of a call (≤ kAttentionSplitPositions positions a head) staying in L2.
template <typename V, GgmlType kType>
void RowsValuesByDim(const AttentionRow* rows, int64_t n_rows, const float* w, int64_t w_stride,
                     const KvHeadView& v, int64_t head_dim) {
  constexpr int64_t L = V::kLanes;
  int64_t active[kMaxAttentionRows], n_active = 0, longest = 0;
  for (int64_t r = 0; r < n_rows; ++r) {
    const int64_t n = rows[r].n_positions;
    if (n > 0) {
      active[n_active++] = r;
      longest = n > longest ? n : longest;
      continue;
    }
    for (int64_t c = 0; c < head_dim; ++c) rows[r].out[c] = 0.0f;
  }
  thread_local std::vector<PositionGroup> groups;
  groups.clear();
  for (int64_t i = 0; i < longest; i += groups.back().n) groups.push_back(GroupAt<L>(v, i, longest));
  const auto n_groups = static_cast<int64_t>(groups.size());
  const int64_t* next = active;
  for (; n_active >= kValuesByDimMaxRows; n_active -= kValuesByDimMaxRows, next += kValuesByDimMaxRows)
    ValuesRowsByDim<V, kType, kValuesByDimMaxRows>(rows, next, w, w_stride, groups.data(), n_groups, head_dim,
                                                   v.dim_stride_bytes);
  if (n_active > 0) {
    WithRowCount<kValuesByDimMaxRows - 1>(n_active, [&](auto rows_tag) {
      ValuesRowsByDim<V, kType, decltype(rows_tag)::value>(rows, next, w, w_stride, groups.data(), n_groups, head_dim,
                                                          v.dim_stride_bytes);
    });
  }
}

}  // namespace
}  // namespace ridge::kernels::internal
