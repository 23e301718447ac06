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

#include <cstdint>
#include <cstring>

namespace ridge::kernels::avx512 {

inline int32_t HorizontalSumI32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// 5-bit codes from a 64-byte load of packed nibbles wv (the low or the high
// nibbles taken) and one of their fifth bits hv (Q5_K's qh, the Q5_0/Q5_1
// panels' high plane): a GF(2) affine map (GFNI) moves bit s of each hv byte
// to bit 4 alone, or the high nibble to the low one, in one instruction;
// vpternlogd merges the nibble and the bit.
inline __attribute__((always_inline)) __m512i FiveBitCodes(__m512i wv, __m512i hv, int s, bool high_nibble) {
  // Output bit i of a byte is the parity of (matrix byte 7 − i) & (input byte).
  const __m512i bit = _mm512_gf2p8affine_epi64_epi8(hv, _mm512_set1_epi64(int64_t{1} << (24 + s)), 0);
  const __m512i nibble = high_nibble ? _mm512_gf2p8affine_epi64_epi8(wv, _mm512_set1_epi64(0x1020408000000000), 0) : wv;
  return _mm512_ternarylogic_epi32(nibble, bit, _mm512_set1_epi8(0x0f), 0xec);  // (nibble & 0x0f) | bit
}

// Quantizes one block of 32 activations to int8 with one scale, as every
// int8 kernel of every ISA does (simd_avx2.h's twin gives the same bytes):
// scale = max|x| / 127, q = round-to-nearest-even(x · (1/scale)). Stores the
// 32 bytes at q, returns the scale, and sets *lane_sums to the Σq of each
// 4-byte lane (8 int32).
inline float QuantizeBlock32(const float* x, int8_t* q, __m256i* lane_sums) {
  const __m512 sign_mask = _mm512_set1_ps(-0.0f);
  const __m512 lo = _mm512_loadu_ps(x);
  const __m512 hi = _mm512_loadu_ps(x + 16);
  const float max_abs =
      _mm512_reduce_max_ps(_mm512_max_ps(_mm512_andnot_ps(sign_mask, lo), _mm512_andnot_ps(sign_mask, hi)));
  const float scale = max_abs / 127.0f;
  const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
  const __m512 vinv = _mm512_set1_ps(inv);
  // Round to nearest even; |x·inv| <= 127 so the narrowing never saturates.
  const __m128i q_lo = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(lo, vinv)));
  const __m128i q_hi = _mm512_cvtepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(hi, vinv)));
  const __m256i qv = _mm256_set_m128i(q_hi, q_lo);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), qv);
  *lane_sums = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), qv);
  return scale;
}

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

// Transposes 8 rows of 8 floats in place (r[i] lane j ↔ r[j] lane i).
inline void Transpose8x8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  // u[j] (j < 4) holds columns j and j + 4 of rows 0..3, u[4 + j] those of rows 4..7.
  for (int j = 0; j < 4; ++j) {
    r[j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x20);
    r[4 + j] = _mm256_permute2f128_ps(u[j], u[4 + j], 0x31);
  }
}

// Helpers of the rows kernels of the 32-element block types (8 rows a tile).

// The f16 values at base + offsets[i] (block scales or minimums; 16 bytes are
// read at each), in words 0..7: 16-byte loads and a word transpose (7 shuffles), a third of the cost of a
// vpgatherdd on Zen 4, the single largest cost of decode here when gathered.
inline __m128i HalvesOf8(const uint8_t* base, const int64_t offsets[8]) {
  __m128i v[8];
  for (int i = 0; i < 8; ++i) v[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(base + offsets[i]));
  const __m128i w01 = _mm_unpacklo_epi16(v[0], v[1]), w23 = _mm_unpacklo_epi16(v[2], v[3]);
  const __m128i w45 = _mm_unpacklo_epi16(v[4], v[5]), w67 = _mm_unpacklo_epi16(v[6], v[7]);
  const __m128i d0123 = _mm_unpacklo_epi32(w01, w23), d4567 = _mm_unpacklo_epi32(w45, w67);
  return _mm_unpacklo_epi64(d0123, d4567);
}

// The same values as floats in lanes 0..7.
inline __m256 ScalesOf8(const uint8_t* base, const int64_t offsets[8]) {
  return _mm256_cvtph_ps(HalvesOf8(base, offsets));
}

