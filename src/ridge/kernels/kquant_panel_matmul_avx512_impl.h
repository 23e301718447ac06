#pragma once
// The panel MatMul of the 16-group K-quants on AVX-512, shared by
// matmul_q6k_avx512.cc (Q6_K, Q3_K, Q2_K) and matmul_iq4xs_avx512.cc
// (IQ4_XS): up to P::kTile1MaxTokens tokens a type's one-token tile once per
// token, from there a stretch of the panel's decoded codes multiplied by
// every token (TileDecoded), and the kernels table of one type. P, a type's
// panels: the facts of kquant_group_scales_impl.h with its Bias, Decode,
// kTile1 and kTile1MaxTokens.
//
// Include only from *_avx512.cc, after simd_avx512.h, kquant_rows_impl.h and
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
constexpr int kHalfRows = 16;                   // rows of one int32-lane zmm

// kT tokens × the panel's super-blocks [sb0, sb_end), from their decoded
// codes, the steps of Tile1: acc starts from `keep` (sb0 > 0) or 0 and ends
// in `keep`, or after the last stretch in y (masked to the panel's valid
// rows), so the stretches continue each row's one fma chain exactly. keep:
// the tile's tokens' 32 accumulators, [kT][32 rows], contiguous (see
// DecodedMatMul). next, next_lines: the tile's slice of the next stretch,
// prefetched into L1 a few lines at each of its 8·(sb_end − sb0) steps.
template <typename P, int kT>
void TileDecoded(const uint8_t* panel, const uint8_t* codes, const GroupScales* scales, int64_t sb0, int64_t sb_end,
                 const ActLayout& layout, const uint8_t* acts, int64_t act_stride, float* y, int64_t y_stride,
                 int64_t n_valid_rows, float* keep, bool last, const uint8_t* next, int64_t next_lines) {
  using panels::q6k::kCodeBlockBytes, panels::q6k::kDOffset;
  static_assert(panels::q3k::kDOffset == kDOffset && panels::q2k::kDOffset == kDOffset &&
                panels::iq4xs::kDOffset == kDOffset);
  constexpr int kH = 2;
  TokenActs tok[kT];
  for (int t = 0; t < kT; ++t) tok[t] = TokenActs(acts + t * act_stride, layout);
  __mmask16 mask[kH];
  __m512 acc[kH][kT];
  for (int h = 0; h < kH; ++h) {
    const int64_t valid = std::clamp<int64_t>(n_valid_rows - h * kHalfRows, 0, kHalfRows);
    mask[h] = static_cast<__mmask16>((1u << valid) - 1);
    for (int t = 0; t < kT; ++t)
      acc[h][t] = sb0 == 0 ? _mm512_setzero_ps() : _mm512_load_ps(keep + t * kPanelRows + h * kHalfRows);
  }
  for (int64_t sb = sb0; sb < sb_end; ++sb) {
    const uint8_t* p = panel + sb * P::kSuperBytes;
    const GroupScales& decoded = scales[sb - sb0];
    const int8_t* sc_super = P::Scales(p, decoded);
    __m512 d[kH];
    for (int h = 0; h < kH; ++h)
      d[h] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kDOffset + 2 * kHalfRows * h)));
