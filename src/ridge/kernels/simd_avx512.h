#pragma once
// Include this (not <immintrin.h>) in *_avx512.cc files only.
//
// g++ 12's AVX-512 intrinsics self-initialise their "undefined" operands
// (_mm512_undefined_ps() and friends), which -Wuninitialized and
// -Wmaybe-uninitialized report at every use (GCC bug 105593); the warnings
// say nothing about our code.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

namespace ridge::kernels::avx512 {

// Transposes 16 rows of 16 floats in place (r[i] lane j ↔ r[j] lane i).
inline void Transpose16x16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    r[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i]), _mm512_castps_pd(t[i + 2])));
    r[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
    r[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(_mm512_castps_pd(t[i + 1]), _mm512_castps_pd(t[i + 3])));
  }
  // Now r[4a + b] holds, in each 128-bit lane L, column 4L + b of rows 4a..4a+3.
  for (int b = 0; b < 4; ++b) {
    t[b] = _mm512_shuffle_f32x4(r[b], r[4 + b], 0x88);        // lanes 0,2 of r[b], lanes 0,2 of r[4+b]
    t[4 + b] = _mm512_shuffle_f32x4(r[b], r[4 + b], 0xdd);    // lanes 1,3
    t[8 + b] = _mm512_shuffle_f32x4(r[8 + b], r[12 + b], 0x88);
    t[12 + b] = _mm512_shuffle_f32x4(r[8 + b], r[12 + b], 0xdd);
  }
  for (int b = 0; b < 4; ++b) {
    r[b] = _mm512_shuffle_f32x4(t[b], t[8 + b], 0x88);
    r[8 + b] = _mm512_shuffle_f32x4(t[b], t[8 + b], 0xdd);
    r[4 + b] = _mm512_shuffle_f32x4(t[4 + b], t[12 + b], 0x88);
    r[12 + b] = _mm512_shuffle_f32x4(t[4 + b], t[12 + b], 0xdd);
  }
}

}  // namespace ridge::kernels::avx512
