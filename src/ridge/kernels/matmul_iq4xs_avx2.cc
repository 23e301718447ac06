// IQ4_XS on AVX2 (+ FMA, F16C): Q6_K's steps (matmul_q6k_avx2.cc, the same
// float steps as AVX-512's, so the same bits on both ISAs whichever layout,
// path or batch). w = d·(ls_s − 32)·level[q], 8 sub-blocks s of 32, q a
// 4-bit index into the IQ4_NL levels: Q6_K's form with c the signed level
// (−127..113), z = 0, and both groups of a sub-block scaled by ls_s − 32.
// AVX-512 takes c = level + 128 against z = 128 (vpdpbusd's unsigned
// codes): the same sums S_g = Σ level·x.
//
// Products: vpmaddubsw of |level| against x given level's sign (vpsignb):
// a word's 2 products reach 2·127·127 = 32258, so each word widens alone
// (level + 128 would saturate the pairs). Weights repacked at load into
// weight_panels.h's iq4xs (plain copies, packed here for both ISAs) are
// multiplied in place; the file's layout (--mmap) takes the rows tile of
// kquant_rows_impl.h (IQ4XSForm<0>) for 1-4 tokens and panels packed per
// call from 5 on.
//
// Measured (Zen 5 under RIDGE_ISA=avx2, 2 threads, ridge bench, tinyllama
// IQ4_XS): against the rows tile with a float per 4-element lane these
// replaced (other bits than AVX-512), pp512 37 % -> 54-57 % of the int8
// peak, tg64 51 -> 81-83 t/s; --mmap pp512 1.50-1.53 ×, tg64 1.06-1.09 ×.
#include <cstring>

#include "ridge/kernels/matmul_isa.h"
#include "ridge/kernels/prefetch_spread_impl.h"
#include "ridge/kernels/simd_avx2.h"
#include "ridge/kernels/weight_panels.h"
// After simd_avx2.h (the intrinsics).
#include "ridge/kernels/kquant_group_scales_impl.h"
#include "ridge/kernels/kquant_rows_impl.h"
// After the two above (their helpers and scales).
#include "ridge/kernels/kquant_panel_matmul_avx2_impl.h"

namespace ridge::kernels::internal {
namespace {

// IQ4_XS's rows [r_begin, r_begin + 32) of w into its panel layout (iq4xs);
// rows past w.n_rows are zeros. At load only: plain copies.
void PackIQ4XSPanel(const MatView& w, int64_t r_begin, uint8_t* panel) {
  using namespace panels::iq4xs;
  const int64_t n_super = w.n_cols / kQK_K;
  for (int64_t sb = 0; sb < n_super; ++sb) {
    uint8_t* out = panel + sb * kSuperBytes;
    for (int64_t j = 0; j < panels::kRows; ++j) {
      const int64_t r = r_begin + j;
      uint8_t block[kFileBlockBytes] = {};
      if (r < w.n_rows) std::memcpy(block, w.data + r * w.row_bytes + sb * kFileBlockBytes, kFileBlockBytes);
      std::memcpy(out + kDOffset + 2 * j, block, 2);
      for (int b = 0; b < 2; ++b) out[kScaleHOffset + b * panels::kRows + j] = block[kFileScaleHOffset + b];
      for (int b = 0; b < 4; ++b) out[kScaleLOffset + b * panels::kRows + j] = block[kFileScaleLOffset + b];
      for (int s = 0; s < 8; ++s)
        for (int k = 0; k < 4; ++k) std::memcpy(out + QuantAt(s, k) + 4 * j, block + kFileQsOffset + 16 * s + 4 * k, 4);
    }
  }
}

// IQ4_XS's signed levels of 8 rows × 4 elements: the low (kHigh false:
// elements 4k + i of the sub-block) or high nibbles (16 + 4k + i) of qs.
template <bool kHigh>
inline __attribute__((always_inline)) __m256i IQ4Codes(__m256i qs, __m256i levels) {
  return _mm256_shuffle_epi8(levels, _mm256_and_si256(kHigh ? _mm256_srli_epi16(qs, 4) : qs, _mm256_set1_epi8(0x0f)));
}

// vpmaddubsw of |level| against x carrying level's sign: per word the two
// products level·x of an element pair, summed, |·| ≤ 2·127·127 = 32258 (x is
// never −128), so a word holds no more than one pair.
inline __attribute__((always_inline)) __m256i SignedPairs(__m256i level, __m256i x) {
  return _mm256_maddubs_epi16(_mm256_abs_epi8(level), _mm256_sign_epi8(x, level));
}

// IQ4_XS's panel × 1 token: Tile1's steps, a sub-block's two groups (one
// scale: sc·(S_2s + S_2s+1) is the same integer as sc·S_2s + sc·S_2s+1) in
// one register per quarter, their words scaled in the widening vpmaddwd.
void IQ4XSTile1(const uint8_t* panel, int64_t n_super, const ActLayout& layout, const uint8_t* acts, float* y,
                int64_t n_valid_rows) {
  using namespace panels::iq4xs;
  constexpr int64_t kLines = kSuperBytes / 64;  // 68
  static_assert(kSuperBytes % 64 == 0);
  const TokenActs tok(acts, layout);
  const __m256i levels = IQ4Levels256();
  __m256 acc[kQuarters];
  for (int q = 0; q < kQuarters; ++q) acc[q] = _mm256_setzero_ps();
  GroupScales scales;
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const uint8_t* p = panel + sb * kSuperBytes;
    DecodeIQ4XSScales(p, scales);
#pragma GCC unroll 1
    for (int s = 0; s < 8; ++s) {
      // The next super-block into L2, as Tile1, over this one's 8 steps.
      const uint8_t* ahead = p + kSuperBytes;
      PrefetchLinesOfStep<_MM_HINT_T1>(ahead, kLines, s, 8);
      const int64_t b = sb * 8 + s;  // x's 32-block
      const int8_t* x = tok.q + b * kActBlock;
#pragma GCC unroll 4
      for (int q = 0; q < kQuarters; ++q) {
        const __m128i sc8 =
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales.sc + 2 * s * kPanelRows + q * kQuarterRows));
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(sc8, sc8));  // a row's sc in both words
        __m256i sum = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          const __m256i qs = Load256(p + QuantAt(s, k) + q * kQuarterRows * 4);
          sum = _mm256_add_epi32(
              sum, _mm256_madd_epi16(SignedPairs(IQ4Codes<false>(qs, levels), Broadcast4(x + 4 * k)), sc16));
          sum = _mm256_add_epi32(
              sum, _mm256_madd_epi16(SignedPairs(IQ4Codes<true>(qs, levels), Broadcast4(x + 16 + 4 * k)), sc16));
        }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kDOffset + 16 * q)));
        acc[q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(d, _mm256_set1_ps(tok.d[b])), acc[q]);
      }
    }
  }
  StoreQuarters(acc, n_valid_rows, y);
}

