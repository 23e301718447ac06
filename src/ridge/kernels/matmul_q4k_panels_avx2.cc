// Q4_K and Q5_K weight panels for AVX2: the matrices repacked at load into
// the layouts of weight_panels.h (q4k; q5k, Q4_K's with the qh bytes added),
// multiplied in place for every token count. Q5_K is Q4_K with a fifth bit
// per code, OR-ed in after the nibble is taken; its codes (≤ 31) let an
// int16 pair sum reach 2·31·127, so its int16 sums run over 4 groups, not 8.
//
// Why: the rows kernel (matmul_kquant_avx2.cc) holds each row's 32 products
// of a sub-block in its own register and must reduce 8 of them across rows
// (7 vphaddw per 8 rows × 32 columns); on a core whose 256-bit ops are two
// 128-bit halves (Zen 1) that reduction and the per-row scale transposes
// cost more than the products, and decode ran at ~45 % of a paired read.
// In the panel layout a 32-byte load already holds 8 rows × 4 nibble pairs,
// a row per int32 lane: vpmaddubsw against a token's 4 activation bytes
// broadcast, int16 sums over the sub-block's 8 groups (≤ 8·2·15·127 < 2¹⁵,
// exact), one vpmaddwd, and the row's exact sub-block sum sits in its lane.
// The scale bytes are stored byte-major across rows, so 8 rows' scales and
// mins decode without a transpose. Each tile prefetches the next
// super-block while it multiplies one: on the Zen-1-class machine that took
// 1-token decode from ~51 % to ~67-70 % of a paired read (the hardware
// prefetcher alone fell behind; docs/benchmarks.md, "Q4_K weight panels").
//
// Float steps per (row, token), sub-blocks s in order, the same for Q4_K and
// Q5_K, as the rows kernel and matmul_kquant_avx512.cc take them (the same
// bits, file layout or repacked, any batch):
//   acc = fma(float(Σ_s q·x), (sc_s·d) · d_x, acc)
//   acc = fnmadd(m_s·dmin, d_x·Σq_x, acc)
#include "ridge/kernels/simd_avx2.h"

#include <cstring>

#include "ridge/base/error.h"
#include "ridge/kernels/kquant_rows_impl.h"
#include "ridge/kernels/matmul_isa.h"
#include "ridge/kernels/q4k_panel_scales_impl.h"
#include "ridge/kernels/scratch.h"
#include "ridge/kernels/weight_panels.h"

namespace ridge::kernels::internal {
namespace {

constexpr int64_t kPanelRows = panels::kRows;  // 32
constexpr int kQuarterRows = 8;                 // rows of one int32-lane register
constexpr int kQuarters = 4;

template <bool kQ5>
int64_t PanelBytes(int64_t n_cols) {
  return (n_cols / kQK_K) * panels::Q4KFamilyOf(kQ5).super_bytes;
}

// Rows [r_begin, r_begin + 32) of w (whole panels: CanRepack) into the panel layout.
template <bool kQ5>
void PackPanel(const MatView& w, int64_t r_begin, uint8_t* panel) {
  using namespace panels::q4k;  // d, dmin and the scales: at the same offsets for Q5_K
  constexpr panels::Q4KFamily f = panels::Q4KFamilyOf(kQ5);
  const int64_t n_super = w.n_cols / kQK_K;
  for (int64_t sb = 0; sb < n_super; ++sb) {
    uint8_t* out = panel + sb * f.super_bytes;
    for (int q = 0; q < kQuarters; ++q) {
      const uint8_t* rows[kQuarterRows];
      for (int i = 0; i < kQuarterRows; ++i)
        rows[i] = w.data + (r_begin + q * kQuarterRows + i) * w.row_bytes + sb * f.file_block_bytes;
      __m256i v[kQuarterRows];  // [g] = the 8 rows' group g of the 32 bytes loaded
      for (int k = 0; k < 4; ++k) {
        avx2::LoadTransposed8(rows, f.file_quant_offset + 32 * k, v);
        for (int g = 0; g < 8; ++g)
          _mm256_storeu_si256(
              reinterpret_cast<__m256i*>(out + f.quant_offset + ((k * 8 + g) * kPanelRows + q * kQuarterRows) * 4),
              v[g]);
      }
      if (kQ5) {
        avx2::LoadTransposed8(rows, f.file_high_offset, v);
        for (int g = 0; g < 8; ++g)
          _mm256_storeu_si256(
              reinterpret_cast<__m256i*>(out + f.high_offset + (g * kPanelRows + q * kQuarterRows) * 4), v[g]);
      }
    }
    for (int64_t j = 0; j < kPanelRows; ++j) {
      const uint8_t* block = w.data + (r_begin + j) * w.row_bytes + sb * f.file_block_bytes;
      for (int64_t b = 0; b < kScaleBytes; ++b) out[kScaleOffset + b * kPanelRows + j] = block[4 + b];
      std::memcpy(out + kDOffset + 2 * j, block, 2);
      std::memcpy(out + kDminOffset + 2 * j, block + 2, 2);
    }
  }
}

// d (or dmin) of quarter q's 8 rows, in lanes.
inline __attribute__((always_inline)) __m256 QuarterF16(const uint8_t* super, int64_t offset, int q) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(super + offset + 16 * q)));
}

