#pragma once
// Attention over a paged KV head, written once against the vector traits V of
// ops_simd_impl.h (same rules: include only from *_avx2.cc / *_avx512.cc,
// everything in an anonymous namespace): walking and loading a head's
// positions, the scores pass over token-major keys (q·k summed across lanes)
// and the values pass (Σ_p w_p · v_p). Keys laid out by dimension have their
// own scores pass (attention_keys_by_dim_impl.h); ops_simd_impl.h dispatches.
#include <cstring>
#include <type_traits>

#include "ridge/kernels/ops_isa.h"

namespace ridge::kernels::internal {
namespace {

// Walks the positions of a (paged) KV head in order without a division each.
// A block's pointer is read only when its first position is asked for (the
// table may end right after the last position).
struct KvCursor {
  const KvHeadView& view;
  int64_t block = 0, in_block = 0;
  const uint8_t* ptr = nullptr;
  explicit KvCursor(const KvHeadView& v)
      : view(v), block(v.first_position / v.block_tokens), in_block(v.first_position % v.block_tokens) {
    if (in_block != 0) ptr = view.blocks[block] + in_block * view.token_stride_bytes;
  }
  const uint8_t* Next() {
    if (in_block == 0) ptr = view.blocks[block];
    const uint8_t* p = ptr;
    ptr += view.token_stride_bytes;
    if (++in_block == view.block_tokens) {
      in_block = 0;
      ++block;
    }
    return p;
  }
};

// How far ahead of the positions a scores pass reads their K is prefetched.
constexpr int64_t kKvPrefetchPositions = 32;

// A cursor kKvPrefetchPositions in front of the one a loop reads, which
// prefetches each head's lines into L1 as it passes them: decode at depth
// reads K from memory one head-row per position (128 bytes at head_dim 64,
// F16, every 512 at 4 KV heads), a pattern the hardware prefetchers do not
// run far enough ahead of. Measured (BM_AttentionDecode/4096/30, one thread,
// Zen 4): 8 query rows per KV head 2.8-3.4 -> 4.0-4.1 GB/s, 3 rows 4.4-5.2 ->
// 5.2-5.6; the same for V in the values pass gained nothing.
struct KvPrefetcher {
  KvCursor cursor;
  int64_t head_bytes, at = 0, end;
  KvPrefetcher(const KvHeadView& v, int64_t head_dim, int64_t n_positions)
      : cursor(v), head_bytes(RowBytes(v.type, head_dim)), end(n_positions) {}
  // Prefetches the heads of positions up to (not including) `until`.
  void To(int64_t until) {
    for (until = until < end ? until : end; at < until; ++at) {
      const char* h = reinterpret_cast<const char*>(cursor.Next());
      for (int64_t b = 0; b < head_bytes; b += 64) __builtin_prefetch(h + b, 0, 3);
      __builtin_prefetch(h + head_bytes - 1, 0, 3);  // a head not aligned to lines ends on one more
    }
  }
};

bool KvTypeSupported(GgmlType type, int64_t head_dim) {
  switch (type) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16: return true;
    case GgmlType::kQ8_0: return head_dim % 32 == 0;
    default: return false;
  }
}

// Elements [c, c + n) of a head (n <= kLanes; n < kLanes only at the end) as floats.
template <typename V, GgmlType kType>
typename V::R LoadKv(const uint8_t* head, int64_t c, int64_t n) {
  if constexpr (kType == GgmlType::kF32) {
    const float* p = reinterpret_cast<const float*>(head) + c;
    return n == V::kLanes ? V::Load(p) : V::LoadPartial(p, n);
  } else if constexpr (kType == GgmlType::kF16) {
    return n == V::kLanes ? V::LoadF16(head + 2 * c) : V::LoadF16Partial(head + 2 * c, n);
  } else if constexpr (kType == GgmlType::kBF16) {
    return n == V::kLanes ? V::LoadBf16(head + 2 * c) : V::LoadBf16Partial(head + 2 * c, n);
  } else {  // Q8_0: kLanes divides 32, so a vector never straddles two blocks
    const uint8_t* block = head + (c / 32) * static_cast<int64_t>(sizeof(BlockQ8_0));
    uint16_t d;
    std::memcpy(&d, block, 2);
    return V::Mul(V::LoadQ8(block + 2 + c % 32), V::Set1(V::F16Scalar(d)));
  }
}

// q_r·k for kLanes positions at once (lane j: heads[j]) and kR rows, each
// K vector loaded once for every row. Per row and position one partial-sum
// vector (lane i: Σ over c ≡ i of q[c]·k[c], c in order), reduced across lanes
// by ReducePair / ReduceQuad / ReduceQuads as soon as two, four, then all
// kLanes positions are done, so few vectors are live; a row's bits depend on
// its q and the heads alone, not on kR or the other rows. kWhole: head_dim is
// a multiple of kLanes, so every load is a whole vector (no per-load branch).
template <typename V, GgmlType kKType, bool kWhole, int kR>
void DotLanesRows(const float* const* q, int64_t head_dim, const uint8_t* const* heads, typename V::R* dots) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  R quads[kR][L / 4];
  for (int64_t j0 = 0; j0 < L; j0 += 4) {  // 4 positions × kR rows: 4·kR independent chains
    R acc[kR][4];
#pragma GCC unroll 4
    for (int r = 0; r < kR; ++r)
#pragma GCC unroll 4
      for (int jj = 0; jj < 4; ++jj) acc[r][jj] = V::Zero();
    for (int64_t c = 0; c < head_dim; c += L) {
      const int64_t n = kWhole || head_dim - c >= L ? L : head_dim - c;
      R k[4];
#pragma GCC unroll 4
      for (int jj = 0; jj < 4; ++jj) k[jj] = LoadKv<V, kKType>(heads[j0 + jj], c, n);
#pragma GCC unroll 4
      for (int r = 0; r < kR; ++r) {
        const R qv = n == L ? V::Load(q[r] + c) : V::LoadPartial(q[r] + c, n);
#pragma GCC unroll 4
        for (int jj = 0; jj < 4; ++jj) acc[r][jj] = V::Fma(k[jj], qv, acc[r][jj]);
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < kR; ++r)
      quads[r][j0 / 4] = V::ReduceQuad(V::ReducePair(acc[r][0], acc[r][1]), V::ReducePair(acc[r][2], acc[r][3]));
  }
#pragma GCC unroll 4
  for (int r = 0; r < kR; ++r) dots[r] = V::ReduceQuads(quads[r]);
}

// acc0[r]/acc1[r][i] += Σ_p w[r][p] · v_p[c0 + i·kLanes, …) over vectors
// i < kNv of [c0, c1), for kR rows over the same n_positions, each V vector
// loaded once for every row: two accumulator sets per row, even positions
// into acc0 and odd into acc1, to hide the FMA latency. Callers feeding one
// head's positions in several calls start each at an even position, so the
// chains (and the rounding) are those of one call over all of them, whatever
// kR. kWhole: c1 − c0 = kNv · kLanes, every load a whole vector (without it
// the compiler branched around every load).
template <typename V, GgmlType kType, int kNv, bool kWhole, int kR>
void AccumulateValues(const float* const* w, int64_t n_positions, const KvHeadView& v, int64_t c0, int64_t c1,
                      typename V::R (*acc0)[kNv], typename V::R (*acc1)[kNv]) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  int64_t width[kNv];
#pragma GCC unroll 16
  for (int i = 0; i < kNv; ++i) width[i] = kWhole || c1 - (c0 + i * L) >= L ? L : c1 - (c0 + i * L);
  R a0[kR][kNv], a1[kR][kNv];  // in registers for the loop
#pragma GCC unroll 4
  for (int r = 0; r < kR; ++r)
#pragma GCC unroll 16
    for (int i = 0; i < kNv; ++i) a0[r][i] = acc0[r][i], a1[r][i] = acc1[r][i];
  KvCursor cursor(v);
  int64_t p = 0;
  for (; p + 2 <= n_positions; p += 2) {
    const uint8_t* h0 = cursor.Next();
    const uint8_t* h1 = cursor.Next();
#pragma GCC unroll 16
    for (int i = 0; i < kNv; ++i) {
      const R v0 = LoadKv<V, kType>(h0, c0 + i * L, kWhole ? L : width[i]);
      const R v1 = LoadKv<V, kType>(h1, c0 + i * L, kWhole ? L : width[i]);
#pragma GCC unroll 4
      for (int r = 0; r < kR; ++r) {
        a0[r][i] = V::Fma(v0, V::Set1(w[r][p]), a0[r][i]);
        a1[r][i] = V::Fma(v1, V::Set1(w[r][p + 1]), a1[r][i]);
      }
    }
  }
  if (p < n_positions) {
    const uint8_t* h0 = cursor.Next();
#pragma GCC unroll 16
    for (int i = 0; i < kNv; ++i) {
      const R v0 = LoadKv<V, kType>(h0, c0 + i * L, kWhole ? L : width[i]);
#pragma GCC unroll 4
      for (int r = 0; r < kR; ++r) a0[r][i] = V::Fma(v0, V::Set1(w[r][p]), a0[r][i]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kR; ++r)
#pragma GCC unroll 16
    for (int i = 0; i < kNv; ++i) acc0[r][i] = a0[r][i], acc1[r][i] = a1[r][i];
}

// AccumulateValues for BF16 values on a V with the BF16 dot (V::kBf16Dot):
// positions in pairs (p, p + 1), the pair's values interleaved into bf16
// pairs once for every row, one DotPairs per row and vector, into acc0 alone
// (acc1 untouched: the kR · kNv chains hide the latency). wp[r][j] holds row
// r's weights of positions 2j and 2j + 1 as bf16 (high half 0 past an odd
// end). Callers start each call at an even position.
template <typename V, int kNv, bool kWhole, int kR>
void AccumulateValuePairs(const uint32_t* const* wp, int64_t n_positions, const KvHeadView& v, int64_t c0,
                          int64_t c1, typename V::R (*acc0)[kNv]) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  int64_t width[kNv];
#pragma GCC unroll 16
  for (int i = 0; i < kNv; ++i) width[i] = kWhole || c1 - (c0 + i * L) >= L ? L : c1 - (c0 + i * L);
  R a[kR][kNv];  // in registers for the loop
#pragma GCC unroll 8
  for (int r = 0; r < kR; ++r)
#pragma GCC unroll 16
    for (int i = 0; i < kNv; ++i) a[r][i] = acc0[r][i];
  KvCursor cursor(v);
  for (int64_t p = 0; p < n_positions; p += 2) {
    const uint8_t* h0 = cursor.Next();
    const uint8_t* h1 = p + 1 < n_positions ? cursor.Next() : nullptr;  // none: a half pair
#pragma GCC unroll 16
    for (int i = 0; i < kNv; ++i) {
      const int64_t c = 2 * (c0 + i * L);  // bytes
      const auto pair = V::LoadBf16Pairs(h0 + c, h1 == nullptr ? nullptr : h1 + c, kWhole ? L : width[i]);
#pragma GCC unroll 8
      for (int r = 0; r < kR; ++r) a[r][i] = V::DotPairs(a[r][i], pair, wp[r][p / 2]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < kR; ++r)
#pragma GCC unroll 16
    for (int i = 0; i < kNv; ++i) acc0[r][i] = a[r][i];
}

// Weights per position of a values pass: floats (AccumulateValues), or bf16
// pairs of positions (uint32_t, AccumulateValuePairs).
template <typename W>
constexpr int64_t kPositionsPerWeight = std::is_same_v<W, uint32_t> ? 2 : 1;

template <typename V, GgmlType kType, int kNv, bool kWhole, int kR, typename W>
void AccumulateWeighted(const W* const* w, int64_t n_positions, const KvHeadView& v, int64_t c0, int64_t c1,
                        typename V::R (*acc0)[kNv], typename V::R (*acc1)[kNv]) {
  if constexpr (std::is_same_v<W, uint32_t>) {
    AccumulateValuePairs<V, kNv, kWhole, kR>(w, n_positions, v, c0, c1, acc0);
  } else {
    AccumulateValues<V, kType, kNv, kWhole, kR>(w, n_positions, v, c0, c1, acc0, acc1);
  }
}

// The view from `first` positions further on.
KvHeadView Advanced(const KvHeadView& view, int64_t first) {
  KvHeadView shifted = view;
  shifted.first_position += first;
  return shifted;
}

// Positions the rows of a call take together: one stretch of K (or V) of one
// head, ≤ 128 × 256 halves, stays in L1 while every row reads it. Even and a
// multiple of every kLanes (the value chains and the score lanes stay aligned
// to the view's start, so a row's bits do not depend on the other rows).
constexpr int64_t kChunkPositions = 128;

// f(std::integral_constant<int, n>{}) for 1 ≤ n ≤ kMax: a count known at run
// time as a template argument.
template <int kMax, typename F>
void WithRowCount(int64_t n, F f) {
  if constexpr (kMax > 1) {
    if (n != kMax) return WithRowCount<kMax - 1>(n, f);
  }
  f(std::integral_constant<int, kMax>{});
}

// Rows whose V loads are shared in one AccumulateValues pass: as many as keep
// their 2 · kNv accumulators and weights in registers (32 on AVX-512, at most
// 4 rows; 16 on AVX2, at most 3); an AccumulateValuePairs pass (kNv
// accumulators a row) up to 8.
template <typename V, int kNv, typename W>
constexpr int ValueRowBlock() {
  if constexpr (std::is_same_v<W, uint32_t>) {
    const int fit = 24 / kNv;
    return fit > 8 ? 8 : fit;
  }
  const int fit = (V::kLanes == 16 ? 28 : 12) / (2 * kNv + 2);  // registers left for sums, over one row's
  constexpr int kMax = V::kLanes == 16 ? 4 : 3;
  return fit < 1 ? 1 : fit > kMax ? kMax : fit;
}

// AccumulateWeighted over positions [p0, p0 + n_r) of kR rows (n_r ≤ kChunkPositions
// each): the positions all rows have together, then each row's own rest (from an
// even position, so its chains stay those of a call on its own).
template <typename V, GgmlType kType, int kNv, bool kWhole, int kR, typename W>
void AccumulateRowsChunk(const W* const* w, const int64_t* n, const KvHeadView& chunk, int64_t c0, int64_t c1,
                         typename V::R (*acc0)[kNv], typename V::R (*acc1)[kNv]) {
  int64_t shortest = n[0], longest = n[0];
  for (int r = 1; r < kR; ++r) {
    shortest = n[r] < shortest ? n[r] : shortest;
    longest = n[r] > longest ? n[r] : longest;
  }
  const int64_t together = shortest == longest ? shortest : shortest & ~int64_t{1};
  AccumulateWeighted<V, kType, kNv, kWhole, kR>(w, together, chunk, c0, c1, acc0, acc1);
  if (together == longest) return;
  const KvHeadView rest = Advanced(chunk, together);
  for (int r = 0; r < kR; ++r) {
    const W* w_rest = w[r] + together / kPositionsPerWeight<W>;
    AccumulateWeighted<V, kType, kNv, kWhole, 1>(&w_rest, n[r] - together, rest, c0, c1, acc0 + r, acc1 + r);
  }
}

// AccumulateRowsChunk for the kR rows active[0, kR) of a call over the chunk
// from position p0, their sums taken from and put back into acc0/acc1[row].
template <typename V, GgmlType kType, int kNv, bool kWhole, int kR, typename W>
void AccumulateRowsPass(const AttentionRow* rows, const int64_t* active, const W* w, int64_t w_stride,
                        const KvHeadView& chunk, int64_t p0, int64_t c0, int64_t c1, typename V::R (*acc0)[kNv],
                        typename V::R (*acc1)[kNv]) {
  const W* w_rows[kR];
  int64_t n[kR];
  typename V::R block0[kR][kNv], block1[kR][kNv];
  for (int i = 0; i < kR; ++i) {
    const int64_t r = active[i], left = rows[r].n_positions - p0;
    w_rows[i] = w + r * w_stride + p0 / kPositionsPerWeight<W>;
    n[i] = left < kChunkPositions ? left : kChunkPositions;
    for (int c = 0; c < kNv; ++c) block0[i][c] = acc0[r][c], block1[i][c] = acc1[r][c];
  }
  AccumulateRowsChunk<V, kType, kNv, kWhole, kR, W>(w_rows, n, chunk, c0, c1, block0, block1);
  for (int i = 0; i < kR; ++i)
    for (int c = 0; c < kNv; ++c) acc0[active[i]][c] = block0[i][c], acc1[active[i]][c] = block1[i][c];
}

// rows[r].out[c0, c1) = Σ_p weights_r[p] · v_p[c0, c1) (weights_r = w + r·w_stride,
// W per kPositionsPerWeight positions) for n_rows ≤ kMaxAttentionRows rows, a
// chunk of positions at a time for all rows, ValueRowBlock rows per pass over the chunk.
template <typename V, GgmlType kType, int kNv, bool kWhole, typename W>
void RowsValuesSlice(const AttentionRow* rows, int64_t n_rows, const W* w, int64_t w_stride, const KvHeadView& v,
                     int64_t c0, int64_t c1) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  constexpr int kBlock = ValueRowBlock<V, kNv, W>();
  R acc0[kMaxAttentionRows][kNv], acc1[kMaxAttentionRows][kNv];
  int64_t longest = 0;
  for (int64_t r = 0; r < n_rows; ++r) {
    longest = rows[r].n_positions > longest ? rows[r].n_positions : longest;
    for (int i = 0; i < kNv; ++i) acc0[r][i] = acc1[r][i] = V::Zero();
  }
  for (int64_t p0 = 0; p0 < longest; p0 += kChunkPositions) {
    const KvHeadView chunk = Advanced(v, p0);
    int64_t active[kMaxAttentionRows], n_active = 0;  // the rows with positions in this chunk
    for (int64_t r = 0; r < n_rows; ++r)
      if (rows[r].n_positions > p0) active[n_active++] = r;
    // Passes of ≤ kBlock rows, as even as they go (8 rows in 6s: 4 + 4).
    const int64_t n_passes = (n_active + kBlock - 1) / kBlock, per_pass = (n_active + n_passes - 1) / n_passes;
    for (int64_t a0 = 0; a0 < n_active; a0 += per_pass) {
      WithRowCount<kBlock>(n_active - a0 < per_pass ? n_active - a0 : per_pass, [&](auto rows_tag) {
        AccumulateRowsPass<V, kType, kNv, kWhole, decltype(rows_tag)::value>(rows, active + a0, w, w_stride, chunk, p0,
                                                                             c0, c1, acc0, acc1);
      });
    }
  }
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int i = 0; i < kNv; ++i) {
      const R sum = V::Add(acc0[r][i], acc1[r][i]);
      const int64_t width = c1 - (c0 + i * L) < L ? c1 - (c0 + i * L) : L;
      if (width == L) {
        V::Store(rows[r].out + c0 + i * L, sum);
      } else {
        V::StorePartial(rows[r].out + c0 + i * L, width, sum);
      }
    }
  }
}