// Weight panels (kernels/weight_panels.h): the quants of rows [r_begin,
// r_begin + 32) of a file-layout matrix (rows past n_rows: zeros) into a
// panel of panel_block_bytes per block; the scales are the caller's. A
// file block holds kDwords 4-byte groups of quants (8: Q8_0's 32 bytes, 4: 16
// bytes of nibbles) from qs_offset, each byte xor flip. Per 16 rows, 16
// dwords of each row (two or four blocks) fill a register, and a 16 × 16
// transpose leaves one group of the 16 rows in each.
template <int kDwords>
inline void PackPanelQuants(const uint8_t* data, int64_t n_rows, int64_t row_bytes, int64_t r_begin, int64_t n_blocks,
                            int64_t file_block_bytes, int64_t qs_offset, uint8_t flip, int64_t panel_block_bytes,
                            uint8_t* panel) {
  constexpr int kBlocksPerLoad = 16 / kDwords;
  // 16 row streams outrun the hardware prefetcher: at batch 16 the packing
  // is where the weights come from memory, and it ran at ~17 GB/s.
  constexpr int64_t kAheadBlocks = 16;
  const __m512i flip_bytes = _mm512_set1_epi8(static_cast<char>(flip));
  for (int64_t half = 0; half < 2; ++half) {
    const uint8_t* rows[16];
    for (int i = 0; i < 16; ++i) {
      const int64_t r = r_begin + half * 16 + i;
      rows[i] = r < n_rows ? data + r * row_bytes : nullptr;
    }
    for (int64_t b = 0; b < n_blocks; b += kBlocksPerLoad) {
      const int n_here = static_cast<int>(n_blocks - b < kBlocksPerLoad ? n_blocks - b : kBlocksPerLoad);
      __m512 v[16];
      for (int i = 0; i < 16; ++i) {
        if (rows[i] == nullptr) {
          v[i] = _mm512_setzero_ps();
          continue;
        }
        const uint8_t* ahead = rows[i] + (b + kAheadBlocks) * file_block_bytes;
        _mm_prefetch(reinterpret_cast<const char*>(ahead), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(ahead + 64), _MM_HINT_T0);
        const uint8_t* qs = rows[i] + b * file_block_bytes + qs_offset;  // block b's quants
        __m512i r;
        if constexpr (kDwords == 4) {
          auto block = [&](int k) {
            return k < n_here ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + k * file_block_bytes))
                              : _mm_setzero_si128();
          };
          r = _mm512_inserti32x4(_mm512_castsi128_si512(block(0)), block(1), 1);
          r = _mm512_inserti32x4(_mm512_inserti32x4(r, block(2), 2), block(3), 3);
        } else {
          static_assert(kDwords == 8);
          auto block = [&](int k) {
            return k < n_here ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + k * file_block_bytes))
                              : _mm256_setzero_si256();
          };
          r = _mm512_inserti64x4(_mm512_castsi256_si512(block(0)), block(1), 1);
        }
        v[i] = _mm512_castsi512_ps(_mm512_xor_si512(r, flip_bytes));
      }
      Transpose16x16(v);
      for (int d = 0; d < kDwords * n_here; ++d) {
        uint8_t* dst = panel + (b + d / kDwords) * panel_block_bytes + (d % kDwords) * 128 + half * 64;
        _mm512_storeu_ps(reinterpret_cast<float*>(dst), v[d]);
      }
    }
  }
}

// Helpers of the panel tiles: 32 rows (two zmm of 16) × kT tokens.

// dot{0,1}[t] += the 4-byte group of unsigned weights w{0,1} (16 rows each)
// times token t's 4 int8 activations at xq[t] + offset, broadcast.
template <int kT>
inline void PanelGroupDots(__m512i w0, __m512i w1, const int8_t* const xq[kT], int64_t offset, __m512i dot0[kT],
                           __m512i dot1[kT]) {
#pragma GCC unroll 8
  for (int t = 0; t < kT; ++t) {
    int32_t x4;
    std::memcpy(&x4, xq[t] + offset, 4);
    const __m512i xb = _mm512_set1_epi32(x4);
    dot0[t] = _mm512_dpbusd_epi32(dot0[t], w0, xb);
    dot1[t] = _mm512_dpbusd_epi32(dot1[t], w1, xb);
  }
}

// The block's float step of every (row, token): acc = fma(float(dot), s · d_x, acc).
template <int kT>
inline void PanelScaleBlock(__m512 s0, __m512 s1, const float* const xd[kT], int64_t b, const __m512i dot0[kT],
                            const __m512i dot1[kT], __m512 acc0[kT], __m512 acc1[kT]) {
#pragma GCC unroll 8
  for (int t = 0; t < kT; ++t) {
    const __m512 dx = _mm512_set1_ps(xd[t][b]);
    acc0[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot0[t]), _mm512_mul_ps(s0, dx), acc0[t]);
    acc1[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot1[t]), _mm512_mul_ps(s1, dx), acc1[t]);
  }
}

// y[t * y_stride + j] = row j's result for token t, j < n_valid_rows.
template <int kT>
inline void StorePanelTile(const __m512 acc0[kT], const __m512 acc1[kT], int64_t n_valid_rows, float* y,
                           int64_t y_stride) {
  const __mmask16 m0 = n_valid_rows >= 16 ? __mmask16(0xffff) : __mmask16((1u << n_valid_rows) - 1);
  const __mmask16 m1 = n_valid_rows >= 32   ? __mmask16(0xffff)
                       : n_valid_rows <= 16 ? __mmask16(0)
                                            : __mmask16((1u << (n_valid_rows - 16)) - 1);
  for (int t = 0; t < kT; ++t) {
    _mm512_mask_storeu_ps(y + t * y_stride, m0, acc0[t]);
    _mm512_mask_storeu_ps(y + t * y_stride + 16, m1, acc1[t]);
  }
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

// Lane i of the result = Σ of the 8 int32 lanes of d[i] (exact), where lanes
// 4..7 of each d[i] hold 2^high_shift times their true value (Q4_0's high
// nibbles taken in place; they are multiples of 2^high_shift, so the
// arithmetic shift is exact).
template <int kHighShift>
inline __m256i SumLanesOf8(const __m256i d[8]) {
  __m256i low, high;
  SumHalvesOf8(d, &low, &high);
  return _mm256_add_epi32(low, kHighShift == 0 ? high : _mm256_srai_epi32(high, kHighShift));
}

}  // namespace ridge::kernels::avx512