// float(b_j) · d_j for 8 rows' scale (or min) bytes b and their d (or dmin).
inline __attribute__((always_inline)) __m256 ScaleTimes(const uint8_t* bytes8, __m256 d) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes8));
  return _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(b)), d);
}

// sc_s·d and m_s·dmin of quarter q's 8 rows (in lanes), for the 8 sub-blocks s.
inline __attribute__((always_inline)) void QuarterScales(const uint8_t* super, const Q4KScaleBytes& bytes, int q,
                                                         __m256 ws[8], __m256 wm[8]) {
  using namespace panels::q4k;
  const __m256 d = QuarterF16(super, kDOffset, q), dmin = QuarterF16(super, kDminOffset, q);
  for (int s = 0; s < 8; ++s) {
    ws[s] = ScaleTimes(bytes.sc[s] + q * kQuarterRows, d);
    wm[s] = ScaleTimes(bytes.mn[s] + q * kQuarterRows, dmin);
  }
}

// The floats sc_s·d and m_s·dmin of a whole panel, decoded once for a call
// that passes over it many times (prefill): [n_super][4 quarters][ws, wm][8 s].
template <bool kQ5>
void PanelScales(const uint8_t* panel, int64_t n_super, __m256* out) {
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const uint8_t* p = panel + sb * panels::Q4KFamilyOf(kQ5).super_bytes;
    Q4KScaleBytes scale_bytes;
    DecodeQ4KScaleBytes(p, scale_bytes);
    for (int q = 0; q < kQuarters; ++q) {
      __m256* o = out + (sb * kQuarters + q) * 16;
      QuarterScales(p, scale_bytes, q, o, o + 8);
    }
  }
}

// The codes of sub-blocks 2k (lo) and 2k + 1 (hi) in group g of one
// quarter's 8 rows (from row `rows`), a byte each: Q4_K's nibbles, Q5_K's
// with the fifth bit OR-ed in.
template <bool kQ5>
inline __attribute__((always_inline)) void Q4KFamilyCodes(const uint8_t* super, int k, int g, int64_t rows,
                                                          __m256i* lo, __m256i* hi) {
  constexpr panels::Q4KFamily f = panels::Q4KFamilyOf(kQ5);
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i wv = Load256(super + f.quant_offset + ((k * 8 + g) * kPanelRows + rows) * 4);
  *lo = _mm256_and_si256(wv, low4);
  *hi = _mm256_and_si256(_mm256_srli_epi16(wv, 4), low4);
  if (kQ5) {
    const __m256i hv = Load256(super + f.high_offset + (g * kPanelRows + rows) * 4);
    *lo = _mm256_or_si256(*lo, BitOfBytes(hv, 2 * k, 4));
    *hi = _mm256_or_si256(*hi, BitOfBytes(hv, 2 * k + 1, 4));
  }
}

