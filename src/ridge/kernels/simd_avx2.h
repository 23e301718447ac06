#pragma once
// Helpers shared by the *_avx2.cc kernel files. Include from those files only:
// everything here is compiled with AVX2 + FMA + F16C, and an inline function
// that an ordinary file also used could be kept in its AVX2 copy by the linker.
#include <immintrin.h>

#include <cstdint>

namespace ridge::kernels::avx2 {

// An empty asm that reads and writes each v[q][t] in a register. Called after
// each group of a fully unrolled block loop, it stops GCC from reassociating
// the groups' exact integer sums into trees of partial sums that it then
// spills: without it the code of the Q8_0 and Q4_0 prefill tiles
// (matmul_quant_avx2.cc) held 54 and 64 ymm loads and stores to the stack
// in their block loops, and a Zen 3 ran
// Q4_0 prefill at 53 % of its int8 peak against 65 % with it
// (docs/benchmarks.md). The sums are integers: their order changes no bit.
template <int kQ, int kT>
inline void KeepInRegisters(__m256i (&v)[kQ][kT]) {
  for (int q = 0; q < kQ; ++q)
    for (int t = 0; t < kT; ++t) __asm__("" : "+x"(v[q][t]));
}

inline float HorizontalMax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline int32_t HorizontalSumI32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// Quantizes one block of 32 activations to int8 with one scale, as every
// int8 kernel of every ISA does (see simd_avx512.h's twin, which must give the
// same bytes): scale = max|x| / 127, q = round-to-nearest-even(x · (1/scale)).
// Stores the 32 bytes at q, returns the scale, and sets *lane_sums to the Σq
// of each 4-byte lane (8 int32).
inline float QuantizeBlock32(const float* x, int8_t* q, __m256i* lane_sums) {
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  __m256 v[4];
  __m256 amax = _mm256_setzero_ps();
  for (int i = 0; i < 4; ++i) {
    v[i] = _mm256_loadu_ps(x + 8 * i);
    amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_mask, v[i]));
  }
  const float scale = HorizontalMax(amax) / 127.0f;
  const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
  const __m256 vinv = _mm256_set1_ps(inv);
  __m256i i32[4];
  for (int i = 0; i < 4; ++i) i32[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], vinv));  // nearest even
  // Pack 4 × 8 int32 → 32 int8 in order (packs interleave 128-bit lanes; the permute fixes it).
  __m256i i8 = _mm256_packs_epi16(_mm256_packs_epi32(i32[0], i32[1]), _mm256_packs_epi32(i32[2], i32[3]));
  i8 = _mm256_permutevar8x32_epi32(i8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), i8);
  *lane_sums = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), i8), _mm256_set1_epi16(1));
  return scale;
}

// The f16 values at base + offsets[i] (block scales or minimums; 16 bytes are
// read at each), in words 0..7: loads and a word transpose.
inline __m128i HalvesOf8(const uint8_t* base, const int64_t offsets[8]) {
  __m128i v[8];
  for (int i = 0; i < 8; ++i) v[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + offsets[i]));
  const __m128i w01 = _mm_unpacklo_epi16(v[0], v[1]), w23 = _mm_unpacklo_epi16(v[2], v[3]);
  const __m128i w45 = _mm_unpacklo_epi16(v[4], v[5]), w67 = _mm_unpacklo_epi16(v[6], v[7]);
  const __m128i d0123 = _mm_unpacklo_epi32(w01, w23), d4567 = _mm_unpacklo_epi32(w45, w67);
  return _mm_unpacklo_epi64(d0123, d4567);
}

// 2^(e − 128) for the E8M0 bytes e in int32 lanes (MXFP4's halved scales,
// exactly as the scalar E8M0Half): the float whose exponent field is e − 1,
// or for e = 0, 1 the subnormals 2^-128 and 2^-127.
inline __m256 E8M0HalfOf8(__m256i e) {
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
  const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
  const __m256i small = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
  return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, subnormal, small));
}

// The same f16 values as floats in lanes 0..7.
inline __m256 ScalesOf8(const uint8_t* base, const int64_t offsets[8]) {
  return _mm256_cvtph_ps(HalvesOf8(base, offsets));
}

