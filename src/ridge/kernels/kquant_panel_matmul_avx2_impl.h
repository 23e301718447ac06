#pragma once
// The panel MatMul of the 16-group K-quants on AVX2, shared by
// matmul_q6k_avx2.cc (Q6_K, Q3_K, Q2_K) and matmul_iq4xs_avx2.cc (IQ4_XS):
// one token a type's one-token tile, from 2 a stretch of the panel's decoded
// codes multiplied by every token (TileDecoded), and the kernels table of
// one type. P, a type's panels: the facts of
// kquant_group_scales_impl.h with its Bias, DotAdd, Decode and kTile1.
//
// Include only from *_avx2.cc, after simd_avx2.h, kquant_rows_impl.h and
// kquant_group_scales_impl.h. It sits in an anonymous namespace, as they do.
#include <algorithm>
#include <cstring>

#include "ridge/kernels/matmul_isa.h"
#include "ridge/kernels/prefetch_spread_impl.h"
#include "ridge/kernels/scratch.h"
#include "ridge/kernels/weight_panels.h"

namespace ridge::kernels::internal {
namespace {

constexpr int64_t kPanelRows = panels::kRows;  // 32
constexpr int kQuarterRows = 8;                 // rows of one int32-lane ymm
constexpr int kQuarters = 4;

template <int64_t kSuperBytes>
int64_t PanelBytes(int64_t n_cols) {
  return (n_cols / kQK_K) * kSuperBytes;
}

// A token's 4 activation bytes at q, broadcast to every int32 lane.
inline __attribute__((always_inline)) __m256i Broadcast4(const int8_t* q) {
  int32_t x4;
  std::memcpy(&x4, q, 4);
  return _mm256_set1_epi32(x4);
}

// A one-token tile's 4 quarters of accumulators into y, masked to the panel's valid rows.
void StoreQuarters(const __m256 acc[kQuarters], int64_t n_valid_rows, float* y) {
  for (int q = 0; q < kQuarters; ++q) {
    const int valid = static_cast<int>(std::clamp<int64_t>(n_valid_rows - q * kQuarterRows, 0, kQuarterRows));
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(y + q * kQuarterRows, mask, acc[q]);
  }
}

// Quarter q × kT tokens × the panel's super-blocks [sb0, sb_end), from their
// decoded codes (and decoded scales and mins, P::kMins, where the type's
// panels keep them packed). P::DotAdd(i, c0, c1, x, x4, sc16) adds a row's
// sc·Σ c·x of element sets k, k + 1 against x, x4 (a token's 4 bytes of
// each, broadcast), the group scale in the widening vpmaddwd (each row's
// sc in both words of its lane), and −z·Σx·sc starts the sum, so one
// register per token holds I_b: the same integer as
// sc_{2b}·S_{2b} + sc_{2b+1}·S_{2b+1} (every partial sum < 2²⁶), in fewer
// registers than the S of each group (16 ymm: acc and I_b of 4 tokens,
// codes, activations). acc starts from `keep` (sb0 > 0) or 0 and ends in
// `keep`, or after the last stretch in y (masked to the panel's valid
// rows), so the stretches continue each row's one fma chain exactly. keep:
// the tile's tokens' 32 accumulators, [kT][32 rows], contiguous (see
// PanelMatMul). next, next_lines: the tile's slice of the next stretch,
// prefetched into L2 a few lines at each of its 8·(sb_end − sb0) steps.
template <typename P, int kT>
void TileDecoded(const uint8_t* panel, const uint8_t* codes, const GroupScales* scales, int64_t sb0, int64_t sb_end,
                 int q, const ActLayout& layout, const uint8_t* acts, int64_t act_stride, float* y, int64_t y_stride,
                 int64_t n_valid_rows, float* keep, bool last, const uint8_t* next, int64_t next_lines) {
  using panels::q6k::kCodeBlockBytes, panels::q6k::kDOffset;
  static_assert(panels::q3k::kDOffset == kDOffset && panels::q2k::kDOffset == kDOffset &&
                panels::iq4xs::kDOffset == kDOffset);
  TokenActs tok[kT];
  for (int t = 0; t < kT; ++t) tok[t] = TokenActs(acts + t * act_stride, layout);
  const int valid = static_cast<int>(std::clamp<int64_t>(n_valid_rows - q * kQuarterRows, 0, kQuarterRows));
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  float* yq = y + q * kQuarterRows;
  __m256 acc[kT];
  float* kq = keep + q * kQuarterRows;
  for (int t = 0; t < kT; ++t) acc[t] = sb0 == 0 ? _mm256_setzero_ps() : _mm256_load_ps(kq + t * kPanelRows);
  for (int64_t sb = sb0; sb < sb_end; ++sb) {
    const uint8_t* p = panel + sb * P::kSuperBytes;
    const GroupScales& decoded = scales[sb - sb0];
    const int8_t* sc_super = P::Scales(p, decoded);
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kDOffset + 16 * q)));
#pragma GCC unroll 1
    for (int j = 0; j < 8; ++j) {  // the super-block's 32-blocks: file half j / 4, element set j % 4
      const int64_t b = sb * 8 + j;  // x's 32-block
      const int64_t step = (sb - sb0) * 8 + j, n_steps = (sb_end - sb0) * 8;
      PrefetchLinesOfStep<_MM_HINT_T1>(next, next_lines, step, n_steps);
      const uint8_t* c = codes + ((sb - sb0) * 8 + j) * kCodeBlockBytes + q * 32;
      __m256i sc32[2], sc16[2];  // the rows' scales of groups 2b, 2b + 1
      for (int gi = 0; gi < 2; ++gi) {
        const int64_t g = 8 * (j / 4) + 2 * (j % 4) + gi;
        const __m128i bytes =
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc_super + g * kPanelRows + q * kQuarterRows));
        sc32[gi] = _mm256_cvtepi8_epi32(bytes);
        sc16[gi] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(bytes, bytes));
      }
      __m256i i_b[kT];
      for (int t = 0; t < kT; ++t)
        i_b[t] = _mm256_add_epi32(_mm256_mullo_epi32(_mm256_set1_epi32(P::Bias(tok[t].gbias[2 * b])), sc32[0]),
                                  _mm256_mullo_epi32(_mm256_set1_epi32(P::Bias(tok[t].gbias[2 * b + 1])), sc32[1]));