// Bytes of Q5_K codes decoded once (DecodeQ5Codes), a super-block column of a
// panel: 256 columns × 32 rows.
constexpr int64_t kDecodedSuperBytes = kQK_K * kPanelRows;
// From 12 tokens a call decodes once; below, each tile decodes its own. Zen 5
// under RIDGE_ISA=avx2, the tinyllama-1.1b model's forward pass, the two
// alternated in one process: 8 / 12 / 16 / 64 tokens 0.99 / 1.07 / 1.12 /
// 1.30 ×. Q4_K (3 ops saved, not 9) gained 1.01-1.02 × at 64-512 tokens and
// lost at 32, so it keeps decoding in its tiles. Zen 1-3 not measured.
constexpr int64_t kQ5DecodeOnceTokens = 12;
// Panels up to 8192 columns (measured: 2048 and 5632, 64 and 176 KiB of
// codes, in L2); wider ones, not measured, keep decoding in each tile.
constexpr int64_t kMaxDecodedBytes = 32 * kDecodedSuperBytes;

// Q5_K's codes of a whole panel as bytes (≤ 31), decoded once for a call
// whose tiles pass over it many times (prefill), so that a tile loads them
// instead of taking the nibbles and merging the fifth bits again (9 ops a
// group and quarter, against 16 products for 4 tokens):
// [n_super][4 k][8 g][4 quarters][lo 32 bytes, hi 32 bytes].
void DecodeQ5Codes(const uint8_t* panel, int64_t n_super, uint8_t* out) {
  constexpr panels::Q4KFamily f = panels::Q4KFamilyOf(true);
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const uint8_t* p = panel + sb * f.super_bytes;
    for (int k = 0; k < 4; ++k)
      for (int g = 0; g < 8; ++g) {
        const uint8_t* ahead = p + f.super_bytes + (k * 8 + g) * f.file_block_bytes;
        for (int l = 0; l < 3; ++l) _mm_prefetch(reinterpret_cast<const char*>(ahead + 64 * l), _MM_HINT_T0);
        for (int q = 0; q < kQuarters; ++q) {
          __m256i lo, hi;
          Q4KFamilyCodes<true>(p, k, g, q * kQuarterRows, &lo, &hi);
          uint8_t* o = out + (((sb * 4 + k) * 8 + g) * kQuarters + q) * 64;
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(o), lo);
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(o + 32), hi);
        }
      }
  }
}

