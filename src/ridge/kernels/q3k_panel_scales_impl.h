#pragma once
// The packed scale bytes of a Q3_K weight-panel super-block (weight_panels.h,
// q3k), decoded for 32 rows at once into the int8 layout of Q6_K's panel
// scales, [16 groups g][32 rows j]: shared by the AVX2 and AVX-512 Q3_K panel
// kernels (matmul_q6k_avx2.cc, matmul_q6k_avx512.cc), which read the same
// layout. 256-bit AVX2 operations only, so both ISAs compile it.
//
// Include only from *_avx2.cc / *_avx512.cc, after <immintrin.h> (or
// simd_avx512.h). It sits in an anonymous namespace so each ISA file gets its
// own copy compiled with its own flags (as kquant_rows_impl.h).
#include <cstdint>

#include "ridge/kernels/weight_panels.h"

namespace ridge::kernels::internal {
namespace {

constexpr int64_t kQ3KScaleBytes = 16 * panels::kRows;  // one super-block's decoded scales

// sc[g][j] = group g's 6-bit scale of row j minus 32: its low 4 bits are
// bits 4·(g / 8) .. of byte g % 8, its high 2 bits 2·(g / 4) .. of byte
// 8 + g % 4 (ggml's Q3_K packing). 16-bit shifts move bits across bytes only
// into positions the masks drop.
inline __attribute__((always_inline)) void DecodeQ3KScaleBytes(const uint8_t* super, int8_t* sc) {
  using namespace panels::q3k;
  __m256i b[kScaleBytes];
  for (int i = 0; i < kScaleBytes; ++i)
    b[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(super + kScaleOffset + i * panels::kRows));
  const __m256i m4 = _mm256_set1_epi8(0x0f), top2 = _mm256_set1_epi8(0x30), bias = _mm256_set1_epi8(32);
  for (int g = 0; g < 16; ++g) {
    const __m256i low = g < 8 ? b[g] : _mm256_srli_epi16(b[g - 8], 4);
    const __m256i hb = b[8 + g % 4];
    const int hs = g / 4;  // the high bits at 2·hs, moved to 4
    const __m256i high = hs == 0   ? _mm256_slli_epi16(hb, 4)
                         : hs == 1 ? _mm256_slli_epi16(hb, 2)
                         : hs == 2 ? hb
                                   : _mm256_srli_epi16(hb, 2);
    const __m256i v = _mm256_or_si256(_mm256_and_si256(low, m4), _mm256_and_si256(high, top2));
    _mm256_store_si256(reinterpret_cast<__m256i*>(sc + g * panels::kRows), _mm256_sub_epi8(v, bias));
  }
}

}  // namespace
}  // namespace ridge::kernels::internal