// Lane i of *low = Σ of lanes 0..3 of d[i], of *high = Σ of its lanes 4..7 (exact).
inline void SumHalvesOf8(const __m256i d[8], __m256i* low, __m256i* high) {
  const __m256i h01 = _mm256_hadd_epi32(d[0], d[1]), h23 = _mm256_hadd_epi32(d[2], d[3]);
  const __m256i h45 = _mm256_hadd_epi32(d[4], d[5]), h67 = _mm256_hadd_epi32(d[6], d[7]);
  const __m256i q0 = _mm256_hadd_epi32(h01, h23), q1 = _mm256_hadd_epi32(h45, h67);
  // q0 = [rows 0-3, sums of lanes 0-3 | rows 0-3, sums of lanes 4-7], q1 the same for rows 4-7.
  *low = _mm256_permute2x128_si256(q0, q1, 0x20);
  *high = _mm256_permute2x128_si256(q0, q1, 0x31);
}

// Lane i of the result = Σ of the 8 int32 lanes of d[i] (exact).
inline __m256i SumLanesOf8(const __m256i d[8]) {
  __m256i low, high;
  SumHalvesOf8(d, &low, &high);
  return _mm256_add_epi32(low, high);
}

// Lane i of the result = Σ of the 16 int16 lanes of p[i] (exact when every
// partial sum of 8 of them fits in int16: |p| ≤ 4095, e.g. vpmaddubsw of
// codes ≤ 15 against int8).
inline __m256i SumWordsOf8(const __m256i p[8]) {
  const __m256i h01 = _mm256_hadd_epi16(p[0], p[1]), h23 = _mm256_hadd_epi16(p[2], p[3]);
  const __m256i h45 = _mm256_hadd_epi16(p[4], p[5]), h67 = _mm256_hadd_epi16(p[6], p[7]);
  const __m256i q = _mm256_hadd_epi16(_mm256_hadd_epi16(h01, h23), _mm256_hadd_epi16(h45, h67));
  // q = [rows 0-7, Σ of their low 128-bit lane | rows 0-7, Σ of their high lane], 8 words each.
  return _mm256_add_epi32(_mm256_cvtepi16_epi32(_mm256_castsi256_si128(q)),
                          _mm256_cvtepi16_epi32(_mm256_extracti128_si256(q, 1)));
}

// Transposes 8 rows of 8 int32 in place (r[i] lane j ↔ r[j] lane i).
inline void Transpose8x8(__m256i r[8]) {
  __m256i t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_unpacklo_epi64(t[i], t[i + 2]);
    u[i + 1] = _mm256_unpackhi_epi64(t[i], t[i + 2]);
    u[i + 2] = _mm256_unpacklo_epi64(t[i + 1], t[i + 3]);
    u[i + 3] = _mm256_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  // u[j] (j < 4) holds columns j and j + 4 of rows 0..3, u[4 + j] those of rows 4..7.
  for (int j = 0; j < 4; ++j) {
    r[j] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x20);
    r[4 + j] = _mm256_permute2x128_si256(u[j], u[4 + j], 0x31);
  }
}

// The weight-panel packers' step: the 32 bytes at rows[i] + offset of 8 rows
// (nullptr: a row of zeros), transposed, so r[k] holds the rows' 4-byte
// groups k, row i in lane i.
inline void LoadTransposed8(const uint8_t* const rows[8], int64_t offset, __m256i r[8]) {
  for (int i = 0; i < 8; ++i)
    r[i] = rows[i] == nullptr ? _mm256_setzero_si256()
                              : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[i] + offset));
  Transpose8x8(r);
}

inline void Transpose8x8(__m256 r[8]) {
  __m256i v[8];
  for (int i = 0; i < 8; ++i) v[i] = _mm256_castps_si256(r[i]);
  Transpose8x8(v);
  for (int i = 0; i < 8; ++i) r[i] = _mm256_castsi256_ps(v[i]);
}

}  // namespace ridge::kernels::avx2
