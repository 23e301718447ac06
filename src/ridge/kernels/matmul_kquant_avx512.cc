// K-quant MatMul for AVX-512 (VNNI): Q4_K and Q6_K here, Q2_K, Q3_K, Q5_K
// and IQ4_XS from kquant_rows_impl.h with vpdpbusd as their dot.
//
// Rows path (decode): activations quantized once per call to int8 blocks of
// 32 with a float scale (as for Q8_0/Q4_0); each 32-element piece of a
// super-block is one vpdpbusd of unsigned weights against them.
//   Q4_K: w = d·sc_s·q − dmin·m_s (q 4-bit, 8 sub-blocks of 32 with 6-bit sc,
//         m). The q part is scaled per sub-block in float; the m part needs
//         only Σx per sub-block: one FMA of 8 mins against 8 (dx·Σq) per
//         super-block. High nibbles stay in place (×16, scale/16 exact).
//   Q6_K: w = d·sc_g·(q − 32) (q 6-bit, 16 groups of 16, int8 sc). q is
//         assembled from its low 4 and high 2 bits; −32·Σx per 4-byte lane
//         starts the accumulator; a lane's scale is its group's.
// Prefill uses the rows path too, 4 tokens per pass (see the tables below).
#include <cstring>

#include "ridge/kernels/matmul_isa.h"
#include "ridge/kernels/simd_avx512.h"
// After simd_avx512.h (the intrinsics).
#include "ridge/kernels/kquant_rows_impl.h"

namespace ridge::kernels::internal {
namespace {

void PrepareActRow(const float* x, int64_t n_cols, uint8_t* dst) {
  const ActLayout layout(n_cols);
  auto* q = reinterpret_cast<int8_t*>(dst);
  auto* d = reinterpret_cast<float*>(dst + layout.d_off);
  auto* dsum = reinterpret_cast<float*>(dst + layout.dsum_off);
  auto* bias = reinterpret_cast<int32_t*>(dst + layout.bias_off);
  auto* gsum = reinterpret_cast<float*>(dst + layout.gsum_off);
  for (int64_t b = 0; b < layout.n_blocks; ++b) {
    __m256i lane_sums;
    const float scale = avx512::QuantizeBlock32(x + b * kActBlock, q + b * kActBlock, &lane_sums);
    const __m256i lane_bias = _mm256_mullo_epi32(lane_sums, _mm256_set1_epi32(-32));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(bias + b * 8), lane_bias);
    d[b] = scale;
    dsum[b] = scale * static_cast<float>(avx512::HorizontalSumI32(lane_sums));
    StoreGroupSums(lane_sums, scale, gsum + 2 * b);
  }
}

template <int kR, int kT>
void Q4KTile(const MatView& w, const ActLayout& layout, const ActView& acts, int64_t r, float* y, int64_t y_stride) {
  constexpr int64_t kBlockBytes = sizeof(BlockQ4_K);
  constexpr int kPrefetchLines = (kR * kBlockBytes + 63) / 64;
  const uint8_t* base = w.data + r * w.row_bytes;
  const uint8_t* ahead = base + kPrefetchTiles * kR * w.row_bytes;
  const int64_t n_super = w.n_cols / kQK_K;
  const int8_t* xq[kT];
  const float* xd[kT];
  const float* xdsum[kT];
  for (int t = 0; t < kT; ++t) {
    const uint8_t* a = acts.data + t * acts.row_stride;
    xq[t] = reinterpret_cast<const int8_t*>(a);
    xd[t] = reinterpret_cast<const float*>(a + layout.d_off);
    xdsum[t] = reinterpret_cast<const float*>(a + layout.dsum_off);
  }
  // The high nibble sits in place (×16): its sub-blocks' scales are divided by 16.
  const __m256 nibble_fix = _mm256_setr_ps(1, 0.0625f, 1, 0.0625f, 1, 0.0625f, 1, 0.0625f);
  const __m256i low = _mm256_set1_epi8(0x0f), high = _mm256_set1_epi8(static_cast<char>(0xf0));
  __m256 acc[kR][kT], acc_min[kR][kT];
  for (int i = 0; i < kR; ++i)
    for (int t = 0; t < kT; ++t) acc[i][t] = acc_min[i][t] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
#pragma GCC unroll 8
    for (int p = 0; p < kPrefetchLines; ++p)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + sb * kR * kBlockBytes + p * 64), _MM_HINT_T1);