// Quarters [k0, k0 + kQ) of one panel × kT tokens over all super-blocks.
// y points at the panel's row 0 for the tile's first token. kOwnScales (up
// to 8 tokens): the tile decodes the scales on the way, `scales` unused;
// otherwise `scales` is the panel's PanelScales. `first_pass`: the first
// tile over the panel, which brings each next super-block into L1 as it
// goes; the tiles after it (3 tokens and more) find the panel in cache and
// issue no prefetch of it. kDecoded (Q5_K): the codes are read from `codes`
// (DecodeQ5Codes), not from the panel. The variants are template arguments
// and each tile a function of its own, not left to GCC's clones and
// inlining, as on AVX-512 (matmul_q4k_panels_avx512.cc).
template <bool kQ5, int kT, int kQ, bool kOwnScales, bool kDecoded>
[[gnu::noinline]] void Tile(const uint8_t* panel, int64_t n_super, int k0, const ActLayout& layout, const uint8_t* acts,
                            int64_t act_stride, float* y, int64_t y_stride, const __m256* scales, bool first_pass,
                            const uint8_t* codes) {
  static_assert(!(kOwnScales && kDecoded));
  constexpr panels::Q4KFamily f = panels::Q4KFamilyOf(kQ5);
  TokenActs tok[kT];
  for (int t = 0; t < kT; ++t) tok[t] = TokenActs(acts + t * act_stride, layout);
  const __m256i ones16 = _mm256_set1_epi16(1);
  __m256 acc[kQ][kT];
  for (int q = 0; q < kQ; ++q)
    for (int t = 0; t < kT; ++t) acc[q][t] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const uint8_t* p = panel + sb * f.super_bytes;
    // Without `scales` (up to 8 tokens), each sub-block's sc·d and m·dmin are
    // made where the float steps use them. Made for the whole super-block up
    // front, 64 vectors went through the stack: on Zen 1 (one 128-bit store
    // a cycle) 1-token decode from L2 (BM_DecodeFromCache/Q4_K_repacked)
    // took 7 % longer, and from memory read 69 % of a paired read against
    // 76 % now (medians of 6 rounds, docs/benchmarks.md).
    Q4KScaleBytes scale_bytes;
    __m256 d[kQ] = {}, dmin[kQ] = {};  // set and read only with kOwnScales
    if constexpr (kOwnScales) {
      DecodeQ4KScaleBytes(p, scale_bytes);
      for (int q = 0; q < kQ; ++q) {
        d[q] = QuarterF16(p, panels::q4k::kDOffset, k0 + q);
        dmin[q] = QuarterF16(p, panels::q4k::kDminOffset, k0 + q);
      }
    }
    for (int k = 0; k < 4; ++k) {  // sub-blocks 2k (low nibbles) and 2k + 1 (high)
      // Exact int16 sums over a run of groups, to int32 (one vpmaddwd) after
      // it: Q4_K's whole sub-block (8 groups, ≤ 8·2·15·127 < 2¹⁵), Q5_K's in
      // two runs of 4 (≤ 4·2·31·127 < 2¹⁵). Q5_K took each group to int32 at
      // once until 2026-12-06 (a vpmaddwd and a vpaddd more a group): on a
      // Zen 5 under RIDGE_ISA=avx2 the runs of 4 made the model's forward
      // pass 1.08-1.11 × at 8-512 tokens, level at 1 token.
      constexpr int kRunGroups = kQ5 ? 4 : 8;
      __m256i lo_dot[kQ][kT], hi_dot[kQ][kT];  // int32 sums of sub-blocks 2k and 2k + 1
      for (int q = 0; q < kQ; ++q)
        for (int t = 0; t < kT; ++t) lo_dot[q][t] = hi_dot[q][t] = _mm256_setzero_si256();
#pragma GCC unroll 2
      for (int g0 = 0; g0 < 8; g0 += kRunGroups) {
        __m256i lo16[kQ][kT], hi16[kQ][kT];
        for (int q = 0; q < kQ; ++q)
          for (int t = 0; t < kT; ++t) lo16[q][t] = hi16[q][t] = _mm256_setzero_si256();
#pragma GCC unroll 1
        for (int g = g0; g < g0 + kRunGroups; ++g) {
          // The next super-block, 1/32 of it a step (past the last, a prefetch
          // of whatever follows), by the panel's first tile only: on a Zen 5
          // under RIDGE_ISA=avx2, every tile doing so ran Q4_K 16 tokens 0.98-0.99
          // × (8 and 512 tokens level); Zen 1-3 not measured.
          if (first_pass) {
            const uint8_t* ahead = p + f.super_bytes + (k * 8 + g) * f.file_block_bytes;
            _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
            _mm_prefetch(reinterpret_cast<const char*>(ahead + 64), _MM_HINT_T0);
            if (kQ5) _mm_prefetch(reinterpret_cast<const char*>(ahead + 128), _MM_HINT_T0);
          }
          __m256i xl[kT], xh[kT];  // a token's 4 activation bytes of each sub-block, broadcast
          for (int t = 0; t < kT; ++t) {
            int32_t l, h;
            std::memcpy(&l, tok[t].q + sb * kQK_K + 64 * k + 4 * g, 4);
            std::memcpy(&h, tok[t].q + sb * kQK_K + 64 * k + 32 + 4 * g, 4);
            xl[t] = _mm256_set1_epi32(l);
            xh[t] = _mm256_set1_epi32(h);
          }
#pragma GCC unroll 4
          for (int q = 0; q < kQ; ++q) {
            const int64_t rows = (k0 + q) * kQuarterRows;
            __m256i lo, hi;
            if (kDecoded) {
              const uint8_t* c = codes + (((sb * 4 + k) * 8 + g) * kQuarters + k0 + q) * 64;
              lo = Load256(c);
              hi = Load256(c + 32);
            } else {
              Q4KFamilyCodes<kQ5>(p, k, g, rows, &lo, &hi);
            }
#pragma GCC unroll 4
            for (int t = 0; t < kT; ++t) {
              lo16[q][t] = _mm256_add_epi16(lo16[q][t], _mm256_maddubs_epi16(lo, xl[t]));
              hi16[q][t] = _mm256_add_epi16(hi16[q][t], _mm256_maddubs_epi16(hi, xh[t]));
            }
          }
        }
        for (int q = 0; q < kQ; ++q)
          for (int t = 0; t < kT; ++t) {
            const __m256i lo32 = _mm256_madd_epi16(lo16[q][t], ones16), hi32 = _mm256_madd_epi16(hi16[q][t], ones16);
            lo_dot[q][t] = _mm256_add_epi32(lo_dot[q][t], lo32);
            hi_dot[q][t] = _mm256_add_epi32(hi_dot[q][t], hi32);
          }
      }
      const int64_t s = sb * 8 + 2 * k;  // x's 32-block of sub-block 2k
#pragma GCC unroll 4
      for (int q = 0; q < kQ; ++q) {
        __m256 ws_lo, ws_hi, wm_lo, wm_hi;  // sc·d and m·dmin of sub-blocks 2k and 2k + 1
        if constexpr (!kOwnScales) {
          const __m256* sq = scales + (sb * kQuarters + k0 + q) * 16;
          ws_lo = sq[2 * k], ws_hi = sq[2 * k + 1], wm_lo = sq[8 + 2 * k], wm_hi = sq[8 + 2 * k + 1];
        } else {
          const int64_t rows = (k0 + q) * kQuarterRows;
          ws_lo = ScaleTimes(scale_bytes.sc[2 * k] + rows, d[q]);
          ws_hi = ScaleTimes(scale_bytes.sc[2 * k + 1] + rows, d[q]);
          wm_lo = ScaleTimes(scale_bytes.mn[2 * k] + rows, dmin[q]);
          wm_hi = ScaleTimes(scale_bytes.mn[2 * k + 1] + rows, dmin[q]);
        }
#pragma GCC unroll 4
        for (int t = 0; t < kT; ++t) {
          __m256 a = acc[q][t];
          a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lo_dot[q][t]), _mm256_mul_ps(ws_lo, _mm256_set1_ps(tok[t].d[s])), a);
          a = _mm256_fnmadd_ps(wm_lo, _mm256_set1_ps(tok[t].dsum[s]), a);
          const __m256 hi_scale = _mm256_mul_ps(ws_hi, _mm256_set1_ps(tok[t].d[s + 1]));
          a = _mm256_fmadd_ps(_mm256_cvtepi32_ps(hi_dot[q][t]), hi_scale, a);
          acc[q][t] = _mm256_fnmadd_ps(wm_hi, _mm256_set1_ps(tok[t].dsum[s + 1]), a);
        }
      }
    }
  }
  for (int q = 0; q < kQ; ++q)
    for (int t = 0; t < kT; ++t) _mm256_storeu_ps(y + t * y_stride + (k0 + q) * kQuarterRows, acc[q][t]);
}

