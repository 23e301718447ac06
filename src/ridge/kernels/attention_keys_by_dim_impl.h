#pragma once
// The scores pass over keys laid out by dimension (KvHeadView::dim_stride_bytes),
// written against the vector traits V of ops_simd_impl.h (same rules).
#include "ridge/kernels/attention_simd_impl.h"

namespace ridge::kernels::internal {
namespace {

// A block holds each head's keys as [head_dim, block_tokens]: one vector load
// reads one dimension of kLanes consecutive positions, and each row's dots
// come out in lanes with no reduction across them (the token-major layout
// of attention_simd_impl.h needs ~3 shuffles and adds per row and position for that).

// Up to kLanes consecutive positions of one block: the address of their
// element 0 and how many. (Values laid out by dimension are walked in the
// same groups: attention_values_by_dim_impl.h.)
struct PositionGroup {
  const uint8_t* base = nullptr;
  int64_t n = 0;
};

// The group of a view laid out by dimension that starts at view index i
// (< end): the positions from i to the end of i's block, at most kLanes,
// cut at end. Where groups start depends on the view and i alone, not on end.
template <int64_t kLanes>
PositionGroup GroupAt(const KvHeadView& view, int64_t i, int64_t end) {
  const int64_t p = view.first_position + i, bt = view.block_tokens, slot = p % bt;
  int64_t n = bt - slot < kLanes ? bt - slot : kLanes;
  n = end - i < n ? end - i : n;
  return {view.blocks[p / bt] + slot * view.token_stride_bytes, n};
}

// How many chains a row's sum over dimensions runs in on V: dimension c goes
// into chain c % kByDimChains, the chains added at the end. AVX-512's 32
// registers hold two chains for each of 8 rows. AVX2's 16 hold one for each
// of 8 rows: one key vector converted for 8 FMAs, where two chains of 4 rows
// converted it for 4 (on a Zen 1, attention at 3, 8 and 15 rows per KV head
// ran 6-10 % faster; the broadcasts of q were not what held it back: q put
// into memory broadcast once, as FMA operands, ran no faster).
template <typename V>
constexpr int kByDimChains = V::kLanes == 16 ? 2 : 1;

// dots[g][r] = q_r·k_p for the positions p of group g (lane j: its position
// j), kR rows × kG groups, each dimension of a group one load shared by every
// row. A row sums over c in kByDimChains chains: its bits depend on its q and
// the keys alone, not on kR, kG or the grouping. kWhole: every group holds
// kLanes positions, so every load is a whole vector (with a branch per load
// GCC kept the sums on the stack, a store per FMA: decode at depth ran its
// scores at ~1/3 of the FP32 peak).
template <typename V, GgmlType kKType, int kR, int kG, bool kWhole>
void DotsByDim(const float* const* q, int64_t head_dim, int64_t dim_stride, const PositionGroup* groups,
               typename V::R (*dots)[kR]) {
  using R = typename V::R;
  constexpr int kC = kByDimChains<V>;
  R sums[kC][kG][kR];
#pragma GCC unroll 2
  for (int ch = 0; ch < kC; ++ch)
#pragma GCC unroll 4
    for (int g = 0; g < kG; ++g)
#pragma GCC unroll 8
      for (int r = 0; r < kR; ++r) sums[ch][g][r] = V::Zero();
  int64_t c = 0;
  for (; c + kC <= head_dim; c += kC) {
#pragma GCC unroll 2
    for (int ch = 0; ch < kC; ++ch) {
#pragma GCC unroll 4
      for (int g = 0; g < kG; ++g) {
        const R k = LoadKv<V, kKType>(groups[g].base + (c + ch) * dim_stride, 0, kWhole ? V::kLanes : groups[g].n);
#pragma GCC unroll 8
        for (int r = 0; r < kR; ++r) sums[ch][g][r] = V::Fma(k, V::Set1(q[r][c + ch]), sums[ch][g][r]);
      }
    }
  }
  for (int ch = 0; c < head_dim; ++c, ++ch) {  // fewer than kC dimensions left
#pragma GCC unroll 4
    for (int g = 0; g < kG; ++g) {
      const R k = LoadKv<V, kKType>(groups[g].base + c * dim_stride, 0, kWhole ? V::kLanes : groups[g].n);
#pragma GCC unroll 8
      for (int r = 0; r < kR; ++r) sums[ch][g][r] = V::Fma(k, V::Set1(q[r][c]), sums[ch][g][r]);
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < kG; ++g)
#pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) {
      dots[g][r] = sums[0][g][r];
#pragma GCC unroll 2
      for (int ch = 1; ch < kC; ++ch) dots[g][r] = V::Add(dots[g][r], sums[ch][g][r]);
    }
}

// Whether BF16 keys take the BF16 dot on V (DotsByDimPairs) instead of FP32 FMAs.
template <typename V, GgmlType kKType>
constexpr bool kPairsDot = kKType == GgmlType::kBF16 && V::kBf16Dot;

// DotsByDim for BF16 keys on a V with the BF16 dot: one instruction per row
// takes two dimensions (c, c + 1) of a group, their key rows interleaved into
// pairs once for every row. q_pairs[r][i] holds q_r[2i] (low half) and
// q_r[2i + 1] as bf16 (high half 0 past an odd head_dim). A row sums pairs
// i ≡ 0 and i ≡ 1 (mod 2) in two chains, added at the end: its bits depend on
// its q and the keys alone, not on kR, kG or the grouping. kWhole: as
// DotsByDim's.
template <typename V, int kR, int kG, bool kWhole>
void DotsByDimPairs(const uint32_t* const* q_pairs, int64_t head_dim, int64_t dim_stride, const PositionGroup* groups,
                    typename V::R (*dots)[kR]) {
  using R = typename V::R;
  R even[kG][kR], odd[kG][kR];
#pragma GCC unroll 4
  for (int g = 0; g < kG; ++g)
#pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) even[g][r] = odd[g][r] = V::Zero();
  int64_t i = 0;
  for (; 2 * i + 4 <= head_dim; i += 2) {
#pragma GCC unroll 4
    for (int g = 0; g < kG; ++g) {
      const uint8_t* row = groups[g].base + 2 * i * dim_stride;
      const auto k0 = V::LoadBf16Pairs(row, row + dim_stride, kWhole ? V::kLanes : groups[g].n);
      const auto k1 = V::LoadBf16Pairs(row + 2 * dim_stride, row + 3 * dim_stride, kWhole ? V::kLanes : groups[g].n);
#pragma GCC unroll 8
      for (int r = 0; r < kR; ++r) {
        even[g][r] = V::DotPairs(even[g][r], k0, q_pairs[r][i]);
        odd[g][r] = V::DotPairs(odd[g][r], k1, q_pairs[r][i + 1]);
      }
    }
  }
  // ≤ 3 dimensions left: a pair (i even: the even chain), then maybe a half
  // pair (its high half 0) into the chain of its index.
  if (2 * i + 2 <= head_dim) {
#pragma GCC unroll 4
    for (int g = 0; g < kG; ++g) {
      const uint8_t* row = groups[g].base + 2 * i * dim_stride;
      const auto k = V::LoadBf16Pairs(row, row + dim_stride, kWhole ? V::kLanes : groups[g].n);
#pragma GCC unroll 8
      for (int r = 0; r < kR; ++r) even[g][r] = V::DotPairs(even[g][r], k, q_pairs[r][i]);
    }
    ++i;
  }
  if (2 * i < head_dim) {
    const bool into_odd = i % 2 == 1;
#pragma GCC unroll 4
    for (int g = 0; g < kG; ++g) {
      const auto k = V::LoadBf16Pairs(groups[g].base + 2 * i * dim_stride, nullptr, kWhole ? V::kLanes : groups[g].n);
#pragma GCC unroll 8
      for (int r = 0; r < kR; ++r) {
        if (into_odd) {
          odd[g][r] = V::DotPairs(odd[g][r], k, q_pairs[r][i]);
        } else {
          even[g][r] = V::DotPairs(even[g][r], k, q_pairs[r][i]);
        }
      }
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < kG; ++g)
#pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) dots[g][r] = V::Add(even[g][r], odd[g][r]);
}

// Rows per pass of DotsByDim, and groups side by side for fewer rows: their
// kByDimChains·kR·kG sums in registers (32 on AVX-512, 16 on AVX2), ≥ 8
// chains where the rows allow, to hide the FMA latency.
constexpr int kByDimMaxRows = 8;
template <typename V>
constexpr int ByDimGroups(int rows) {
  if constexpr (kByDimChains<V> == 1) return rows <= 2 ? 4 : rows <= 4 ? 2 : 1;
  return rows == 1 ? 4 : rows <= 3 ? 2 : 1;
}

// scores[r·stride + i] = scale · dots for rows [r0, r0 + kR) of `active`
// (rows of the call) over groups[0, kG) starting at view position i0 (each
// row takes the lanes of its own positions). q_pairs (kPairsDot only): row
// r's q as bf16 pairs at r · ⌈head_dim / 2⌉.
template <typename V, GgmlType kKType, int kR, int kG>
void ScoresPassByDim(const AttentionRow* rows, const int64_t* active, int64_t head_dim, int64_t dim_stride,
                     const PositionGroup* groups, const uint32_t* q_pairs, int64_t i0, float scale, float* scores,
                     int64_t stride) {
  using R = typename V::R;
  R dots[kG][kR];
  auto dots_of = [&](auto whole_tag) {
    constexpr bool kWhole = decltype(whole_tag)::value;
    if constexpr (kPairsDot<V, kKType>) {
      const uint32_t* q[kR];
      for (int r = 0; r < kR; ++r) q[r] = q_pairs + active[r] * ((head_dim + 1) / 2);
      DotsByDimPairs<V, kR, kG, kWhole>(q, head_dim, dim_stride, groups, dots);
    } else {
      const float* q[kR];
      for (int r = 0; r < kR; ++r) q[r] = rows[active[r]].q;
      DotsByDim<V, kKType, kR, kG, kWhole>(q, head_dim, dim_stride, groups, dots);
    }
  };
  bool whole = true;
  for (int g = 0; g < kG; ++g) whole = whole && groups[g].n == V::kLanes;
  if (whole) {
    dots_of(std::true_type{});
  } else {
    dots_of(std::false_type{});
  }
  const R vscale = V::Set1(scale);
  int64_t i = i0;
  for (int g = 0; g < kG; ++g) {
    for (int r = 0; r < kR; ++r) {
      const int64_t left = rows[active[r]].n_positions - i;
      const int64_t n = left < groups[g].n ? left : groups[g].n;
      float* out = scores + active[r] * stride + i;
      if (n == V::kLanes) {
        V::Store(out, V::Mul(dots[g][r], vscale));
      } else if (n > 0) {
        V::StorePartial(out, n, V::Mul(dots[g][r], vscale));
      }
    }
    i += groups[g].n;
  }
}

// Exactly kR rows of `active` over groups[0, n_groups), ByDimGroups(kR) groups a pass.
template <typename V, GgmlType kKType, int kR>
void ScoresRowsByDim(const AttentionRow* rows, const int64_t* active, int64_t head_dim, int64_t dim_stride,
                     const PositionGroup* groups, int64_t n_groups, const uint32_t* q_pairs, int64_t i0, float scale,
                     float* scores, int64_t stride) {
  constexpr int kG = ByDimGroups<V>(kR);
  int64_t g = 0, i = i0;
  for (; g + kG <= n_groups; g += kG) {
    ScoresPassByDim<V, kKType, kR, kG>(rows, active, head_dim, dim_stride, groups + g, q_pairs, i, scale, scores,
                                       stride);
    for (int j = 0; j < kG; ++j) i += groups[g + j].n;
  }
  for (; g < n_groups; i += groups[g++].n)
    ScoresPassByDim<V, kKType, kR, 1>(rows, active, head_dim, dim_stride, groups + g, q_pairs, i, scale, scores,
                                      stride);
}

// The rows [0, n) of `active` over groups[0, n_groups): kByDimMaxRows a
// pass, then the rest in one pass of their own count (1 .. kByDimMaxRows - 1).
template <typename V, GgmlType kKType>
void ScoresGroupsByDim(const AttentionRow* rows, const int64_t* active, int64_t n, int64_t head_dim,
                       int64_t dim_stride, const PositionGroup* groups, int64_t n_groups, const uint32_t* q_pairs,
                       int64_t i0, float scale, float* scores, int64_t stride) {
  for (; n >= kByDimMaxRows; n -= kByDimMaxRows, active += kByDimMaxRows)
    ScoresRowsByDim<V, kKType, kByDimMaxRows>(rows, active, head_dim, dim_stride, groups, n_groups, q_pairs, i0, scale,
                                              scores, stride);
  if (n > 0) {
    WithRowCount<kByDimMaxRows - 1>(n, [&](auto rows_tag) {
      ScoresRowsByDim<V, kKType, decltype(rows_tag)::value>(rows, active, head_dim, dim_stride, groups, n_groups,
                                                            q_pairs, i0, scale, scores, stride);
    });
  }
}

// RowsScores over a view of keys laid out by dimension (q_pairs: each row's q
// as bf16 pairs, for kPairsDot only): up to 4 groups of
// consecutive positions at a time (a block, or its part in the view), every
// row that has positions in them taking them while they are in L1. No
// software prefetch: a head's blocks are one stretch of the cache
// (PagedKvCache), which the hardware prefetchers follow; prefetching each
// block 64 positions ahead made decode at depth 4096 2-3 % slower a step on a
// Zen 5 (level with the AVX2 kernels there).
template <typename V, GgmlType kKType>
void RowsScoresByDim(const AttentionRow* rows, int64_t n_rows, int64_t head_dim, const KvHeadView& k,
                     const uint32_t* q_pairs, float scale, float* scores, int64_t stride) {
  constexpr int64_t L = V::kLanes, kMaxGroups = 4;
  int64_t longest = 0;
  for (int64_t r = 0; r < n_rows; ++r) longest = rows[r].n_positions > longest ? rows[r].n_positions : longest;
  for (int64_t i0 = 0; i0 < longest;) {
    PositionGroup groups[kMaxGroups];
    int64_t n_groups = 0, i = i0;
    for (; n_groups < kMaxGroups && i < longest; ++n_groups) {
      groups[n_groups] = GroupAt<L>(k, i, longest);
      i += groups[n_groups].n;
    }
    // The rows with positions in the first group; those ending inside these groups take their lanes only.
    int64_t active[kMaxAttentionRows], n_active = 0;
    bool all_cover = true;
    for (int64_t r = 0; r < n_rows; ++r) {
      if (rows[r].n_positions <= i0) continue;
      active[n_active++] = r;
      all_cover = all_cover && rows[r].n_positions >= i;
    }
    if (all_cover) {
      ScoresGroupsByDim<V, kKType>(rows, active, n_active, head_dim, k.dim_stride_bytes, groups, n_groups, q_pairs,
                                   i0, scale, scores, stride);
    } else {  // rows ending in these groups: one group at a time, each with the rows that reach it
      int64_t g0 = i0;
      for (int64_t g = 0; g < n_groups; g0 += groups[g++].n) {
        int64_t reach[kMaxAttentionRows], n_reach = 0;
        for (int64_t a = 0; a < n_active; ++a)
          if (rows[active[a]].n_positions > g0) reach[n_reach++] = active[a];
        ScoresGroupsByDim<V, kKType>(rows, reach, n_reach, head_dim, k.dim_stride_bytes, groups + g, 1, q_pairs,
                                     g0, scale, scores, stride);
      }
    }
    i0 = i;
  }
}

}  // namespace
}  // namespace ridge::kernels::internal