#pragma GCC unroll 4
      for (int k = 0; k < 8; k += 2) {
        const __m256i c0 = Load256(c + k * kQuarters * 32), c1 = Load256(c + (k + 1) * kQuarters * 32);
#pragma GCC unroll 4
        for (int t = 0; t < kT; ++t) {
          const int8_t* x = tok[t].q + b * kActBlock + 4 * k;
          i_b[t] = P::DotAdd(i_b[t], c0, c1, Broadcast4(x), Broadcast4(x + 4), sc16[k / 4]);
        }
      }
      for (int t = 0; t < kT; ++t)
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i_b[t]), _mm256_mul_ps(d, _mm256_set1_ps(tok[t].d[b])), acc[t]);
      if constexpr (P::kMins) {
        for (int gi = 0; gi < 2; ++gi) {
          const __m256 mins = _mm256_load_ps(decoded.mins + (2 * j + gi) * kPanelRows + q * kQuarterRows);
          for (int t = 0; t < kT; ++t)
            acc[t] = _mm256_fnmadd_ps(mins, _mm256_set1_ps(tok[t].gsum[2 * b + gi]), acc[t]);
        }
      }
    }
  }
  for (int t = 0; t < kT; ++t) {
    if (last) _mm256_maskstore_ps(yq + t * y_stride, mask, acc[t]);
    else _mm256_store_ps(kq + t * kPanelRows, acc[t]);
  }
}