// Every quarter of one panel × tiles of up to 4 tokens (EvenTokenTiles: 5 as
// 3 + 2, 9 as 3 + 3 + 3), each tile decoding its own scales (kOwnScales) or
// on the panel's `scales`, and (kDecoded) `codes` decoded once.
template <bool kQ5, bool kOwnScales, bool kDecoded>
void AllTokenTiles(const uint8_t* panel, int64_t n_super, const ActLayout& layout, const ActView& acts,
                   int64_t n_tokens, float* y, int64_t y_stride, const __m256* scales, const uint8_t* codes) {
  const int64_t s = acts.row_stride;
  ForTokenTiles<4>(n_tokens, [&]<int kT>(int64_t t, int64_t k) {
    for (int q = 0; q < kQuarters; ++q) {
      const bool first = !kDecoded && k == 0 && q == 0;  // decoding once streamed the panel
      Tile<kQ5, kT, 1, kOwnScales, kDecoded>(panel, n_super, q, layout, acts.data + t * s, s, y + t * y_stride,
                                             y_stride, scales, first, codes);
    }
  });
}

// Tokens from which a call decodes a panel's scales once into a scratch
// (PanelScales, 2 KiB a super-block column) for all its token tiles; below,
// each tile decodes them where its float steps use them. On a Zen 5 under
// RIDGE_ISA=avx2, the model's decode steps of P sequences alternated in one
// process (2 threads), tiles decoding their own against the scratch (time
// ratios, tinyllama Q4_K / Q5_K): P = 3: 0.88 / 0.87, 4: 0.88, 6: 0.96, 8:
// 0.97; three tiles or more level (P = 12: 0.99-1.02, 16: 1.00-1.01). With
// each tile a function of its own (2026-12-07), up to 12 tokens as on
// AVX-512 ran Q4_K P = 9 / 10 / 12 in 0.98 / 1.00 / 1.03 × the time and Q5_K
// 1.00 / 0.99-1.00 / 1.14-1.18 × (from 12 tokens Q5_K's scratch path also
// decodes the codes once), so 9 stays. AVX-512's: kAvx512ScalesOnceTokens.
constexpr int64_t kAvx2ScalesOnceTokens = 9;