#pragma GCC unroll 1
    for (int j = 0; j < 8; ++j) {  // the super-block's 32-blocks: file half j / 4, element set j % 4
      const int64_t b = sb * 8 + j;  // x's 32-block
      const int64_t step = (sb - sb0) * 8 + j, n_steps = (sb_end - sb0) * 8;
      PrefetchLinesOfStep<_MM_HINT_T0>(next, next_lines, step, n_steps);
      const uint8_t* c = codes + ((sb - sb0) * 8 + j) * kCodeBlockBytes;
      __m512i scaled[kH][kT];
#pragma GCC unroll 2
      for (int gi = 0; gi < 2; ++gi) {
        __m512i sum[kH][kT];  // the group's Σ(q − 32)·x
        for (int t = 0; t < kT; ++t) {
          const __m512i bias = _mm512_set1_epi32(P::Bias(tok[t].gbias[2 * b + gi]));
          for (int h = 0; h < kH; ++h) sum[h][t] = bias;
        }
#pragma GCC unroll 4
        for (int k = 4 * gi; k < 4 * gi + 4; ++k) {
#pragma GCC unroll 2
          for (int h = 0; h < kH; ++h) {
            const __m512i q = _mm512_load_si512(c + (k * 2 + h) * 64);
#pragma GCC unroll 4
            for (int t = 0; t < kT; ++t) {
              int32_t x4;
              std::memcpy(&x4, tok[t].q + b * kActBlock + 4 * k, 4);
              sum[h][t] = _mm512_dpbusd_epi32(sum[h][t], q, _mm512_set1_epi32(x4));
            }
          }
        }
        const int64_t g = 8 * (j / 4) + 2 * (j % 4) + gi;  // the super-block's group
#pragma GCC unroll 2
        for (int h = 0; h < kH; ++h) {
          const __m512i sc = _mm512_cvtepi8_epi32(
              _mm_loadu_si128(reinterpret_cast<const __m128i*>(sc_super + g * kPanelRows + h * kHalfRows)));
          for (int t = 0; t < kT; ++t) {
            const __m512i s = _mm512_mullo_epi32(sum[h][t], sc);
            scaled[h][t] = gi == 0 ? s : _mm512_add_epi32(scaled[h][t], s);
          }
        }
      }
      for (int h = 0; h < kH; ++h)
        for (int t = 0; t < kT; ++t)
          acc[h][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(scaled[h][t]),
                                      _mm512_mul_ps(d[h], _mm512_set1_ps(tok[t].d[b])), acc[h][t]);
      if constexpr (P::kMins) {
        for (int gi = 0; gi < 2; ++gi)
          for (int h = 0; h < kH; ++h) {
            const __m512 mins = _mm512_load_ps(decoded.mins + (2 * j + gi) * kPanelRows + h * kHalfRows);
            for (int t = 0; t < kT; ++t)
              acc[h][t] = _mm512_fnmadd_ps(mins, _mm512_set1_ps(tok[t].gsum[2 * b + gi]), acc[h][t]);
          }
      }
    }
  }
  for (int h = 0; h < kH; ++h)
    for (int t = 0; t < kT; ++t) {
      if (last) _mm512_mask_storeu_ps(y + t * y_stride + h * kHalfRows, mask[h], acc[h][t]);
      else _mm512_store_ps(keep + t * kPanelRows + h * kHalfRows, acc[h][t]);
    }
}

// The panel × n_tokens a stretch at a time. A panel streamed from memory
// (`streams`: weights repacked at load): each tile prefetches a slice of the
// next stretch's bytes (past the panel's end, the next panel's), so
// that its read overlaps this stretch's tiles, as on AVX2. Without it a
// stretch's decode waits on memory and its tiles on nothing: on an Intel
// Xeon (AVX-512) best BM_Batched/Q6_K_memory 8, 16, 64 tokens 257, 369, 517
// -> 268, 384, 581 GFLOP/s; _cache reads 439, 499, 589. The slice is spread
// over the tile's steps: issued in one burst before the tile (105 lines at 8
// tokens), the prefetches themselves stalled (a fifth of the samples on the
// burst's loop, `perf`, Zen 5), and tinyllama Q6_K's decode steps of P
// sequences, alternated in one process, ran P = 4 / 6 / 8 / 16 in 1.09 /
// 1.17 / 1.14 / 1.17 × the spread's time (Q3_K, Q2_K, IQ4_XS at 8: 1.06,
// 1.05, 1.10 ×; a 512-token prompt 0.98-1.00 ×). Into L1 (T0), not L2
// (T1) as until 2026-12-07: tinyllama's decode steps of P sequences, the
// same way (2 threads, Zen 5), ran T1 in 1.03-1.08 / 1.02 / 1.08-1.12 /
// 1.04-1.07 × T0's time at P = 3 / 4 / 8 / 16 for Q6_K, Q3_K 1.05 / - /
// 1.01 / 1.02, IQ4_XS 1.02 / - / 1.03 / 1.01; prompts of 64 / 128 / 512
// tokens 1.06 / 1.01-1.02 / 0.97-1.00 (Q6_K). AVX2's tiles on the same Zen
// 5 (RIDGE_ISA=avx2): 0.99-1.04, so T1 stays there.
// Between stretches each token's 32 accumulators wait in a contiguous
// scratch (128 bytes a token) rather than in y, whose rows lie a matrix's
// width apart (8-22 KiB: the same few sets of L1 for every token): the
// model's 512-token pass, one in the other's place alternated in one process
// (Zen 5, 2 threads), Q6_K, Q3_K, Q2_K, IQ4_XS 1.33-1.35 × in the host's slow
// minutes, 1.04-1.05 × in its fast ones; 16 and 64 tokens 1.02, 1.01 ×.
template <typename P>
void DecodedMatMul(const uint8_t* panel, int64_t n_super, const ActLayout& layout, const ActView& acts,
                   int64_t n_tokens, float* y, int64_t y_stride, int64_t n_valid_rows, bool streams) {
  using panels::q6k::kCodeBlockBytes, panels::q6k::kStretchSuper;
  constexpr int64_t kStretchBytes = kStretchSuper * P::kSuperBytes;
  const TokenTiles tiles = EvenTokenTiles(n_tokens, 4);
  const int64_t n_tiles = tiles.n_tiles;
  alignas(64) uint8_t codes[kStretchSuper * 8 * kCodeBlockBytes];
  thread_local ScratchBuffer keep_buffer;  // [n_tokens][32 rows]
  float* keep = reinterpret_cast<float*>(keep_buffer.Get(n_tokens * kPanelRows * 4));
  GroupScales scales[kStretchSuper];  // Q3_K's, Q2_K's
  const int64_t s = acts.row_stride;
  for (int64_t sb0 = 0; sb0 < n_super; sb0 += kStretchSuper) {
    const int64_t sb_end = std::min(n_super, sb0 + kStretchSuper);
    const bool last = sb_end == n_super;
    P::Decode(panel, sb0, sb_end, codes, scales);
    const uint8_t* ahead = panel + sb_end * P::kSuperBytes;
    // The tiles' loop by hand: the same tiles called through ForTokenTiles
    // (matmul_isa.h) ran Q6_K's 3-4 tokens in 1.01-1.04 × this loop's time,
    // 16 tokens in 0.97 × (one panel path against the other in one process,
    // one thread, Zen 5, 2026-12-07).
    for (int64_t t = 0, tile = 0; tile < n_tiles; ++tile) {
      const int64_t size = tiles.TileSize(tile);
      const LineRange slice = TileLines(kStretchBytes, tile, n_tiles);  // of the next stretch
      const uint8_t* a = acts.data + t * s;
      float* yt = y + t * y_stride;
      float* kt = keep + t * kPanelRows;
      const auto run = [&]<int kT>() {
        TileDecoded<P, kT>(panel, codes, scales, sb0, sb_end, layout, a, s, yt, y_stride, n_valid_rows, kt, last,
                           ahead + 64 * slice.first, streams ? slice.n : 0);
      };
      switch (size) {
        case 1: run.template operator()<1>(); break;
        case 2: run.template operator()<2>(); break;
        case 3: run.template operator()<3>(); break;
        default: run.template operator()<4>(); break;
      }
      t += size;
    }
  }
}