#pragma GCC unroll 4
    for (int i = 0; i < kR; ++i) {
      const uint8_t* block = base + i * w.row_bytes + sb * kBlockBytes;
      __m256 sc, mn;
      Q4KScalesMins(block + 4, &sc, &mn);
      const __m256 dsc = _mm256_mul_ps(_mm256_mul_ps(sc, _mm256_set1_ps(F16At(block))), nibble_fix);
      const __m256 dmn = _mm256_mul_ps(mn, _mm256_set1_ps(F16At(block + 2)));
#pragma GCC unroll 4
      for (int t = 0; t < kT; ++t) {
        acc_min[i][t] = _mm256_fmadd_ps(dmn, _mm256_loadu_ps(xdsum[t] + sb * 8), acc_min[i][t]);
        const __m256 s = _mm256_mul_ps(dsc, _mm256_loadu_ps(xd[t] + sb * 8));
        const int8_t* x = xq[t] + sb * kQK_K;
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 16 + 32 * k));
          const __m256i d_lo = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_and_si256(qs, low),
                                                   _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 64 * k)));
          const __m256i x_hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 64 * k + 32));
          const __m256i d_hi = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_and_si256(qs, high), x_hi);
          acc[i][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d_lo), Lane(s, 2 * k), acc[i][t]);
          acc[i][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(d_hi), Lane(s, 2 * k + 1), acc[i][t]);
        }
      }
    }
  }
  for (int i = 0; i < kR; ++i)
    for (int t = 0; t < kT; ++t)
      y[t * y_stride + r + i] = HorizontalSum(acc[i][t]) - HorizontalSum(acc_min[i][t]);
}

template <int kR, int kT>
void Q6KTile(const MatView& w, const ActLayout& layout, const ActView& acts, int64_t r, float* y, int64_t y_stride) {
  constexpr int64_t kBlockBytes = sizeof(BlockQ6_K);
  constexpr int kPrefetchLines = (kR * kBlockBytes + 63) / 64;
  const uint8_t* base = w.data + r * w.row_bytes;
  const uint8_t* ahead = base + kPrefetchTiles * kR * w.row_bytes;
  const int64_t n_super = w.n_cols / kQK_K;
  const int8_t* xq[kT];
  const float* xd[kT];
  const int32_t* xbias[kT];
  for (int t = 0; t < kT; ++t) {
    const uint8_t* a = acts.data + t * acts.row_stride;
    xq[t] = reinterpret_cast<const int8_t*>(a);
    xd[t] = reinterpret_cast<const float*>(a + layout.d_off);
    xbias[t] = reinterpret_cast<const int32_t*>(a + layout.bias_off);
  }
  const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x30);
  __m256 acc[kR][kT];
  for (int i = 0; i < kR; ++i)
    for (int t = 0; t < kT; ++t) acc[i][t] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
#pragma GCC unroll 8
    for (int p = 0; p < kPrefetchLines; ++p)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + sb * kR * kBlockBytes + p * 64), _MM_HINT_T1);
#pragma GCC unroll 4
    for (int i = 0; i < kR; ++i) {
      const uint8_t* block = base + i * w.row_bytes + sb * kBlockBytes;
      const __m256 d = _mm256_set1_ps(F16At(block + 208));
      const __m128i sc16 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 192));
      const __m256 sc_lo = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(sc16)), d);
      const __m256 sc_hi = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(sc16, 8))), d);
      for (int h = 0; h < 2; ++h) {
        const uint8_t* ql = block + 64 * h;
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
        const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
        const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 128 + 32 * h));
        const __m256i q[4] = {
            _mm256_or_si256(_mm256_and_si256(a, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), m2)),
            _mm256_or_si256(_mm256_and_si256(b, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 2), m2)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), m4), _mm256_and_si256(hb, m2)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), m4),
                            _mm256_and_si256(_mm256_srli_epi16(hb, 2), m2)),
        };
        const __m256 sc = h == 0 ? sc_lo : sc_hi;
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          // Lanes 0..3 (elements 0..15) take group 2j's scale, lanes 4..7 group 2j+1's.
          const __m256 lane_sc = _mm256_permutevar8x32_ps(sc, _mm256_setr_epi32(2 * j, 2 * j, 2 * j, 2 * j, 2 * j + 1,
                                                                                 2 * j + 1, 2 * j + 1, 2 * j + 1));
          const int64_t xb = sb * 8 + 4 * h + j;  // the 32-block of x these 32 weights meet
