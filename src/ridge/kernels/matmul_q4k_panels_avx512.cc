// Q4_K and Q5_K weight panels for AVX-512 (VNNI): matrices repacked at load
// into the layouts of weight_panels.h (q4k, q5k), the layouts AVX2's kernels
// read too (its packer, matmul_q4k_panels_avx2.cc, repacks for both),
// multiplied in place for every token count. Q5_K is Q4_K with a fifth bit
// per code, OR-ed in after the nibble is taken (its high nibble then shifted
// down, not used in place: 16 × 31 does not fit a byte), with GFNI: shifts
// and masks for the bits ran 1-token decode at ~30 GB/s where GFNI ran
// ~37-45 (Zen 5, docs/benchmarks.md, before Tile's software prefetch).
//
// Why: the rows kernel (matmul_kquant_avx512.cc) holds 8 rows' sub-block
// products in 8 registers and reduces them across rows (SumLanesOf8) once per
// sub-block and token, after transposing each row's scales; in the panel
// layout one 64-byte load is 16 rows × 4 nibble pairs, a row per int32 lane:
// the low nibbles (and 0x0f) and the high ones in place (and 0xf0, 16 × their
// value, shifted back after the sum: exact) are two vpdpbusd operands against
// a token's 4 activation bytes broadcast, and after the sub-block's 8 groups
// each row's exact Σq·x sits in its lane with no reduction.
//
// Float steps per (row, token), sub-blocks s in order, the same for Q4_K and
// Q5_K, as the rows kernels of every ISA take them (the same bits, file layout or repacked, any batch):
//   acc = fma(float(Σ_s q·x), (sc_s·d) · d_x, acc)
//   acc = fnmadd(m_s·dmin, d_x·Σq_x, acc)
#include <cstring>

#include "ridge/base/error.h"
#include "ridge/kernels/matmul_isa.h"
#include "ridge/kernels/prefetch_spread_impl.h"
#include "ridge/kernels/scratch.h"
#include "ridge/kernels/simd_avx512.h"
#include "ridge/kernels/weight_panels.h"
// After simd_avx512.h (the intrinsics).
#include "ridge/kernels/kquant_rows_impl.h"
#include "ridge/kernels/q4k_panel_scales_impl.h"

namespace ridge::kernels::internal {
namespace {

constexpr int64_t kPanelRows = panels::kRows;  // 32
constexpr int kHalfRows = 16;                   // rows of one int32-lane zmm
constexpr int kHalves = 2;

// sc_s·d and m_s·dmin of one half's 16 rows (in lanes) for sub-blocks 2k and
// 2k + 1: ws[0], wm[0] for 2k, ws[1], wm[1] for 2k + 1.
struct HalfScales {
  __m512 ws[2], wm[2];
};

inline __attribute__((always_inline)) HalfScales ScalesOf(const Q4KScaleBytes& bytes, __m512 d, __m512 dmin, int half,
                                                          int k) {
  HalfScales out;
  for (int i = 0; i < 2; ++i) {
    const int s = 2 * k + i;
    const __m128i sc = _mm_load_si128(reinterpret_cast<const __m128i*>(bytes.sc[s] + half * kHalfRows));
    const __m128i mn = _mm_load_si128(reinterpret_cast<const __m128i*>(bytes.mn[s] + half * kHalfRows));
    out.ws[i] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(sc)), d);
    out.wm[i] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(mn)), dmin);
  }
  return out;
}

// The rows' d and dmin of one half of a super-block, as floats.
inline __attribute__((always_inline)) void HalfDs(const uint8_t* super, int half, __m512* d, __m512* dmin) {
  using namespace panels::q4k;
  *d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(super + kDOffset + 2 * kHalfRows * half)));
  *dmin = _mm512_cvtph_ps(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(super + kDminOffset + 2 * kHalfRows * half)));
}

// The HalfScales of a whole panel, decoded once for a call that passes over it
// many times (prefill): [n_super][2 halves][4 k].
template <bool kQ5>
void PanelScales(const uint8_t* panel, int64_t n_super, HalfScales* out) {
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const uint8_t* p = panel + sb * panels::Q4KFamilyOf(kQ5).super_bytes;
    Q4KScaleBytes bytes;
    DecodeQ4KScaleBytes(p, bytes);
    for (int h = 0; h < kHalves; ++h) {
      __m512 d, dmin;
      HalfDs(p, h, &d, &dmin);
      for (int k = 0; k < 4; ++k) out[(sb * kHalves + h) * 4 + k] = ScalesOf(bytes, d, dmin, h, k);
    }
  }
}

// A slice of the next panel's bytes a tile prefetches (NextPanelSlice).
struct NextSlice {
  const uint8_t* begin = nullptr;
  int64_t lines_per_k = 0;
};

