#pragma once
// The scores pass over keys laid out by dimension (KvHeadView::dim_stride_bytes),
// written against the vector traits V of ops_simd_impl.h (same rules).
#include <type_traits>

#include "ridge/kernels/attention_simd_impl.h"

namespace ridge::kernels::internal {
namespace {

// A block holds each head's keys as [head_dim, block_tokens]: one vector load
// reads one dimension of kLanes consecutive positions, and each row's dots
// come out in lanes with no reduction across them (the token-major layout
// of attention_simd_impl.h needs ~3 shuffles and adds per row and position for that).

// Up to kLanes consecutive positions of one block: the address of their
// element 0 and how many.
struct KeyGroup {
  const uint8_t* base = nullptr;
  int64_t n = 0;
};

// dots[g][r] = q_r·k_p for the positions p of group g (lane j: its position
// j), kR rows × kG groups, each dimension of a group one load shared by every
// row. A row sums over c in two chains, even and odd c, added at the end: its
// bits depend on its q and the keys alone, not on kR, kG or the grouping.
template <typename V, GgmlType kKType, int kR, int kG>
void DotsByDim(const float* const* q, int64_t head_dim, int64_t dim_stride, const KeyGroup* groups,
               typename V::R (*dots)[kR]) {
  using R = typename V::R;
  R even[kG][kR], odd[kG][kR];
#pragma GCC unroll 4
  for (int g = 0; g < kG; ++g)
#pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) even[g][r] = odd[g][r] = V::Zero();
  int64_t c = 0;
  for (; c + 2 <= head_dim; c += 2) {
#pragma GCC unroll 4
    for (int g = 0; g < kG; ++g) {
      const R k0 = LoadKv<V, kKType>(groups[g].base + c * dim_stride, 0, groups[g].n);
      const R k1 = LoadKv<V, kKType>(groups[g].base + (c + 1) * dim_stride, 0, groups[g].n);
#pragma GCC unroll 8
      for (int r = 0; r < kR; ++r) {
        even[g][r] = V::Fma(k0, V::Set1(q[r][c]), even[g][r]);
        odd[g][r] = V::Fma(k1, V::Set1(q[r][c + 1]), odd[g][r]);
      }
    }
  }
  if (c < head_dim) {
#pragma GCC unroll 4
    for (int g = 0; g < kG; ++g) {
      const R k0 = LoadKv<V, kKType>(groups[g].base + c * dim_stride, 0, groups[g].n);
#pragma GCC unroll 8
      for (int r = 0; r < kR; ++r) even[g][r] = V::Fma(k0, V::Set1(q[r][c]), even[g][r]);
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < kG; ++g)
#pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) dots[g][r] = V::Add(even[g][r], odd[g][r]);
}

// Rows per pass of DotsByDim: their 2·kR·kG sums in registers (32 on
// AVX-512, 16 on AVX2), with kG groups side by side when there are few rows,
// so that ≥ 8 chains hide the FMA latency.
template <typename V>
constexpr int kByDimMaxRows = V::kLanes == 16 ? 8 : 4;
constexpr int ByDimGroups(int rows) { return rows == 1 ? 4 : rows <= 3 ? 2 : 1; }

// scores[r·stride + i] = scale · dots for rows [r0, r0 + kR) of `active`
// (rows of the call) over groups[0, kG) starting at view position i0 (each
// row takes the lanes of its own positions).
template <typename V, GgmlType kKType, int kR, int kG>
void ScoresPassByDim(const AttentionRow* rows, const int64_t* active, int64_t head_dim, int64_t dim_stride,
                     const KeyGroup* groups, int64_t i0, float scale, float* scores, int64_t stride) {
  using R = typename V::R;
  const float* q[kR];
  for (int r = 0; r < kR; ++r) q[r] = rows[active[r]].q;
  R dots[kG][kR];
  DotsByDim<V, kKType, kR, kG>(q, head_dim, dim_stride, groups, dots);
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
                     const KeyGroup* groups, int64_t n_groups, int64_t i0, float scale, float* scores,
                     int64_t stride) {
  constexpr int kG = ByDimGroups(kR);
  int64_t g = 0, i = i0;
  for (; g + kG <= n_groups; g += kG) {
    ScoresPassByDim<V, kKType, kR, kG>(rows, active, head_dim, dim_stride, groups + g, i, scale, scores, stride);
    for (int j = 0; j < kG; ++j) i += groups[g + j].n;
  }
  for (; g < n_groups; i += groups[g++].n)
    ScoresPassByDim<V, kKType, kR, 1>(rows, active, head_dim, dim_stride, groups + g, i, scale, scores, stride);
}

// The rows [0, n) of `active` over groups[0, n_groups): kByDimMaxRows a
// pass, then the rest in one pass of their own count (1 .. kByDimMaxRows - 1).
template <typename V, GgmlType kKType>
void ScoresGroupsByDim(const AttentionRow* rows, const int64_t* active, int64_t n, int64_t head_dim,
                       int64_t dim_stride, const KeyGroup* groups, int64_t n_groups, int64_t i0, float scale,
                       float* scores, int64_t stride) {
  constexpr int kMax = kByDimMaxRows<V>;
  for (; n >= kMax; n -= kMax, active += kMax)
    ScoresRowsByDim<V, kKType, kMax>(rows, active, head_dim, dim_stride, groups, n_groups, i0, scale, scores, stride);
  auto rest = [&](auto rows_tag) {
    ScoresRowsByDim<V, kKType, decltype(rows_tag)::value>(rows, active, head_dim, dim_stride, groups, n_groups, i0,
                                                          scale, scores, stride);
  };
  switch (n) {
    case 0: break;
    case 1: rest(std::integral_constant<int, 1>{}); break;
    case 2: rest(std::integral_constant<int, 2>{}); break;
    case 3: rest(std::integral_constant<int, 3>{}); break;
    default:
      if constexpr (kMax > 4) {
        switch (n) {
          case 4: rest(std::integral_constant<int, 4>{}); break;
          case 5: rest(std::integral_constant<int, 5>{}); break;
          case 6: rest(std::integral_constant<int, 6>{}); break;
          default: rest(std::integral_constant<int, 7>{}); break;
        }
      }
  }
}

// How far ahead of a group its keys' blocks are prefetched: past the groups
// of one pass (4 × 16 positions on AVX-512).
constexpr int64_t kKeyPrefetchPositions = 64;

// RowsScores over a view of keys laid out by dimension: up to 4 groups of
// consecutive positions at a time (a block, or its part in the view), every
// row that has positions in them taking them while they are in L1, the blocks
// kKeyPrefetchPositions ahead prefetched (a block's head is one run of
// head_dim · block_tokens elements).
template <typename V, GgmlType kKType>
void RowsScoresByDim(const AttentionRow* rows, int64_t n_rows, int64_t head_dim, const KvHeadView& k, float scale,
                     float* scores, int64_t stride) {
  constexpr int64_t L = V::kLanes, kMaxGroups = 4;
  int64_t longest = 0;
  for (int64_t r = 0; r < n_rows; ++r) longest = rows[r].n_positions > longest ? rows[r].n_positions : longest;
  const int64_t bt = k.block_tokens, head_run_bytes = head_dim * k.dim_stride_bytes;
  for (int64_t i0 = 0; i0 < longest;) {
    KeyGroup groups[kMaxGroups];
    int64_t n_groups = 0, i = i0;
    for (; n_groups < kMaxGroups && i < longest; ++n_groups) {
      const int64_t p = k.first_position + i, slot = p % bt;
      int64_t n = bt - slot < L ? bt - slot : L;
      n = longest - i < n ? longest - i : n;
      groups[n_groups] = {k.blocks[p / bt] + k.head_offset_bytes + slot * k.token_stride_bytes, n};
      // A group starting a block prefetches the block kKeyPrefetchPositions
      // on, if the view reaches it (the table may end with the view).
      if (const int64_t ahead = i + kKeyPrefetchPositions; slot == 0 && ahead < longest) {
        const char* block =
            reinterpret_cast<const char*>(k.blocks[(k.first_position + ahead) / bt] + k.head_offset_bytes);
#pragma GCC unroll 1
        for (int64_t b = 0; b < head_run_bytes; b += 64) __builtin_prefetch(block + b, 0, 3);
      }
      i += n;
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
      ScoresGroupsByDim<V, kKType>(rows, active, n_active, head_dim, k.dim_stride_bytes, groups, n_groups, i0, scale,
                                   scores, stride);
    } else {  // rows ending in these groups: one group at a time, each with the rows that reach it
      int64_t g0 = i0;
      for (int64_t g = 0; g < n_groups; g0 += groups[g++].n) {
        int64_t reach[kMaxAttentionRows], n_reach = 0;
        for (int64_t a = 0; a < n_active; ++a)
          if (rows[active[a]].n_positions > g0) reach[n_reach++] = active[a];
        ScoresGroupsByDim<V, kKType>(rows, reach, n_reach, head_dim, k.dim_stride_bytes, groups + g, 1, g0, scale,
                                     scores, stride);
      }
    }
    i0 = i;
  }
}

}  // namespace
}  // namespace ridge::kernels::internal
