// Q6_K, Q3_K, Q2_K and IQ4_XS on AVX-512 (VNNI). Weights repacked at load
// into the panel layouts of weight_panels.h (q6k, q3k, q2k, iq4xs) are
// multiplied in place by the panel tiles; weights in the file's layout (--mmap) take a rows tile for
// 1-4 tokens and panels packed per call from 5 on. Every path takes the same
// steps, so the bits are the same whichever layout, path or batch.
//
// w = d·sc_g·(c − z) − dmin·m_g, 16 groups g of 16 elements with an int8
// scale: Q6_K's c 6-bit, z = 32; Q3_K's c = its 2 bits of qs with a bit of
// hmask above, z = 4, and sc its 6-bit scale − 32; Q2_K's c 2-bit, z = 0,
// sc 4-bit, and a 4-bit min m_g (the others have none); IQ4_XS's c = its
// IQ4_NL level + 128, z = 128, both groups of a 32-element sub-block scaled
// by its 6-bit scale − 32 (AVX2 takes the signed level, z = 0: the same
// sums). Each group's sum starts from −z·Σx of the group (from the
// activations' gbias, −32·Σx, or per 4-byte lane their bias), so it is
// S_g = Σ(c − z)·x, exact. Steps per (row, token), x's 32-blocks b in order
// (d, dmin: b's super-block's):
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
#include "ridge/kernels/scratch.h"
#include "ridge/kernels/simd_avx512.h"
#include "ridge/kernels/weight_panels.h"
// After simd_avx512.h (the intrinsics).
#include "ridge/kernels/kquant_rows_impl.h"
#include "ridge/kernels/kquant_group_scales_impl.h"

namespace ridge::kernels::internal {
namespace {

constexpr int64_t kPanelRows = panels::kRows;  // 32
constexpr int kHalfRows = 16;                   // rows of one int32-lane zmm
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
#pragma GCC unroll 1
          for (int64_t l = step * kLines / 16; l < (step + 1) * kLines / 16; ++l)
            _mm_prefetch(reinterpret_cast<const char*>(ahead + 64 * l), _MM_HINT_T0);
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
#pragma GCC unroll 1
          for (int64_t l = step * kLines / 16; l < (step + 1) * kLines / 16; ++l)
            _mm_prefetch(reinterpret_cast<const char*>(ahead + 64 * l), _MM_HINT_T0);
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

// From 5 tokens on, a stretch of the panel's codes is decoded once
// (weight_panels.h, q6k::kCodeBlockBytes) and every token multiplied against
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
// kquant_group_scales_impl.h, their codes, decode and one-token tiles.
struct Q6KPanels : Q6KPanelFacts {
  static void Decode(const uint8_t* panel, int64_t sb0, int64_t sb_end, uint8_t* codes, GroupScales* /*scales*/) {
    DecodeStretch(panel, sb0, sb_end, codes);
  }
  static constexpr auto kTile1 = Tile1;
};
struct Q3KPanels : Q3KPanelFacts {
  template <int kH, int kM>
  static __m512i Codes(__m512i qs, __m512i hm) { return Q3Codes<kH, kM>(qs, hm); }
  static constexpr auto Decode = SmallCodesDecodeStretch<Q3KPanels>;
  static constexpr auto kTile1 = SmallCodesTile1<Q3KPanels>;
};
struct Q2KPanels : Q2KPanelFacts {
  template <int kH, int kM>
  static __m512i Codes(__m512i qs, __m512i /*no hmask*/) { return Q2Codes<kM>(qs); }
  static constexpr auto Decode = SmallCodesDecodeStretch<Q2KPanels>;
  static constexpr auto kTile1 = SmallCodesTile1<Q2KPanels>;
};

// ---- IQ4_XS (codes = level + 128, unsigned for vpdpbusd) ----------------------

// The IQ4_NL levels + 128 in every 128-bit lane (vpshufb's table).
inline __attribute__((always_inline)) __m512i IQ4Levels() {
  return _mm512_add_epi8(_mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4NlLevels))),
                         _mm512_set1_epi8(static_cast<char>(128)));
}

// The codes of 16 rows × 4 elements of the low (kHigh false: elements 4k + i
// of the sub-block) or high nibbles (16 + 4k + i) of qs.
template <bool kHigh>
inline __attribute__((always_inline)) __m512i IQ4Codes(__m512i qs, __m512i levels) {
  const __m512i nibbles = _mm512_and_si512(kHigh ? _mm512_srli_epi16(qs, 4) : qs, _mm512_set1_epi8(0x0f));
  return _mm512_shuffle_epi8(levels, nibbles);
}