// One panel × every token. One token (decode) runs Tile1. From 2 tokens on, a
// stretch of decoded codes at a time, one quarter × up to 4 tokens a tile
// (EvenTokenTiles), where arithmetic, not memory, bounds it. Tile1 once per
// token, the panel read again from L2, had taken up to 4 tokens until
// 2026-12-07; on a Zen 5 under RIDGE_ISA=avx2, tinyllama's decode steps of P
// sequences alternated in one process (2 threads), the decoded stretches ran
// P = 2 / 3 / 4 in 0.95-1.01 / 0.81 / 0.79 of its time for Q6_K, 0.78 / 0.60 /
// 0.62 for Q3_K, 0.85 / 0.69 / 0.67 for Q2_K, 0.91-0.93 / 0.84 / 0.80 for
// IQ4_XS (Zen 1-3, whose arithmetic is slower against their reads, not
// measured).
template <typename P>
void PanelMatMul(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts, int64_t n_tokens,
                 float* y, int64_t y_stride, const PanelPrefetch& next) {
  using panels::q6k::kCodeBlockBytes, panels::q6k::kStretchSuper;
  const ActLayout layout(n_cols);
  const int64_t n = n_cols / kQK_K, s = acts.row_stride;
  if (n_tokens == 1) return P::kTile1(panel, n, layout, acts.data, y, n_valid_rows);
  // A panel streamed from memory (weights repacked at load): each tile
  // prefetches a slice of the next stretch's bytes into L2 (past the panel's
  // end, the next panel's), so that its read overlaps this stretch's tiles.
  // Without it a stretch's decode waited on memory and its tiles on nothing:
  // BM_Batched/Q6_K_memory/8 ran ~40 % below the same from cache (Zen 3).
  // Spread over the tile's steps rather than issued in a burst before it (as
  // on AVX-512): tinyllama Q6_K's decode steps of P sequences on a Zen 5
  // under RIDGE_ISA=avx2, alternated in one process, the burst took P = 2 /
  // 4 / 8 / 16 1.14 / 1.19 / 1.05 / 1.04 × the spread's time, a 512-token
  // prompt 1.02 ×.
  // Between stretches each token's 32 accumulators wait in a contiguous
  // scratch (128 bytes a token) rather than in y, whose rows lie a matrix's
  // width apart, as on AVX-512 (matmul_q6k_avx512.cc: 1.33-1.35 × in a host's
  // slow minutes). Here, the model's 512-token pass on Zen 5 under
  // RIDGE_ISA=avx2, arithmetic-bound at ~2.8 s: Q6_K 1.01 ×, Q3_K 1.02-1.05 ×.
  constexpr int64_t kStretchBytes = kStretchSuper * P::kSuperBytes;
  const bool streams = next.stream_ahead_bytes > 0;
  const TokenTiles tiles = EvenTokenTiles(n_tokens, 4);
  const int64_t n_tiles = tiles.n_tiles * kQuarters;
  alignas(64) uint8_t codes[kStretchSuper * 8 * kCodeBlockBytes];
  GroupScales scales[kStretchSuper];  // Q3_K's, Q2_K's
  thread_local ScratchBuffer keep_buffer;  // [n_tokens][32 rows]
  float* keep = reinterpret_cast<float*>(keep_buffer.Get(n_tokens * kPanelRows * 4));
  for (int64_t sb0 = 0; sb0 < n; sb0 += kStretchSuper) {
    const int64_t sb_end = std::min(n, sb0 + kStretchSuper);
    const bool last = sb_end == n;
    P::Decode(panel, sb0, sb_end, codes, scales);
    const uint8_t* ahead = panel + sb_end * P::kSuperBytes;
    // The tiles' loop by hand: the same tiles called through ForTokenTiles
    // (matmul_isa.h) ran Q6_K's 4-16 tokens in 1.09-1.16 × this loop's time
    // (one panel path against the other in one process, one thread, Zen 5,
    // 2026-12-07).
    int64_t tile = 0;
    for (int64_t t = 0, k = 0; k < tiles.n_tiles; ++k) {
      const int64_t size = tiles.TileSize(k);
      const uint8_t* a = acts.data + t * s;
      float* yt = y + t * y_stride;
      float* kt = keep + t * kPanelRows;
      for (int q = 0; q < kQuarters; ++q, ++tile) {
        const LineRange slice = TileLines(kStretchBytes, tile, n_tiles);  // of the next stretch
        const auto run = [&]<int kT>() {
          TileDecoded<P, kT>(panel, codes, scales, sb0, sb_end, q, layout, a, s, yt, y_stride, n_valid_rows, kt, last,
                             ahead + 64 * slice.first, streams ? slice.n : 0);
        };
        switch (size) {
          case 1: run.template operator()<1>(); break;
          case 2: run.template operator()<2>(); break;
          case 3: run.template operator()<3>(); break;
          default: run.template operator()<4>(); break;
        }
      }
      t += size;
    }
  }
}

// The rows tile's ISA steps (kquant_rows_impl.h, Q6KFileRows): codes ≤ 63
// against |x| ≤ 127, so vpmaddubsw's pair sums stay below 2¹⁵.
struct Q6KRowSteps {
  static __m256i DotAdd(__m256i acc, __m256i u8, __m256i s8) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1)));
  }
  static void SumHalvesOf8(const __m256i d[8], __m256i* low, __m256i* high) { avx2::SumHalvesOf8(d, low, high); }
  static void Transpose8x8(__m256 r[8]) { avx2::Transpose8x8(r); }
};
// One type's kernels: F its rows form and S their steps, P its panels, kPack
// their packer. The file layout takes per-call panels from 5 tokens on,
// repacked weights their panels always.
template <typename F, typename S, typename P, void (*kPack)(const MatView&, int64_t, uint8_t*)>
const TypeKernels* KernelsOf(bool repacked) {
  const ActPrep acts = Avx2KQuantActPrep();  // the K-quants' shared preparation
  const auto kernels = [&](int64_t panel_min_tokens) {
    return TypeKernels{acts,           4, Q6KFileRows<F, S>, acts, kPanelRows, panel_min_tokens,
                       PanelBytes<P::kSuperBytes>, kPack, PanelMatMul<P>};
  };
  static const TypeKernels k[2] = {kernels(5), kernels(1)};
  return &k[repacked];
}

}  // namespace
}  // namespace ridge::kernels::internal
