// Q6_K, Q3_K and Q2_K on AVX-512 (VNNI). Weights repacked at load into the
// panel layouts of weight_panels.h (q6k, q3k, q2k) are multiplied in place
// by the panel tiles (kquant_panel_matmul_avx512_impl.h); weights in the
// file's layout (--mmap) take a rows tile for 1-4 tokens and panels packed
// per call from 5 on. Every path takes the same steps, so the bits are the
// same whichever layout, path or batch. IQ4_XS takes the same steps in
// matmul_iq4xs_avx512.cc.
//
// w = d·sc_g·(c − z) − dmin·m_g, 16 groups g of 16 elements with an int8
// scale: Q6_K's c 6-bit, z = 32; Q3_K's c = its 2 bits of qs with a bit of
// hmask above, z = 4, and sc its 6-bit scale − 32; Q2_K's c 2-bit, z = 0,
// sc 4-bit, and a 4-bit min m_g (the others have none). Each group's sum
// starts from −z·Σx of the group (from the activations' gbias, −32·Σx, or
// per 4-byte lane their bias), so it is S_g = Σ(c − z)·x, exact. Steps per
// (row, token), x's 32-blocks b in order (d, dmin: b's super-block's):
//   I_b = sc_{2b}·S_{2b} + sc_{2b+1}·S_{2b+1}     exact int32 (|I_b| < 2²⁶)
//   acc = fma(float(I_b), d·d_x(b), acc)
//   acc = fnmadd(dmin·m_g, gsum_g, acc), g = 2b, 2b + 1   (Q2_K; gsum_g = d_x·Σx of g)
//
// Panels: a 64-byte load holds 16 rows' 4 bytes of a chunk (a row per int32
// lane); a code is a chunk's bits with bits of another chunk selected above
// them (vpternlogd) and masked, and one vpdpbusd against a token's 4
// activation bytes broadcast adds a row's 4 products to its lane.
// Rows (file layout): a row at a time, its 32 codes of block b in a register
// as the file holds them, one vpdpbusd per row and token, the lanes scaled
// by their group's scale and a super-block's 8 blocks reduced at once.
#include <algorithm>
#include <cstring>

#include "ridge/kernels/matmul_isa.h"
#include "ridge/kernels/prefetch_spread_impl.h"
#include "ridge/kernels/simd_avx512.h"
#include "ridge/kernels/weight_panels.h"
// After simd_avx512.h (the intrinsics).
#include "ridge/kernels/kquant_rows_impl.h"
#include "ridge/kernels/kquant_group_scales_impl.h"
#include "ridge/kernels/kquant_panel_matmul_avx512_impl.h"

namespace ridge::kernels::internal {
namespace {

// The 6-bit codes of element set m (0..3) of 16 rows × 4 elements: `ql` the
// rows' bytes of chunk 2h + m % 2, `qh` of chunk 4 + h. Bits 0-3 come from
// the nibble, bits 4-5 from qh's bits 2m, 2m + 1; 16-bit shifts may carry
// bits across bytes only into positions the select or the mask drops.
template <int kM>
inline __attribute__((always_inline)) __m512i Codes(__m512i ql, __m512i qh) {
  const __m512i nibble = _mm512_set1_epi8(0x0f), six = _mm512_set1_epi8(0x3f);
  const __m512i low = kM < 2 ? ql : _mm512_srli_epi16(ql, 4);
  const __m512i high = kM == 0 ? _mm512_slli_epi16(qh, 4)
                       : kM == 1 ? _mm512_slli_epi16(qh, 2)
                       : kM == 2 ? qh
                                 : _mm512_srli_epi16(qh, 2);
  // nibble ? low : high, bit by bit (vpternlogd 0xe4), then bits 6-7 cleared.
  return _mm512_and_si512(_mm512_ternarylogic_epi32(low, high, nibble, 0xe4), six);
}

// The 3-bit codes of element set m (0..3) of file half h, 16 rows × 4
// elements: `qs` the rows' bytes of qs chunk h, `hm` of the hmask chunk;
// bits 0-1 from qs's bits 2m, 2m + 1, bit 2 from hm's bit 4h + m. 16-bit
// shifts carry bits across bytes only into positions the select or the mask drops.
template <int kH, int kM>
inline __attribute__((always_inline)) __m512i Q3Codes(__m512i qs, __m512i hm) {
  constexpr int kShift = 4 * kH + kM - 2;  // hm's bit to bit 2
  const __m512i low = kM == 0 ? qs : _mm512_srli_epi16(qs, 2 * kM);
  const __m512i high = kShift < 0 ? _mm512_slli_epi16(hm, -kShift) : kShift == 0 ? hm : _mm512_srli_epi16(hm, kShift);
  // bits 0-1 ? low : high (vpternlogd 0xe4), then bits 3-7 cleared.
  return _mm512_and_si512(_mm512_ternarylogic_epi32(low, high, _mm512_set1_epi8(3), 0xe4), _mm512_set1_epi8(7));
}

// The 2-bit codes of element set m (0..3), 16 rows × 4 elements: bits 2m, 2m + 1 of qs.
template <int kM>
inline __attribute__((always_inline)) __m512i Q2Codes(__m512i qs) {
  return _mm512_and_si512(kM == 0 ? qs : _mm512_srli_epi16(qs, 2 * kM), _mm512_set1_epi8(3));
}

// One panel × 1 token (decode), both halves: the four element sets m of a
// chunk group k together, so the panel is read once, strictly forward, in
// the layout's order.
void Tile1(const uint8_t* panel, int64_t n_super, const ActLayout& layout, const uint8_t* acts, float* y,
           int64_t n_valid_rows) {
  using namespace panels::q6k;
  constexpr int kH = 2;
  const TokenActs tok(acts, layout);
  __m512 acc[kH] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const uint8_t* p = panel + sb * kSuperBytes;
    __m512 d[kH];
    for (int h = 0; h < kH; ++h)
      d[h] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kDOffset + 2 * kHalfRows * h)));