#pragma GCC unroll 4
          for (int t = 0; t < kT; ++t) {
            const __m256i dot = _mm256_dpbusd_epi32(
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xbias[t] + xb * 8)), q[j],
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[t] + xb * kActBlock)));
            acc[i][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(lane_sc, _mm256_set1_ps(xd[t][xb])),
                                        acc[i][t]);
          }
        }
      }
    }
  }
  for (int i = 0; i < kR; ++i)
    for (int t = 0; t < kT; ++t) y[t * y_stride + r + i] = HorizontalSum(acc[i][t]);
}

template <bool kQ6, int kR, int kT>
void Tile(const MatView& w, const ActLayout& layout, const ActView& acts, int64_t r, float* y, int64_t y_stride) {
  if constexpr (kQ6) {
    Q6KTile<kR, kT>(w, layout, acts, r, y, y_stride);
  } else {
    Q4KTile<kR, kT>(w, layout, acts, r, y, y_stride);
  }
}

template <bool kQ6, int kT>
void RowsForTokens(const MatView& w, const ActView& acts, int64_t r_begin, int64_t r_end, float* y,
                   int64_t y_stride) {
  constexpr int kR = kT == 1 ? 4 : 2;
  const ActLayout layout(w.n_cols);
  int64_t r = r_begin;
  for (; r + kR <= r_end; r += kR) Tile<kQ6, kR, kT>(w, layout, acts, r, y, y_stride);
  for (; r < r_end; ++r) Tile<kQ6, 1, kT>(w, layout, acts, r, y, y_stride);
}

template <bool kQ6>
void Rows(const MatView& w, const ActView& acts, int64_t n_tokens, int64_t r_begin, int64_t r_end, float* y,
          int64_t y_stride) {
  switch (n_tokens) {
    case 1: return RowsForTokens<kQ6, 1>(w, acts, r_begin, r_end, y, y_stride);
    case 2: return RowsForTokens<kQ6, 2>(w, acts, r_begin, r_end, y, y_stride);
    case 3: return RowsForTokens<kQ6, 3>(w, acts, r_begin, r_end, y, y_stride);
    default: return RowsForTokens<kQ6, 4>(w, acts, r_begin, r_end, y, y_stride);
  }
}

// No panel path: with 4 tokens per pass the SIMD rows kernel beat an f32
// panel (reference-dequantized, FMA) at every batch size measured, 8 to 512
// tokens (AVX-512, 2 threads: Q4_K 217 vs 181, Q6_K 190 vs 142 GFLOP/s at 512).
constexpr ActPrep kQuantActs{ActRowBytes, PrepareActRow};
constexpr ActPrep kNoActs{nullptr, nullptr};
constexpr TypeKernels kQ4KKernels{kQuantActs, 4, Rows<false>, kNoActs, 0, 0, nullptr, nullptr, nullptr};
constexpr TypeKernels kQ6KKernels{kQuantActs, 4, Rows<true>, kNoActs, 0, 0, nullptr, nullptr, nullptr};

struct VnniDot {
  static constexpr bool kAnyUnsignedByte = true;
  static __m256i DotAdd(__m256i acc, __m256i u8, __m256i s8) { return _mm256_dpbusd_epi32(acc, u8, s8); }
};
template <typename Kind>
constexpr TypeKernels kKernels{kQuantActs, 4, KQuantRows<Kind, VnniDot>, kNoActs, 0, 0, nullptr, nullptr, nullptr};

}  // namespace

const TypeKernels* Avx512KQuantKernels(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_K: return &kQ4KKernels;
    case GgmlType::kQ6_K: return &kQ6KKernels;
    case GgmlType::kQ2_K: return &kKernels<Q2K>;
    case GgmlType::kQ3_K: return &kKernels<Q3K>;
    case GgmlType::kQ5_K: return &kKernels<Q5K>;
    case GgmlType::kIQ4_XS: return &kKernels<IQ4XS>;
    default: return nullptr;
  }
}

}  // namespace ridge::kernels::internal
