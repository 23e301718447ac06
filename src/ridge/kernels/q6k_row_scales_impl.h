#pragma once
// The int8 group scales of 8 Q6_K rows in the file's layout, transposed to
// one register per group: shared by the AVX2 and AVX-512 Q6_K rows tiles
// (matmul_q6k_avx2.cc, matmul_q6k_avx512.cc), which take the same integer
// steps. 128- and 256-bit AVX2 operations only, so both ISAs compile it.
//
// Include only from *_avx2.cc / *_avx512.cc, after <immintrin.h> (or
// simd_avx512.h). It sits in an anonymous namespace so each ISA file gets its
// own copy compiled with its own flags (as kquant_rows_impl.h).
#include <cstdint>

namespace ridge::kernels::internal {
namespace {

// The 16 scales of 8 file-layout rows' super-block (blocks[i]: row i's
// 210-byte block, scales at byte 192), [group g][row i] as int32.
inline void Q6KRowScales(const uint8_t* const blocks[8], int32_t out[16][8]) {
  __m128i r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks[i] + 192));
  __m128i a[8], b[8];
  for (int i = 0; i < 4; ++i) {  // a[2i], a[2i+1]: rows 2i, 2i + 1 interleaved byte by byte (groups 0-7, 8-15)
    a[2 * i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 2; ++i)  // b[4i + k]: rows 4i..4i+3 of groups 4k..4k+3
    for (int k = 0; k < 2; ++k) {
      b[4 * i + 2 * k] = _mm_unpacklo_epi16(a[4 * i + k], a[4 * i + 2 + k]);
      b[4 * i + 2 * k + 1] = _mm_unpackhi_epi16(a[4 * i + k], a[4 * i + 2 + k]);
    }
  for (int k = 0; k < 4; ++k) {  // groups 4k..4k+3 of rows 0..7: 8 bytes each
    const __m128i lo = _mm_unpacklo_epi32(b[k], b[4 + k]), hi = _mm_unpackhi_epi32(b[k], b[4 + k]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[4 * k]), _mm256_cvtepi8_epi32(lo));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[4 * k + 1]), _mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[4 * k + 2]), _mm256_cvtepi8_epi32(hi));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[4 * k + 3]), _mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8)));
  }
}

}  // namespace
}  // namespace ridge::kernels::internal