#pragma GCC unroll 1
    for (int fh = 0; fh < 2; ++fh) {
      const int64_t b0 = sb * 8 + 4 * fh;  // x's block of m = 0
      __m512i scaled[4][kH];
#pragma GCC unroll 2
      for (int gi = 0; gi < 2; ++gi) {
        __m512i sum[4][kH];
        for (int m = 0; m < 4; ++m)
          for (int h = 0; h < kH; ++h) sum[m][h] = _mm512_set1_epi32(tok.gbias[2 * (b0 + m) + gi]);
#pragma GCC unroll 4
        for (int k = 4 * gi; k < 4 * gi + 4; ++k) {
          // Each line of the stream once, a super-block and a half ahead, into
          // L1: 6-7 lines a step (its 105 over 16 steps), in a loop kept
          // rolled: measured (BM_FewTokens/Q6_K_repacked/1, 2 threads, Zen 4),
          // no software prefetch streamed 18-23 GB/s, 7 prefetches unrolled
          // back to back 18, this loop 48-50. Zen 5, tg in one process, ABBA
          // against the next super-block's lines into L2, 7 a step (112, some
          // twice): 79.6 -> 86.5 t/s (1.09) when the host's read ran at ~83
          // GB/s, 1.05 at ~54 GB/s; one super-block ahead 1.08 and 1.06.
          // Intel not measured with it: there T1 had beaten T0, one
          // super-block ahead (paired read 72-76 % -> 83-86 %).
          constexpr int64_t kLines = kSuperBytes / 64;  // 105
          static_assert(kSuperBytes % 64 == 0);
          const uint8_t* ahead = p + (3 * kLines / 2) * 64;
          const int64_t step = fh * 8 + k;
          PrefetchLinesOfStep<_MM_HINT_T0>(ahead, kLines, step, 16);
          __m512i x[4];
          for (int m = 0; m < 4; ++m) {
            int32_t x4;
            std::memcpy(&x4, tok.q + (b0 + m) * kActBlock + 4 * k, 4);
            x[m] = _mm512_set1_epi32(x4);
          }
#pragma GCC unroll 2
          for (int h = 0; h < kH; ++h) {
            const uint8_t* at = p + QuantAt(2 * fh, k) + h * kHalfRows * 4;  // the 3 chunks, kGroupBytes apart
            const __m512i a = _mm512_loadu_si512(at), b = _mm512_loadu_si512(at + kGroupBytes);
            const __m512i hb = _mm512_loadu_si512(at + 2 * kGroupBytes);
            sum[0][h] = _mm512_dpbusd_epi32(sum[0][h], Codes<0>(a, hb), x[0]);
            sum[1][h] = _mm512_dpbusd_epi32(sum[1][h], Codes<1>(b, hb), x[1]);
            sum[2][h] = _mm512_dpbusd_epi32(sum[2][h], Codes<2>(a, hb), x[2]);
            sum[3][h] = _mm512_dpbusd_epi32(sum[3][h], Codes<3>(b, hb), x[3]);
          }
        }
        for (int m = 0; m < 4; ++m) {
          const int64_t g = 8 * fh + 2 * m + gi;
          for (int h = 0; h < kH; ++h) {
            const __m512i sc = _mm512_cvtepi8_epi32(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kScaleOffset + g * kPanelRows + h * kHalfRows)));
            const __m512i s = _mm512_mullo_epi32(sum[m][h], sc);
            scaled[m][h] = gi == 0 ? s : _mm512_add_epi32(scaled[m][h], s);
          }
        }
      }
      for (int m = 0; m < 4; ++m)
        for (int h = 0; h < kH; ++h)
          acc[h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(scaled[m][h]), _mm512_mul_ps(d[h], _mm512_set1_ps(tok.d[b0 + m])),
                                   acc[h]);
    }
  }
  for (int h = 0; h < kH; ++h) {
    const int64_t valid = std::clamp<int64_t>(n_valid_rows - h * kHalfRows, 0, kHalfRows);
    _mm512_mask_storeu_ps(y + h * kHalfRows, static_cast<__mmask16>((1u << valid) - 1), acc[h]);
  }
}