// One panel (both 16-row halves) × kT tokens over all super-blocks, codes
// decoded on the way. y points at the panel's row 0 for the tile's first
// token. kOwnScales (up to 12 tokens: kAvx512ScalesOnceTokens): the tile decodes
// the scales too and prefetches the panel's own stream ahead in one pass
// whichever tile of the panel it is; the other arguments are unused.
// Otherwise `scales` is the panel's PanelScales; `next` a slice of the next
// panel's bytes this tile brings into L2, next.lines_per_k lines at each of
// its 4·n_super sub-block pairs (NextPanelSlice); `first_pass` the panel's
// first tile, which brings each next super-block into L2 as it goes (the
// tiles after it find the panel in cache and issue no prefetch of it).
// The variant is a template argument and each tile its own function, not
// left to GCC's clones and inlining, which changed with the form of the call
// sites: the 3-token tile called from a dispatch of up to 3 tokens a tile
// ran in 1.7 × its time from one of up to 4, and the scale-sharing tiles
// inlined into PanelMatMul ran 9 tokens in 1.6-1.8 ×. Against the same calls
// left to GCC (the same thresholds; both in one process, each linked first
// in turn; Zen 5, 2 threads, 2026-12-07), tinyllama's decode steps of P
// sequences ran 1.00-1.06 × as fast at P = 4-32 for Q4_K and Q5_K, prompts
// of 512 tokens 1.01-1.03 × (Q5_K's of 64 tokens 0.95-0.98 ×).
template <bool kQ5, int kT, bool kOwnScales>
[[gnu::noinline]] void Tile(const uint8_t* panel, int64_t n_super, const ActLayout& layout, const uint8_t* acts,
                            int64_t act_stride, float* y, int64_t y_stride, const HalfScales* scales,
                            const NextSlice& next, bool first_pass) {
  constexpr panels::Q4KFamily f = panels::Q4KFamilyOf(kQ5);
  constexpr int kH = kHalves;
  TokenActs tok[kT];
  for (int t = 0; t < kT; ++t) tok[t] = TokenActs(acts + t * act_stride, layout);
  const __m512i low4 = _mm512_set1_epi8(0x0f), high4 = _mm512_set1_epi8(static_cast<char>(0xf0));
  __m512 acc[kH][kT];
  for (int h = 0; h < kH; ++h)
    for (int t = 0; t < kT; ++t) acc[h][t] = _mm512_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const uint8_t* p = panel + sb * f.super_bytes;
    Q4KScaleBytes scale_bytes;
    __m512 d[kH], dmin[kH];
    if constexpr (kOwnScales) {
      DecodeQ4KScaleBytes(p, scale_bytes);
      for (int h = 0; h < kH; ++h) HalfDs(p, h, &d[h], &dmin[h]);
    }
    for (int k = 0; k < 4; ++k) {  // sub-blocks 2k (low nibbles) and 2k + 1 (high)
      if constexpr (!kOwnScales) {
        for (int64_t l = 0; l < next.lines_per_k; ++l)
          _mm_prefetch(reinterpret_cast<const char*>(next.begin + ((sb * 4 + k) * next.lines_per_k + l) * 64),
                       _MM_HINT_T1);
      }
      __m512i lo_dot[kH][kT], hi_dot[kH][kT];
      for (int h = 0; h < kH; ++h)
        for (int t = 0; t < kT; ++t) lo_dot[h][t] = hi_dot[h][t] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int g = 0; g < 8; ++g) {
        // The stream ahead, spread over this super-block's 32 steps in a loop
        // kept rolled as Q6_K's Tile1 (matmul_q6k_avx512.cc).
        if constexpr (kOwnScales) {
          // Scales decoded on the way (up to 12 tokens): each line once a
          // tile, a super-block and a half ahead, into L1 (2-3 lines a step;
          // a second tile's find the panel in cache). Zen 5, tg in one
          // process, ABBA against the prefetch the tiles below keep (when
          // 1-4 tokens took this path): Q4_K 111 -> 120 t/s and Q5_K
          // 87-90 -> 94-99 t/s (1.08-1.10) when the host's read ran at ~83
          // GB/s, 0.99-1.01 at ~54 GB/s; one super-block ahead 1.02-1.05 at
          // either, two 0.96-0.99 at ~54 GB/s, no prefetch 0.64-0.80. Intel not
          // measured with it: there T1 one super-block ahead had beaten T0
          // (BM_FewTokens/Q4_K_repacked/1-4 paired read 71-89 % -> 77-95 %).
          constexpr int64_t kLines = f.super_bytes / 64;  // 72 (Q4_K), 88 (Q5_K)
          static_assert(f.super_bytes % 128 == 0);  // whole lines, a super-block and a half ahead
          const int64_t step = k * 8 + g;
          PrefetchLinesOfStep<_MM_HINT_T0>(p + 3 * f.super_bytes / 2, kLines, step, 32);
        } else if (first_pass) {
          // Tiles on scales decoded once (9 tokens and more): the first
          // brings the next super-block into L2, 3 lines a step, besides the
          // next panel's slice (without it 8 tokens ran 0.92 ×, when 5-8
          // tokens took this path too). Every tile doing so, as until
          // 2026-12-06, cost a prefetch of lines already in cache at each
          // step: on a Zen 5, the model alternated in one process, the
          // first tile alone ran Q4_K 8 / 16 / 512 tokens
          // 1.02-1.04 / 1.03-1.04 / 1.04-1.05 × and Q5_K 8 tokens 1.02 × in
          // both memory states (~48 and ~74 Q8_0 decode steps/s), Q5_K 512
          // tokens 1.03 × (fast state only).
          constexpr int64_t kLinesPerStep = (f.super_bytes / 32 + 63) / 64;
          const uint8_t* ahead = p + f.super_bytes + (k * 8 + g) * kLinesPerStep * 64;
#pragma GCC unroll 1
          for (int l = 0; l < kLinesPerStep; ++l)
            _mm_prefetch(reinterpret_cast<const char*>(ahead + 64 * l), _MM_HINT_T1);
        }
#pragma GCC unroll 2
        for (int h = 0; h < kH; ++h) {
          const __m512i wv = _mm512_loadu_si512(p + f.quant_offset + ((k * 8 + g) * kPanelRows + h * kHalfRows) * 4);
          __m512i lo = _mm512_and_si512(wv, low4), hi;
          if (kQ5) {
            const __m512i hv = _mm512_loadu_si512(p + f.high_offset + (g * kPanelRows + h * kHalfRows) * 4);
            lo = avx512::FiveBitCodes(wv, hv, 2 * k, false);
            hi = avx512::FiveBitCodes(wv, hv, 2 * k + 1, true);
          } else {
            hi = _mm512_and_si512(wv, high4);  // in place: 16 × the nibble
          }
#pragma GCC unroll 4
          for (int t = 0; t < kT; ++t) {
            int32_t l, u;
            std::memcpy(&l, tok[t].q + sb * kQK_K + 64 * k + 4 * g, 4);
            std::memcpy(&u, tok[t].q + sb * kQK_K + 64 * k + 32 + 4 * g, 4);
            lo_dot[h][t] = _mm512_dpbusd_epi32(lo_dot[h][t], lo, _mm512_set1_epi32(l));
            hi_dot[h][t] = _mm512_dpbusd_epi32(hi_dot[h][t], hi, _mm512_set1_epi32(u));
          }
        }
      }
      const int64_t s = sb * 8 + 2 * k;  // x's 32-block of sub-block 2k
#pragma GCC unroll 2
      for (int h = 0; h < kH; ++h) {
        const HalfScales w =
            kOwnScales ? ScalesOf(scale_bytes, d[h], dmin[h], h, k) : scales[(sb * kHalves + h) * 4 + k];
#pragma GCC unroll 4
        for (int t = 0; t < kT; ++t) {
          __m512 a = acc[h][t];
          a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(lo_dot[h][t]), _mm512_mul_ps(w.ws[0], _mm512_set1_ps(tok[t].d[s])), a);
          a = _mm512_fnmadd_ps(w.wm[0], _mm512_set1_ps(tok[t].dsum[s]), a);
          a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(kQ5 ? hi_dot[h][t] : _mm512_srai_epi32(hi_dot[h][t], 4)),
                              _mm512_mul_ps(w.ws[1], _mm512_set1_ps(tok[t].d[s + 1])), a);
          acc[h][t] = _mm512_fnmadd_ps(w.wm[1], _mm512_set1_ps(tok[t].dsum[s + 1]), a);
        }
      }
    }
  }
  for (int h = 0; h < kH; ++h)
    for (int t = 0; t < kT; ++t) _mm512_storeu_ps(y + t * y_stride + h * kHalfRows, acc[h][t]);
}

