// IQ4_XS on AVX-512 (VNNI): Q6_K's steps (matmul_q6k_avx512.cc) with c = the
// IQ4_NL level + 128 (1..241, unsigned for vpdpbusd), z = 128, both groups
// of a 32-element sub-block scaled by its 6-bit scale − 32: S_g = Σ level·x,
// the integers AVX2 gets from the signed levels (matmul_iq4xs_avx2.cc), so
// both ISAs give the same bits. Weights repacked at load (weight_panels.h
// iq4xs, packed by the AVX2 file's plain copies) are multiplied in place;
// the file's layout (--mmap) takes the rows tile of kquant_rows_impl.h for
// 1-4 tokens and panels packed per call from 5 on.
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
        PrefetchLinesOfStep<_MM_HINT_T0>(ahead, kLines, step, 8);
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
  // Decoding stretches ran 3 / 4 tokens in 1.04 / 0.97 × Tile1's time
  // (Zen 5, as matmul_q6k_avx512.cc's panels measured).
  static constexpr int64_t kTile1MaxTokens = 3;
};

}  // namespace

const TypeKernels* Avx512IQ4XSKernels(bool repacked) {
  // The layout and packer are AVX2's (an AVX-512 CPU runs AVX2 code).
  const TypeKernels* avx2 = Avx2Q6KKernels(GgmlType::kIQ4_XS, /*repacked=*/true);
  return KernelsOf<IQ4XSForm<128>, IQ4XSPanels>(repacked, avx2->panel_bytes, avx2->pack_panel);
}

}  // namespace ridge::kernels::internal