// Q3_K's or Q2_K's panel × 1 token (P: Q3KPanels, Q2KPanels below): Tile1's
// steps and order, the scales (and Q2_K's mins, each block's fma followed by
// its two groups') decoded a super-block at a time, a file half's codes from
// its qs chunk (and Q3_K's hmask chunk; the half a template argument: each
// code's hmask bit a fixed shift away).
template <typename P>
void SmallCodesTile1(const uint8_t* panel, int64_t n_super, const ActLayout& layout, const uint8_t* acts, float* y,
                     int64_t n_valid_rows) {
  constexpr int kH = 2;
  const TokenActs tok(acts, layout);
  __m512 acc[kH] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
  GroupScales scales;
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const uint8_t* p = panel + sb * P::kSuperBytes;
    P::DecodeScales(p, scales);
    __m512 d[kH];
    static_assert(panels::q3k::kDOffset == 0 && panels::q2k::kDOffset == 0);
    for (int h = 0; h < kH; ++h)
      d[h] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 2 * kHalfRows * h)));
    auto file_half = [&]<int kFh>() {
      const int64_t b0 = sb * 8 + 4 * kFh;  // x's block of m = 0
      __m512i scaled[4][kH];
#pragma GCC unroll 2
      for (int gi = 0; gi < 2; ++gi) {
        __m512i sum[4][kH];
        for (int m = 0; m < 4; ++m)
          for (int h = 0; h < kH; ++h) sum[m][h] = _mm512_set1_epi32(P::Bias(tok.gbias[2 * (b0 + m) + gi]));
#pragma GCC unroll 4
        for (int k = 4 * gi; k < 4 * gi + 4; ++k) {
          // Each line once, a super-block and a half ahead, into L1, as Tile1.
          constexpr int64_t kLines = P::kSuperBytes / 64;  // Q3_K 55, Q2_K 42
          static_assert(P::kSuperBytes % 64 == 0);
          const uint8_t* ahead = p + (3 * kLines / 2) * 64;
          const int64_t step = kFh * 8 + k;
          PrefetchLinesOfStep<_MM_HINT_T0>(ahead, kLines, step, 16);
          __m512i x[4];
          for (int m = 0; m < 4; ++m) {
            int32_t x4;
            std::memcpy(&x4, tok.q + (b0 + m) * kActBlock + 4 * k, 4);
            x[m] = _mm512_set1_epi32(x4);
          }
#pragma GCC unroll 2
          for (int h = 0; h < kH; ++h) {
            const __m512i qs = _mm512_loadu_si512(p + P::QsAt(kFh, k) + h * kHalfRows * 4);
            const __m512i hm = _mm512_loadu_si512(p + P::HmAt(kFh, k) + h * kHalfRows * 4);
            sum[0][h] = _mm512_dpbusd_epi32(sum[0][h], P::template Codes<kFh, 0>(qs, hm), x[0]);
            sum[1][h] = _mm512_dpbusd_epi32(sum[1][h], P::template Codes<kFh, 1>(qs, hm), x[1]);
            sum[2][h] = _mm512_dpbusd_epi32(sum[2][h], P::template Codes<kFh, 2>(qs, hm), x[2]);
            sum[3][h] = _mm512_dpbusd_epi32(sum[3][h], P::template Codes<kFh, 3>(qs, hm), x[3]);
          }
        }
        for (int m = 0; m < 4; ++m) {
          const int64_t g = 8 * kFh + 2 * m + gi;
          for (int h = 0; h < kH; ++h) {
            const __m512i sc = _mm512_cvtepi8_epi32(
                _mm_load_si128(reinterpret_cast<const __m128i*>(scales.sc + g * panels::kRows + h * kHalfRows)));
            const __m512i s = _mm512_mullo_epi32(sum[m][h], sc);
            scaled[m][h] = gi == 0 ? s : _mm512_add_epi32(scaled[m][h], s);
          }
        }
      }
      for (int m = 0; m < 4; ++m) {
        const int64_t b = b0 + m;
        for (int h = 0; h < kH; ++h) {
          acc[h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(scaled[m][h]), _mm512_mul_ps(d[h], _mm512_set1_ps(tok.d[b])),
                                   acc[h]);
          if constexpr (P::kMins) {
            for (int gi = 0; gi < 2; ++gi) {
              const int64_t g = 8 * kFh + 2 * m + gi;
              acc[h] = _mm512_fnmadd_ps(_mm512_load_ps(scales.mins + g * panels::kRows + h * kHalfRows),
                                        _mm512_set1_ps(tok.gsum[2 * b + gi]), acc[h]);
            }
          }
        }
      }
    };
    file_half.template operator()<0>();
    file_half.template operator()<1>();
  }
  for (int h = 0; h < kH; ++h) {
    const int64_t valid = std::clamp<int64_t>(n_valid_rows - h * kHalfRows, 0, kHalfRows);
    _mm512_mask_storeu_ps(y + h * kHalfRows, static_cast<__mmask16>((1u << valid) - 1), acc[h]);
  }
}