template <typename V, GgmlType kVType, int kNv, typename W>
void RowsValuesSliceOf(bool whole, const AttentionRow* rows, int64_t n_rows, const W* w, int64_t w_stride,
                       const KvHeadView& v, int64_t c0, int64_t c1) {
  if (whole) {
    RowsValuesSlice<V, kVType, kNv, true>(rows, n_rows, w, w_stride, v, c0, c1);
  } else {
    RowsValuesSlice<V, kVType, kNv, false>(rows, n_rows, w, w_stride, v, c0, c1);
  }
}

// Slices of ≤ 4 vectors of head_dim, each summed over every position.
template <typename V, GgmlType kVType, typename W>
void RowsValues(const AttentionRow* rows, int64_t n_rows, const W* w, int64_t w_stride, const KvHeadView& v,
                int64_t head_dim) {
  constexpr int64_t L = V::kLanes;
  // Slices of 2 vectors, so that the accumulators of several rows stay in
  // registers (ValueRowBlock: 2 on AVX2, 4 on AVX-512) and share each converted
  // V vector. With 4-vector slices AVX2 held one row (the F16 conversions were
  // half of the value pass on Zen 3) and AVX-512 two: tinyllama's 8-row decode
  // ran ~10 % slower from L2 on a Zen 5 (BM_AttentionDecode/1024/1/1/8/0).
  constexpr int64_t kMaxVectors = 2;
  for (int64_t c0 = 0; c0 < head_dim; c0 += kMaxVectors * L) {
    const int64_t c1 = c0 + kMaxVectors * L < head_dim ? c0 + kMaxVectors * L : head_dim;
    const int64_t n_vectors = (c1 - c0 + L - 1) / L;
    const bool whole = c1 - c0 == n_vectors * L;
    switch (n_vectors) {
      case 1: RowsValuesSliceOf<V, kVType, 1>(whole, rows, n_rows, w, w_stride, v, c0, c1); break;
      case 2: RowsValuesSliceOf<V, kVType, 2>(whole, rows, n_rows, w, w_stride, v, c0, c1); break;
      case 3: RowsValuesSliceOf<V, kVType, 3>(whole, rows, n_rows, w, w_stride, v, c0, c1); break;
      default: RowsValuesSliceOf<V, kVType, 4>(whole, rows, n_rows, w, w_stride, v, c0, c1); break;
    }
  }
}