// IQ4_XS's DecodeStretch: the signed levels of sub-block s in the same code
// layout (element set k < 4: the low nibbles of group k, 4 + k: its high
// nibbles), and scales[sb − sb0] ← each super-block's decoded scales.
void IQ4XSDecodeStretch(const uint8_t* panel, int64_t sb0, int64_t sb_end, uint8_t* codes, GroupScales* scales) {
  using namespace panels::iq4xs;
  using panels::q6k::kCodeBlockBytes;
  const __m256i levels = IQ4Levels256();
  for (int64_t sb = sb0; sb < sb_end; ++sb) {
    const uint8_t* p = panel + sb * kSuperBytes;
    DecodeIQ4XSScales(p, scales[sb - sb0]);
    for (int s = 0; s < 8; ++s) {
      uint8_t* out = codes + ((sb - sb0) * 8 + s) * kCodeBlockBytes;
      for (int k = 0; k < 4; ++k)
        for (int q = 0; q < kQuarters; ++q) {
          const __m256i qs = Load256(p + QuantAt(s, k) + q * kQuarterRows * 4);
          _mm256_store_si256(reinterpret_cast<__m256i*>(out + (k * kQuarters + q) * 32), IQ4Codes<false>(qs, levels));
          _mm256_store_si256(reinterpret_cast<__m256i*>(out + ((4 + k) * kQuarters + q) * 32),
                             IQ4Codes<true>(qs, levels));
        }
    }
  }
}

// TileDecoded's DotAdd for the signed levels: each pair sum alone fills a
// word (SignedPairs), so each widens.
struct SignedLevelsDot {
  static __m256i DotAdd(__m256i i, __m256i c0, __m256i c1, __m256i x, __m256i x4, __m256i sc16) {
    return _mm256_add_epi32(_mm256_add_epi32(i, _mm256_madd_epi16(SignedPairs(c0, x), sc16)),
                            _mm256_madd_epi16(SignedPairs(c1, x4), sc16));
  }
};

// IQ4_XS's panels as TileDecoded sees them.
struct IQ4XSPanels : IQ4XSPanelFacts, SignedLevelsDot {
  static int32_t Bias(int32_t /*gbias*/) { return 0; }  // signed levels: the sums are Σ level·x already
  static constexpr auto Decode = IQ4XSDecodeStretch;
  static constexpr auto kTile1 = IQ4XSTile1;
};

// The rows tile's steps for IQ4XSForm<0> (signed levels).
struct IQ4XSRowSteps : Q6KRowSteps {
  static __m256i DotAdd(__m256i acc, __m256i level, __m256i s8) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(SignedPairs(level, s8), _mm256_set1_epi16(1)));
  }
};

}  // namespace

const TypeKernels* Avx2IQ4XSKernels(bool repacked) {
  return KernelsOf<IQ4XSForm<0>, IQ4XSRowSteps, IQ4XSPanels, PackIQ4XSPanel>(repacked);
}

}  // namespace ridge::kernels::internal