// From kTile1MaxTokens + 1 tokens on, a stretch of the panel's codes is
// decoded once (weight_panels.h, q6k::kCodeBlockBytes) and every token multiplied against
// the decoded bytes. Decoding them again for each 4 tokens (shifts, selects
// and masks: a third of the vector work) ran 5-9 tokens 10-40 % and 64
// tokens ~12 % slower; at 512 the two were level (BM_FewTokens,
// BM_Prefill/Q6_K, 2 threads, Zen 4), the float steps and vpmulld bounding
// both (timing hacks: without vpmulld +11 %, without the float steps +24 %).

// codes[(sb − sb0)·8 + fh·4 + m] ← the codes of 32-block m of file half fh,
// super-blocks [sb0, sb_end) of the panel. The AVX2 twin (matmul_q6k_avx2.cc)
// writes the same bytes; calling it here instead made 5-9 tokens ~10 % slower
// (BM_FewTokens/Q6_K_repacked, Zen 4): a 5-token pass is speculation's K = 4.
void DecodeStretch(const uint8_t* panel, int64_t sb0, int64_t sb_end, uint8_t* codes) {
  using namespace panels::q6k;
  for (int64_t sb = sb0; sb < sb_end; ++sb) {
    const uint8_t* p = panel + sb * kSuperBytes;
    for (int fh = 0; fh < 2; ++fh) {
      uint8_t* out = codes + ((sb - sb0) * 8 + 4 * fh) * kCodeBlockBytes;
      for (int k = 0; k < 8; ++k) {
        for (int h = 0; h < 2; ++h) {
          const uint8_t* at = p + QuantAt(2 * fh, k) + h * kHalfRows * 4;
          const __m512i a = _mm512_loadu_si512(at), b = _mm512_loadu_si512(at + kGroupBytes);
          const __m512i hb = _mm512_loadu_si512(at + 2 * kGroupBytes);
          uint8_t* o = out + (k * 2 + h) * 64;
          _mm512_store_si512(o + 0 * kCodeBlockBytes, Codes<0>(a, hb));
          _mm512_store_si512(o + 1 * kCodeBlockBytes, Codes<1>(b, hb));
          _mm512_store_si512(o + 2 * kCodeBlockBytes, Codes<2>(a, hb));
          _mm512_store_si512(o + 3 * kCodeBlockBytes, Codes<3>(b, hb));
        }
      }
    }
  }
}