// IQ4_XS's panel × 1 token: Q6_K's steps, a sub-block's two groups summed
// in one register (their scale is the same: sc·(S_2s + S_2s+1) is the same
// integer as sc·S_2s + sc·S_2s+1), four sub-blocks at a time.
void IQ4XSTile1(const uint8_t* panel, int64_t n_super, const ActLayout& layout, const uint8_t* acts, float* y,
                int64_t n_valid_rows) {
  using namespace panels::iq4xs;
  constexpr int kH = 2;
  const TokenActs tok(acts, layout);
  const __m512i levels = IQ4Levels();
  __m512 acc[kH] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
  GroupScales scales;
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const uint8_t* p = panel + sb * kSuperBytes;
    DecodeIQ4XSScales(p, scales);
    __m512 d[kH];
    for (int h = 0; h < kH; ++h)
      d[h] = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + kDOffset + 2 * kHalfRows * h)));
#pragma GCC unroll 1
    for (int s0 = 0; s0 < 8; s0 += 4) {
      __m512i sum[4][kH];  // [sub-block s0 + i]: S_2s + S_2s+1, from −128·Σx of both groups
      for (int i = 0; i < 4; ++i) {
        const int64_t b = sb * 8 + s0 + i;
        for (int h = 0; h < kH; ++h) sum[i][h] = _mm512_set1_epi32(4 * (tok.gbias[2 * b] + tok.gbias[2 * b + 1]));
      }
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        // Each line once, a super-block and a half ahead, into L1, as Tile1: 68 lines over 8 steps.
        constexpr int64_t kLines = kSuperBytes / 64;
        static_assert(kSuperBytes % 64 == 0);
        const int64_t step = s0 + k;
        const uint8_t* ahead = p + (3 * kLines / 2) * 64;
#pragma GCC unroll 1
        for (int64_t l = step * kLines / 8; l < (step + 1) * kLines / 8; ++l)
          _mm_prefetch(reinterpret_cast<const char*>(ahead + 64 * l), _MM_HINT_T0);
#pragma GCC unroll 4
        for (int i = 0; i < 4; ++i) {
          const int64_t b = sb * 8 + s0 + i;
          int32_t lo4, hi4;
          std::memcpy(&lo4, tok.q + b * kActBlock + 4 * k, 4);
          std::memcpy(&hi4, tok.q + b * kActBlock + 16 + 4 * k, 4);
          const __m512i x_lo = _mm512_set1_epi32(lo4), x_hi = _mm512_set1_epi32(hi4);
          for (int h = 0; h < kH; ++h) {
            const __m512i qs = _mm512_loadu_si512(p + QuantAt(s0 + i, k) + h * kHalfRows * 4);
            sum[i][h] = _mm512_dpbusd_epi32(sum[i][h], IQ4Codes<false>(qs, levels), x_lo);
            sum[i][h] = _mm512_dpbusd_epi32(sum[i][h], IQ4Codes<true>(qs, levels), x_hi);
          }
        }
      }
      for (int i = 0; i < 4; ++i) {
        const int64_t b = sb * 8 + s0 + i;
        for (int h = 0; h < kH; ++h) {
          const __m512i sc = _mm512_cvtepi8_epi32(_mm_load_si128(
              reinterpret_cast<const __m128i*>(scales.sc + 2 * (s0 + i) * kPanelRows + h * kHalfRows)));
          acc[h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_mullo_epi32(sum[i][h], sc)),
                                   _mm512_mul_ps(d[h], _mm512_set1_ps(tok.d[b])), acc[h]);
        }
      }
    }
  }
  for (int h = 0; h < kH; ++h) {
    const int64_t valid = std::clamp<int64_t>(n_valid_rows - h * kHalfRows, 0, kHalfRows);
    _mm512_mask_storeu_ps(y + h * kHalfRows, static_cast<__mmask16>((1u << valid) - 1), acc[h]);
  }
}

// IQ4_XS's DecodeStretch: the codes of sub-block s in Q6_K's code layout
// (element set k < 4: the low nibbles of group k, 4 + k: its high nibbles),
// and scales[sb − sb0] ← each super-block's decoded scales.
void IQ4XSDecodeStretch(const uint8_t* panel, int64_t sb0, int64_t sb_end, uint8_t* codes, GroupScales* scales) {
  using namespace panels::iq4xs;
  using panels::q6k::kCodeBlockBytes;
  const __m512i levels = IQ4Levels();
  for (int64_t sb = sb0; sb < sb_end; ++sb) {
    const uint8_t* p = panel + sb * kSuperBytes;
    DecodeIQ4XSScales(p, scales[sb - sb0]);
    for (int s = 0; s < 8; ++s) {
      uint8_t* out = codes + ((sb - sb0) * 8 + s) * kCodeBlockBytes;
      for (int k = 0; k < 4; ++k)
        for (int h = 0; h < 2; ++h) {
          const __m512i qs = _mm512_loadu_si512(p + QuantAt(s, k) + h * kHalfRows * 4);
          _mm512_store_si512(out + (k * 2 + h) * 64, IQ4Codes<false>(qs, levels));
          _mm512_store_si512(out + ((4 + k) * 2 + h) * 64, IQ4Codes<true>(qs, levels));
        }
    }
  }
}