// One panel × every token. Up to P::kTile1MaxTokens (decode, speculation's
// verifying passes) run Tile1 once per token: the panel streams from memory
// once and is read again from L2, and Tile1's order streams faster than a
// tile of tokens (2 tokens: 29 against 16 GB/s, 2 threads, Zen 4). From
// there on, the codes are decoded a stretch at a time and every token
// multiplied against them, up to 4 at a time (the register budget of 32 zmm;
// EvenTokenTiles).
template <typename P>
void PanelMatMul(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts, int64_t n_tokens,
                 float* y, int64_t y_stride, const PanelPrefetch& next) {
  const ActLayout layout(n_cols);
  const int64_t n = n_cols / kQK_K, s = acts.row_stride;
  if (n_tokens <= P::kTile1MaxTokens) {
    for (int64_t t = 0; t < n_tokens; ++t)
      P::kTile1(panel, n, layout, acts.data + t * s, y + t * y_stride, n_valid_rows);
    return;
  }
  DecodedMatMul<P>(panel, n, layout, acts, n_tokens, y, y_stride, n_valid_rows, next.stream_ahead_bytes > 0);
}

// The rows tile's ISA steps (kquant_rows_impl.h, Q6KFileRows).
struct Q6KRowSteps {
  static __m256i DotAdd(__m256i acc, __m256i u8, __m256i s8) { return _mm256_dpbusd_epi32(acc, u8, s8); }
  static void SumHalvesOf8(const __m256i d[8], __m256i* low, __m256i* high) { avx512::SumHalvesOf8(d, low, high); }
  static void Transpose8x8(__m256 r[8]) { avx512::Transpose8x8(r); }
};

// One type's kernels: F its rows form, P its panels, with their packer.
// The file layout takes per-call panels from 5 tokens on, repacked weights
// their panels always.
template <typename F, typename P>
const TypeKernels* KernelsOf(bool repacked, int64_t (*panel_bytes)(int64_t),
                             void (*pack)(const MatView&, int64_t, uint8_t*)) {
  const ActPrep acts = Avx512KQuantKernels(GgmlType::kQ4_K)->row_acts;  // the K-quants' shared preparation
  const auto kernels = [&](int64_t panel_min_tokens) {
    return TypeKernels{acts, 4, Q6KFileRows<F, Q6KRowSteps>, acts, kPanelRows, panel_min_tokens, panel_bytes, pack,
                       PanelMatMul<P>};
  };
  static const TypeKernels k[2] = {kernels(5), kernels(1)};
  return &k[repacked];
}

}  // namespace
}  // namespace ridge::kernels::internal