// Rows whose K loads are shared in one DotLanesRows pass (AVX-512; AVX2's 16
// registers hold one row's q and sums). Measured with
// bench/kernels/attention_bench.cc: 3 rows per pass did a prefill tile's
// arithmetic faster (its K step is read by every row of the tile, the
// arithmetic is the limit), but decode at depth 4096 from memory 15-25 %
// slower than one row per pass (a longer body per position: fewer K misses
// in flight). So calls of 5 rows or more (a prefill tile: 16 / group tokens
// of a group; a decode group of 8 heads, tinyllama's, ran no slower) take 3,
// smaller decode groups 1.
template <typename V>
constexpr int kScoreRowBlock = V::kLanes == 16 ? 3 : 1;
constexpr int64_t kScoreBlockFromRows = 5;

// scores[r·scores_stride + p] = scale · q_r·k_p for p < n_positions_r, for
// every row, kLanes positions at a time, each position's K read once for
// every row that has it (kBlock rows per pass).
template <typename V, GgmlType kKType, bool kWhole, int kBlock>
void RowsScoresOf(const AttentionRow* rows, int64_t n_rows, int64_t head_dim, const KvHeadView& k, float scale,
                  float* scores, int64_t scores_stride) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  const R vscale = V::Set1(scale);
  int64_t longest = 0;
  for (int64_t r = 0; r < n_rows; ++r) longest = rows[r].n_positions > longest ? rows[r].n_positions : longest;
  KvCursor cursor(k);
  KvPrefetcher prefetch(k, head_dim, longest);
  for (int64_t p0 = 0; p0 < longest; p0 += L) {
    prefetch.To(p0 + L + kKvPrefetchPositions);
    const int64_t m = longest - p0 < L ? longest - p0 : L;
    const uint8_t* heads[L];
    for (int64_t j = 0; j < m; ++j) heads[j] = cursor.Next();
    for (int64_t j = m; j < L; ++j) heads[j] = heads[0];  // computed and dropped
    int64_t active[kMaxAttentionRows], n_active = 0;       // the rows with positions here
    for (int64_t r = 0; r < n_rows; ++r)
      if (rows[r].n_positions > p0) active[n_active++] = r;
    for (int64_t a0 = 0; a0 < n_active; a0 += kBlock) {
      const int64_t n_block = n_active - a0 < kBlock ? n_active - a0 : kBlock;
      const float* q[kBlock];
      for (int64_t i = 0; i < kBlock; ++i) q[i] = rows[active[a0 + (i < n_block ? i : 0)]].q;
      R dots[kBlock];
      if (n_block == kBlock) {
        DotLanesRows<V, kKType, kWhole, kBlock>(q, head_dim, heads, dots);
      } else if constexpr (kBlock > 2) {
        if (n_block == 2) {
          DotLanesRows<V, kKType, kWhole, 2>(q, head_dim, heads, dots);
        } else {
          DotLanesRows<V, kKType, kWhole, 1>(q, head_dim, heads, dots);
        }
      } else {
        DotLanesRows<V, kKType, kWhole, 1>(q, head_dim, heads, dots);
      }
      for (int64_t i = 0; i < n_block; ++i) {
        const int64_t r = active[a0 + i];
        const int64_t n = rows[r].n_positions - p0 < L ? rows[r].n_positions - p0 : L;
        float* out = scores + r * scores_stride + p0;
        if (n == L) {
          V::Store(out, V::Mul(dots[i], vscale));
        } else {
          V::StorePartial(out, n, V::Mul(dots[i], vscale));
        }
      }
    }
  }
}

template <typename V, GgmlType kKType>
void RowsScores(const AttentionRow* rows, int64_t n_rows, int64_t head_dim, const KvHeadView& k, float scale,
                float* scores, int64_t scores_stride) {
  constexpr int kBlock = kScoreRowBlock<V>;
  const bool whole = head_dim % V::kLanes == 0, blocked = n_rows >= kScoreBlockFromRows;
  if (whole && blocked) {
    RowsScoresOf<V, kKType, true, kBlock>(rows, n_rows, head_dim, k, scale, scores, scores_stride);
  } else if (whole) {
    RowsScoresOf<V, kKType, true, 1>(rows, n_rows, head_dim, k, scale, scores, scores_stride);
  } else if (blocked) {
    RowsScoresOf<V, kKType, false, kBlock>(rows, n_rows, head_dim, k, scale, scores, scores_stride);
  } else {
    RowsScoresOf<V, kKType, false, 1>(rows, n_rows, head_dim, k, scale, scores, scores_stride);
  }
}

}  // namespace
}  // namespace ridge::kernels::internal
