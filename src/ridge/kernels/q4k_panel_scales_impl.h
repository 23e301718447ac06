#pragma once
// The scale bytes of a Q4_K weight-panel super-block (weight_panels.h, q4k),
// decoded for 32 rows at once: shared by the AVX2 and AVX-512 Q4_K panel
// kernels (matmul_q4k_panels_avx2.cc, matmul_q4k_panels_avx512.cc), which read
// the same layout. 256-bit AVX2 operations only, so both ISAs compile it.
//
// Include only from *_avx2.cc / *_avx512.cc, after <immintrin.h> (or
// simd_avx512.h). It sits in an anonymous namespace so each ISA file gets its
// own copy compiled with its own flags (as kquant_rows_impl.h).
#include <cstdint>

#include "ridge/kernels/weight_panels.h"

namespace ridge::kernels::internal {
namespace {

// The 6-bit scales and mins of one panel super-block's 32 rows, byte-wise
// (ggml's get_scale_min_k4 on 32 rows at once): sc[s][j], mn[s][j] for
// sub-block s of row j.
struct Q4KScaleBytes {
  alignas(32) uint8_t sc[8][panels::kRows];
  alignas(32) uint8_t mn[8][panels::kRows];
};

inline __attribute__((always_inline)) void DecodeQ4KScaleBytes(const uint8_t* super, Q4KScaleBytes& out) {
  using namespace panels::q4k;
  __m256i b[kScaleBytes];
  for (int i = 0; i < kScaleBytes; ++i)
    b[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(super + kScaleOffset + i * panels::kRows));
  const __m256i m6 = _mm256_set1_epi8(63), m4 = _mm256_set1_epi8(15), top2 = _mm256_set1_epi8(0x30);
  for (int s = 0; s < 8; ++s) {
    __m256i sc, mn;
    if (s < 4) {
      sc = _mm256_and_si256(b[s], m6);
      mn = _mm256_and_si256(b[s + 4], m6);
    } else {  // low 4 bits from byte s + 4, the top 2 from bits 6-7 of byte s − 4 (sc) or s (m)
      sc = _mm256_or_si256(_mm256_and_si256(b[s + 4], m4), _mm256_and_si256(_mm256_srli_epi16(b[s - 4], 2), top2));
      mn = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b[s + 4], 4), m4),
                           _mm256_and_si256(_mm256_srli_epi16(b[s], 2), top2));
    }
    _mm256_store_si256(reinterpret_cast<__m256i*>(out.sc[s]), sc);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out.mn[s]), mn);
  }
}

}  // namespace
}  // namespace ridge::kernels::internal