// Tile k of n_tiles' share of the next panel (next.n_rows = 0: none), spread
// over its sub-block pairs: each tile of a panel brings in a slice of the
// next one, so that with 8-16 tokens the read overlaps every tile's
// arithmetic instead of the first tile's alone (its own stream's one
// super-block lookahead).
NextSlice NextPanelSlice(const PanelPrefetch& next, int64_t n_super, int64_t k, int64_t n_tiles) {
  if (next.n_rows == 0) return {};
  const int64_t slice_bytes = next.n_rows * next.row_bytes / n_tiles;
  return {next.first + k * slice_bytes, (slice_bytes / (4 * n_super) + 63) / 64};
}

// Tokens from which a call decodes a panel's scales once into a scratch
// (PanelScales, 2 KiB a super-block column) for all its token tiles; below,
// each tile decodes them where its float steps use them, with its own
// stream's prefetch. On a Zen 5, the model's decode steps of P sequences
// alternated in one process (2 threads), tiles decoding their own against
// the scratch (time ratios): with GCC's clones of the tile, P = 6: 0.88 /
// 0.85 / 0.91 for tinyllama Q4_K / Q5_K / qwen3-30b-a3b-4l Q4_K, P = 8:
// 0.93-0.96 / 0.86 / 0.94-0.95 (so 9 until 2026-12-07); with each tile a
// function of its own, 9 / 10 / 12 sequences 1.09 / 1.09 / 1.08 × as fast
// for Q4_K and 1.07 / 1.09 / 1.01 × for Q5_K (the same harness read
// 0.96-1.04 where the code was the same), one panel path alone (one thread)
// 9-12 tokens 0.99-1.10 × for Q4_K and 1.02-1.22 × for Q5_K; from 13 tokens
// Q5_K lost (16: 0.97-0.99 ×, 24: 0.94-0.99 ×) and Q4_K gained little (16:
// 1.01-1.05 ×, 24: 1.01-1.02 ×). AVX2's: kAvx2ScalesOnceTokens.
constexpr int64_t kAvx512ScalesOnceTokens = 13;