struct IQ4XSPanels : IQ4XSPanelFacts {
  static int32_t Bias(int32_t gbias) { return 4 * gbias; }  // −128·Σx
  static constexpr auto Decode = IQ4XSDecodeStretch;
  static constexpr auto kTile1 = IQ4XSTile1;
};

// kT tokens × the panel's super-blocks [sb0, sb_end), from their decoded
// codes, the steps of Tile1: acc starts from `keep` (sb0 > 0) or 0 and ends
// in `keep`, or after the last stretch in y (masked to the panel's valid
// rows), so the stretches continue each row's one fma chain exactly. keep:
// the tile's tokens' 32 accumulators, [kT][32 rows], contiguous (see
// DecodedMatMul).
template <typename P, int kT>
void TileDecoded(const uint8_t* panel, const uint8_t* codes, const GroupScales* scales, int64_t sb0, int64_t sb_end,
                 const ActLayout& layout, const uint8_t* acts, int64_t act_stride, float* y, int64_t y_stride,
                 int64_t n_valid_rows, float* keep, bool last) {
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
// (`streams`: weights repacked at load): each tile first prefetches a slice
// of the next stretch's bytes into L2 (past the panel's end, the next
// panel's), so that its read overlaps this stretch's tiles, as on AVX2.
// Without it a stretch's decode waits on memory and its tiles on nothing:
// on an Intel Xeon (AVX-512) best BM_Batched/Q6_K_memory 8, 16, 64 tokens
// 257, 369, 517 -> 268, 384, 581 GFLOP/s; _cache reads 439, 499, 589.
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
    for (int64_t t = 0, tile = 0; tile < n_tiles; ++tile) {
      const int64_t size = tiles.TileSize(tile);
      if (streams) {
        for (int64_t l = tile * kStretchBytes / n_tiles / 64; l < (tile + 1) * kStretchBytes / n_tiles / 64; ++l)
          _mm_prefetch(reinterpret_cast<const char*>(ahead + 64 * l), _MM_HINT_T1);
      }
      const uint8_t* a = acts.data + t * s;
      float* yt = y + t * y_stride;
      float* kt = keep + t * kPanelRows;
      const auto run = [&]<int kT>() {
        TileDecoded<P, kT>(panel, codes, scales, sb0, sb_end, layout, a, s, yt, y_stride, n_valid_rows, kt, last);
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

// One panel × every token. Up to 4 tokens (decode, speculation's verifying
// passes) run Tile1 once per token: the panel streams from memory once and is
// read again from L2, and Tile1's order streams faster than a tile of tokens
// (2 tokens: 29 against 16 GB/s, 2 threads, Zen 4). From 5 tokens on, the
// codes are decoded a stretch at a time and every token multiplied against
// them, up to 4 at a time (the register budget of 32 zmm; EvenTokenTiles).
template <typename P>
void PanelMatMul(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts, int64_t n_tokens,
                 float* y, int64_t y_stride, const PanelPrefetch& next) {
  const ActLayout layout(n_cols);
  const int64_t n = n_cols / kQK_K, s = acts.row_stride;
  if (n_tokens <= 4) {
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

const TypeKernels* Avx512Q6KKernels(GgmlType type, bool repacked) {
  // The layouts and packers are AVX2's (an AVX-512 CPU runs AVX2 code).
  const auto avx2 = [&] { return Avx2Q6KKernels(type, /*repacked=*/true); };
  switch (type) {
    case GgmlType::kQ6_K: return KernelsOf<Q6KForm, Q6KPanels>(repacked, avx2()->panel_bytes, avx2()->pack_panel);
    case GgmlType::kQ3_K: return KernelsOf<Q3KForm, Q3KPanels>(repacked, avx2()->panel_bytes, avx2()->pack_panel);
    case GgmlType::kQ2_K: return KernelsOf<Q2KForm, Q2KPanels>(repacked, avx2()->panel_bytes, avx2()->pack_panel);
    case GgmlType::kIQ4_XS:
      return KernelsOf<IQ4XSForm<128>, IQ4XSPanels>(repacked, avx2()->panel_bytes, avx2()->pack_panel);
    default: return nullptr;
  }
}

}  // namespace ridge::kernels::internal