// One whole panel (weights repacked at load) × every token. 1 token takes the
// 4 quarters together (one pass over the panel in memory order, each
// activation broadcast serving 4 quarters), 2 tokens 2 quarters at a time,
// more tokens 1 quarter × up to 4 tokens (the register budget: 16 ymm), each
// tile decoding the scales it uses, or from kAvx2ScalesOnceTokens on scales
// decoded once and (Q5_K, from 12 tokens) codes decoded once.
template <bool kQ5>
void PanelMatMul(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts, int64_t n_tokens,
                 float* y, int64_t y_stride, const PanelPrefetch& /*next: Tile prefetches its own stream*/) {
  RIDGE_CHECK(n_valid_rows == kPanelRows);  // only weights repacked at load (whole panels) come here
  const ActLayout layout(n_cols);
  const int64_t n = n_cols / kQK_K, s = acts.row_stride;
  if (n_tokens == 1)
    return Tile<kQ5, 1, 4, true, false>(panel, n, 0, layout, acts.data, s, y, y_stride, nullptr, true, nullptr);
  if (n_tokens == 2) {
    for (int k0 = 0; k0 < kQuarters; k0 += 2)
      Tile<kQ5, 2, 2, true, false>(panel, n, k0, layout, acts.data, s, y, y_stride, nullptr, true, nullptr);
    return;
  }
  if (n_tokens < kAvx2ScalesOnceTokens)
    return AllTokenTiles<kQ5, true, false>(panel, n, layout, acts, n_tokens, y, y_stride, nullptr, nullptr);
  thread_local ScratchBuffer scale_scratch;  // the running thread's
  auto* scales = reinterpret_cast<__m256*>(scale_scratch.Get(n * kQuarters * 16 * 32));
  PanelScales<kQ5>(panel, n, scales);
  if constexpr (kQ5) {
    if (n_tokens >= kQ5DecodeOnceTokens && n * kDecodedSuperBytes <= kMaxDecodedBytes) {
      thread_local ScratchBuffer code_scratch;  // the running thread's
      uint8_t* codes = code_scratch.Get(n * kDecodedSuperBytes);
      DecodeQ5Codes(panel, n, codes);
      return AllTokenTiles<kQ5, false, true>(panel, n, layout, acts, n_tokens, y, y_stride, scales, codes);
    }
  }
  AllTokenTiles<kQ5, false, false>(panel, n, layout, acts, n_tokens, y, y_stride, scales, nullptr);
}

template <bool kQ5>
TypeKernels KernelsOf(GgmlType type) {
  return TypeKernels{Avx2KQuantActPrep(), 4,          Avx2KQuantKernels(type)->rows,
                     Avx2KQuantActPrep(), kPanelRows, 1,
                     PanelBytes<kQ5>,     PackPanel<kQ5>, PanelMatMul<kQ5>};
}

}  // namespace

const TypeKernels* Avx2KQuantWeightPanelKernels(GgmlType type) {
  if (type == GgmlType::kQ6_K || type == GgmlType::kQ3_K || type == GgmlType::kQ2_K || type == GgmlType::kIQ4_XS)
    return Avx2Q6KKernels(type, /*repacked=*/true);
  static const TypeKernels q4k = KernelsOf<false>(GgmlType::kQ4_K), q5k = KernelsOf<true>(GgmlType::kQ5_K);
  if (type == GgmlType::kQ4_K) return &q4k;
  if (type == GgmlType::kQ5_K) return &q5k;
  return nullptr;
}

}  // namespace ridge::kernels::internal