// One whole panel (weights repacked at load) × every token, in tiles of up to
// 4 tokens. Up to 4 tokens (decode, speculation's verifying passes) take both
// halves in one pass over the panel; below kAvx512ScalesOnceTokens each tile
// decodes the scales and prefetches its own stream (kOwnScales), from it the
// tiles share scales decoded once and each prefetches a slice of the next
// panel.
template <bool kQ5>
void PanelMatMul(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts, int64_t n_tokens,
                 float* y, int64_t y_stride, const PanelPrefetch& next) {
  RIDGE_CHECK(n_valid_rows == kPanelRows);  // only weights repacked at load (whole panels) come here
  const ActLayout layout(n_cols);
  const int64_t n = n_cols / kQK_K, s = acts.row_stride;
  if (n_tokens < kAvx512ScalesOnceTokens) {
    return ForTokenTiles<4>(n_tokens, [&]<int kT>(int64_t t, int64_t) {
      Tile<kQ5, kT, true>(panel, n, layout, acts.data + t * s, s, y + t * y_stride, y_stride, nullptr, {}, true);
    });
  }
  thread_local ScratchBuffer scale_scratch;  // the running thread's
  auto* scales = reinterpret_cast<HalfScales*>(scale_scratch.Get(n * kHalves * 4 * sizeof(HalfScales)));
  PanelScales<kQ5>(panel, n, scales);
  const int64_t n_tiles = EvenTokenTiles(n_tokens, 4).n_tiles;
  ForTokenTiles<4>(n_tokens, [&]<int kT>(int64_t t, int64_t k) {
    Tile<kQ5, kT, false>(panel, n, layout, acts.data + t * s, s, y + t * y_stride, y_stride, scales,
                         NextPanelSlice(next, n, k, n_tiles), k == 0);
  });
}

}  // namespace

const TypeKernels* Avx512KQuantWeightPanelKernels(GgmlType type) {
  if (type == GgmlType::kQ6_K || type == GgmlType::kQ3_K || type == GgmlType::kQ2_K || type == GgmlType::kIQ4_XS)
    return Avx512Q6KKernels(type, /*repacked=*/true);
  if (type != GgmlType::kQ4_K && type != GgmlType::kQ5_K) return nullptr;
  // The layouts and their packers are AVX2's (an AVX-512 CPU runs AVX2 code).
  const auto kernels_of = [](GgmlType t, auto panel_matmul) {
    const TypeKernels& file_layout = *Avx512KQuantKernels(t);
    const TypeKernels& avx2_panels = *Avx2KQuantWeightPanelKernels(t);
    return TypeKernels{file_layout.row_acts,    file_layout.max_row_tokens, file_layout.rows,
                       file_layout.row_acts,    kPanelRows,                 1,
                       avx2_panels.panel_bytes, avx2_panels.pack_panel,     panel_matmul};
  };
  static const TypeKernels q4k = kernels_of(GgmlType::kQ4_K, PanelMatMul<false>);
  static const TypeKernels q5k = kernels_of(GgmlType::kQ5_K, PanelMatMul<true>);
  return type == GgmlType::kQ5_K ? &q5k : &q4k;
}

}  // namespace ridge::kernels::internal