// Q3_K's and Q2_K's DecodeStretch: the same code layout from their panels
// (codes 0..7, 0..3), and scales[sb − sb0] ← each super-block's decoded
// scales (and mins). P: Q3KPanels, Q2KPanels below.
template <typename P>
void SmallCodesDecodeStretch(const uint8_t* panel, int64_t sb0, int64_t sb_end, uint8_t* codes, GroupScales* scales) {
  using panels::q6k::kCodeBlockBytes;
  for (int64_t sb = sb0; sb < sb_end; ++sb) {
    const uint8_t* p = panel + sb * P::kSuperBytes;
    P::DecodeScales(p, scales[sb - sb0]);
    uint8_t* out = codes + (sb - sb0) * 8 * kCodeBlockBytes;
    for (int k = 0; k < 8; ++k) {
      for (int h = 0; h < 2; ++h) {
        const int64_t rows = h * kHalfRows * 4;
        const __m512i qs0 = _mm512_loadu_si512(p + P::QsAt(0, k) + rows),
                      qs1 = _mm512_loadu_si512(p + P::QsAt(1, k) + rows);
        const __m512i hm = _mm512_loadu_si512(p + P::HmAt(0, k) + rows);
        uint8_t* o = out + (k * 2 + h) * 64;
        _mm512_store_si512(o + 0 * kCodeBlockBytes, P::template Codes<0, 0>(qs0, hm));
        _mm512_store_si512(o + 1 * kCodeBlockBytes, P::template Codes<0, 1>(qs0, hm));
        _mm512_store_si512(o + 2 * kCodeBlockBytes, P::template Codes<0, 2>(qs0, hm));
        _mm512_store_si512(o + 3 * kCodeBlockBytes, P::template Codes<0, 3>(qs0, hm));
        _mm512_store_si512(o + 4 * kCodeBlockBytes, P::template Codes<1, 0>(qs1, hm));
        _mm512_store_si512(o + 5 * kCodeBlockBytes, P::template Codes<1, 1>(qs1, hm));
        _mm512_store_si512(o + 6 * kCodeBlockBytes, P::template Codes<1, 2>(qs1, hm));
        _mm512_store_si512(o + 7 * kCodeBlockBytes, P::template Codes<1, 3>(qs1, hm));
      }
    }
  }
}

// The three types' panels as the shared steps below see them: the facts of
// kquant_group_scales_impl.h, their codes, decode and one-token tiles, and
// the tokens up to which that tile, once per token, beats decoding a
// stretch once (DecodedMatMul). On a Zen 5, tinyllama's decode steps of P
// sequences alternated in one process (2 threads), the decoded stretches
// against Tile1 per token (time ratios): Q6_K P = 2: 1.11, 3: 0.95; Q3_K 2:
// 1.01, 3: 0.87, 4: 0.78; Q2_K 2: 1.01, 3: 0.85, 4: 0.79 (IQ4_XS,
// matmul_iq4xs_avx512.cc, 3: 1.04, 4: 0.97). Q3_K's and Q2_K's codes take
// more steps to decode than Q6_K's, so decoding them once pays from fewer
// tokens.
struct Q6KPanels : Q6KPanelFacts {
  static void Decode(const uint8_t* panel, int64_t sb0, int64_t sb_end, uint8_t* codes, GroupScales* /*scales*/) {
    DecodeStretch(panel, sb0, sb_end, codes);
  }
  static constexpr auto kTile1 = Tile1;
  static constexpr int64_t kTile1MaxTokens = 2;
};
struct Q3KPanels : Q3KPanelFacts {
  template <int kH, int kM>
  static __m512i Codes(__m512i qs, __m512i hm) { return Q3Codes<kH, kM>(qs, hm); }
  static constexpr auto Decode = SmallCodesDecodeStretch<Q3KPanels>;
  static constexpr auto kTile1 = SmallCodesTile1<Q3KPanels>;
  static constexpr int64_t kTile1MaxTokens = 2;
};
struct Q2KPanels : Q2KPanelFacts {
  template <int kH, int kM>
  static __m512i Codes(__m512i qs, __m512i /*no hmask*/) { return Q2Codes<kM>(qs); }
  static constexpr auto Decode = SmallCodesDecodeStretch<Q2KPanels>;
  static constexpr auto kTile1 = SmallCodesTile1<Q2KPanels>;
  static constexpr int64_t kTile1MaxTokens = 2;
};

}  // namespace

const TypeKernels* Avx512Q6KKernels(GgmlType type, bool repacked) {
  // The layouts and packers are AVX2's (an AVX-512 CPU runs AVX2 code).
  const auto avx2 = [&] { return Avx2Q6KKernels(type, /*repacked=*/true); };
  switch (type) {
    case GgmlType::kQ6_K: return KernelsOf<Q6KForm, Q6KPanels>(repacked, avx2()->panel_bytes, avx2()->pack_panel);
    case GgmlType::kQ3_K: return KernelsOf<Q3KForm, Q3KPanels>(repacked, avx2()->panel_bytes, avx2()->pack_panel);
    case GgmlType::kQ2_K: return KernelsOf<Q2KForm, Q2KPanels>(repacked, avx2()->panel_bytes, avx2()->pack_panel);
    case GgmlType::kIQ4_XS: return Avx512IQ4XSKernels(repacked);
    default: return nullptr;
  }
}

}  // namespace ridge::kernels::internal
