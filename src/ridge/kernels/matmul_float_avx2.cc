// F32, F16 and BF16 MatMul inner kernels for AVX2 + FMA + F16C, and the f32
// panel kernel every AVX2 type uses for prefill.
//
// Rows path (decode): weights converted exactly to f32 as they stream in
// (F16 by vcvtph2ps, BF16 by a 16-bit shift), FMA with the f32 activations.
// Panels path (prefill): 16 rows dequantized to f32 and packed so that they
// sit in the lanes of two ymm registers ([n_cols][16] floats), multiplied by
// broadcast activations with FMA, K cut into chunks that stay in L1/L2.
#include <immintrin.h>

#include <cstring>

#include "ridge/kernels/matmul_isa.h"

namespace ridge::kernels::internal {
namespace {

enum class Kind { kF32, kF16, kBF16 };

template <Kind kKind>
constexpr int64_t ElemBytes() {
  return kKind == Kind::kF32 ? 4 : 2;
}

// 8 weights as floats.
template <Kind kKind>
__m256 Load8(const uint8_t* p) {
  if constexpr (kKind == Kind::kF32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  } else if constexpr (kKind == Kind::kF16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  } else {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
}

// The first n (< 8) weights as floats, the rest zero; reads only n elements.
template <Kind kKind>
__m256 LoadPartial(const uint8_t* p, int64_t n) {
  alignas(32) uint8_t buf[32] = {};
  std::memcpy(buf, p, static_cast<size_t>(n * ElemBytes<kKind>()));
  return Load8<kKind>(buf);
}

__m256 LoadPartialF32(const float* p, int64_t n) {
  alignas(32) float buf[8] = {};
  std::memcpy(buf, p, static_cast<size_t>(n) * 4);
  return _mm256_load_ps(buf);
}

float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// One row × kT tokens, kU 8-column steps in flight; the row kPrefetchRows
// ahead is prefetched into L2 a slice per step (see matmul_float_avx512.cc).
constexpr int kPrefetchRows = 2;

template <Kind kKind, int kT>
void RowTokens(const MatView& w, const ActView& acts, int64_t r, float* y, int64_t y_stride) {
  constexpr int64_t kEb = ElemBytes<kKind>();
  constexpr int kU = kT == 1 ? 4 : 2;
  constexpr int64_t kStepCols = 8 * kU;
  constexpr int kPrefetchLines = static_cast<int>((kStepCols * kEb + 63) / 64);
  const uint8_t* row = w.data + r * w.row_bytes;
  const uint8_t* ahead = row + kPrefetchRows * w.row_bytes;
  const float* x[kT];
  #pragma GCC unroll 16
  for (int t = 0; t < kT; ++t) x[t] = reinterpret_cast<const float*>(acts.data + t * acts.row_stride);
  __m256 acc[kU][kT];
  for (int u = 0; u < kU; ++u)
    #pragma GCC unroll 16
    for (int t = 0; t < kT; ++t) acc[u][t] = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + kStepCols <= w.n_cols; c += kStepCols) {
#pragma GCC unroll 8
    for (int p = 0; p < kPrefetchLines; ++p)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + c * kEb + p * 64), _MM_HINT_T1);
#pragma GCC unroll 8
    for (int u = 0; u < kU; ++u) {
      const __m256 wv = Load8<kKind>(row + (c + 8 * u) * kEb);
#pragma GCC unroll 4
      for (int t = 0; t < kT; ++t) acc[u][t] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x[t] + c + 8 * u), acc[u][t]);
    }
  }
  for (; c + 8 <= w.n_cols; c += 8) {
    const __m256 wv = Load8<kKind>(row + c * kEb);
    #pragma GCC unroll 16
    for (int t = 0; t < kT; ++t) acc[0][t] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x[t] + c), acc[0][t]);
  }
  if (c < w.n_cols) {
    const int64_t n = w.n_cols - c;
    const __m256 wv = LoadPartial<kKind>(row + c * kEb, n);
    #pragma GCC unroll 16
    for (int t = 0; t < kT; ++t) acc[0][t] = _mm256_fmadd_ps(wv, LoadPartialF32(x[t] + c, n), acc[0][t]);
  }
  #pragma GCC unroll 16
  for (int t = 0; t < kT; ++t) {
    __m256 sum = acc[0][t];
    for (int u = 1; u < kU; ++u) sum = _mm256_add_ps(sum, acc[u][t]);
    y[t * y_stride + r] = HorizontalSum(sum);
  }
}

template <Kind kKind, int kT>
void RowsForTokens(const MatView& w, const ActView& acts, int64_t r_begin, int64_t r_end, float* y,
                   int64_t y_stride) {
  for (int64_t r = r_begin; r < r_end; ++r) RowTokens<kKind, kT>(w, acts, r, y, y_stride);
}

template <Kind kKind>
void Rows(const MatView& w, const ActView& acts, int64_t n_tokens, int64_t r_begin, int64_t r_end, float* y,
          int64_t y_stride) {
  switch (n_tokens) {
    case 1: return RowsForTokens<kKind, 1>(w, acts, r_begin, r_end, y, y_stride);
    case 2: return RowsForTokens<kKind, 2>(w, acts, r_begin, r_end, y, y_stride);
    case 3: return RowsForTokens<kKind, 3>(w, acts, r_begin, r_end, y, y_stride);
    default: return RowsForTokens<kKind, 4>(w, acts, r_begin, r_end, y, y_stride);
  }
}

template <Kind kKind>
void DequantizeColsF(const uint8_t* row, int64_t c_begin, int64_t n, float* out) {
  const uint8_t* p = row + c_begin * ElemBytes<kKind>();
  int64_t c = 0;
  for (; c + 8 <= n; c += 8) _mm256_storeu_ps(out + c, Load8<kKind>(p + c * ElemBytes<kKind>()));
  if (c < n) {
    alignas(32) float tail[8];
    _mm256_store_ps(tail, LoadPartial<kKind>(p + c * ElemBytes<kKind>(), n - c));
    std::memcpy(out + c, tail, static_cast<size_t>(n - c) * 4);
  }
}

template <Kind kKind>
void PackPanel(const MatView& w, int64_t r_begin, uint8_t* panel) {
  Avx2PackF32Panel(w, r_begin, DequantizeColsF<kKind>, panel);
}

// r[i] lane j <-> r[j] lane i.
void Transpose8x8(__m256 r[8]) {
  __m256 t[8], s[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    s[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    s[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xee);
    s[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    s[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xee);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(s[i], s[i + 4], 0x31);
  }
}

// ---- the f32 panel kernel --------------------------------------------------

constexpr int64_t kChunkCols = 256;  // 16 rows × 256 × 4 B = 16 KiB of panel per chunk

// Accumulates 16 panel rows × kT tokens over columns [c_begin, c_end) into y.
template <int kT>
void PanelTile(const float* panel, int64_t c_begin, int64_t c_end, const float* x, int64_t x_stride,
               bool first_chunk, int64_t n_valid_rows, float* y, int64_t y_stride) {
  __m256 acc0[kT], acc1[kT];
  alignas(32) float tmp[kAvx2PanelRows];
  #pragma GCC unroll 16
  for (int t = 0; t < kT; ++t) {
    if (first_chunk) {
      acc0[t] = acc1[t] = _mm256_setzero_ps();
    } else {
      std::memset(tmp, 0, sizeof tmp);
      std::memcpy(tmp, y + t * y_stride, static_cast<size_t>(n_valid_rows) * 4);
      acc0[t] = _mm256_load_ps(tmp);
      acc1[t] = _mm256_load_ps(tmp + 8);
    }
  }
  const float* p = panel + c_begin * kAvx2PanelRows;
  for (int64_t c = c_begin; c < c_end; ++c, p += kAvx2PanelRows) {
    const __m256 w0 = _mm256_load_ps(p);
    const __m256 w1 = _mm256_load_ps(p + 8);
#pragma GCC unroll 8
    for (int t = 0; t < kT; ++t) {
      const __m256 xb = _mm256_broadcast_ss(x + t * x_stride + c);
      acc0[t] = _mm256_fmadd_ps(w0, xb, acc0[t]);
      acc1[t] = _mm256_fmadd_ps(w1, xb, acc1[t]);
    }
  }
  #pragma GCC unroll 16
  for (int t = 0; t < kT; ++t) {
    if (n_valid_rows == kAvx2PanelRows) {
      _mm256_storeu_ps(y + t * y_stride, acc0[t]);
      _mm256_storeu_ps(y + t * y_stride + 8, acc1[t]);
    } else {
      _mm256_store_ps(tmp, acc0[t]);
      _mm256_store_ps(tmp + 8, acc1[t]);
      std::memcpy(y + t * y_stride, tmp, static_cast<size_t>(n_valid_rows) * 4);
    }
  }
}

// Below this the rows path wins (2 threads, F16: 8 tokens 88 vs 63 GFLOP/s;
// from 64 tokens on the panels do: 111 vs 93).
constexpr int64_t kPanelMinTokens = 32;
constexpr ActPrep kFloatActs{nullptr, nullptr};
constexpr TypeKernels kF32Kernels{kFloatActs, 4, Rows<Kind::kF32>, kFloatActs, kAvx2PanelRows, kPanelMinTokens,
                                  Avx2F32PanelBytes, PackPanel<Kind::kF32>, Avx2F32PanelMatMul};
constexpr TypeKernels kF16Kernels{kFloatActs, 4, Rows<Kind::kF16>, kFloatActs, kAvx2PanelRows, kPanelMinTokens,
                                  Avx2F32PanelBytes, PackPanel<Kind::kF16>, Avx2F32PanelMatMul};
constexpr TypeKernels kBf16Kernels{kFloatActs, 4, Rows<Kind::kBF16>, kFloatActs, kAvx2PanelRows, kPanelMinTokens,
                                   Avx2F32PanelBytes, PackPanel<Kind::kBF16>, Avx2F32PanelMatMul};

}  // namespace

void Avx2PackF32Panel(const MatView& w, int64_t r_begin, DequantizeCols dequantize, uint8_t* panel_bytes) {
  auto* panel = reinterpret_cast<float*>(panel_bytes);
  constexpr int64_t kStep = 256;
  alignas(32) float buf[kAvx2PanelRows][kStep];
  for (int64_t c0 = 0; c0 < w.n_cols; c0 += kStep) {
    const int64_t n = w.n_cols - c0 < kStep ? w.n_cols - c0 : kStep;
    const int64_t n_padded = (n + 7) & ~int64_t{7};
    for (int64_t j = 0; j < kAvx2PanelRows; ++j) {
      const int64_t r = r_begin + j;
      if (r < w.n_rows) {
        dequantize(w.data + r * w.row_bytes, c0, n, buf[j]);
        for (int64_t c = n; c < n_padded; ++c) buf[j][c] = 0.0f;
      } else {
        for (int64_t c = 0; c < n_padded; ++c) buf[j][c] = 0.0f;
      }
    }
    for (int64_t c = 0; c < n; c += 8) {
      const int64_t n_out = n - c < 8 ? n - c : 8;
      for (int64_t half = 0; half < 2; ++half) {
        __m256 v[8];
        for (int i = 0; i < 8; ++i) v[i] = _mm256_load_ps(buf[half * 8 + i] + c);
        Transpose8x8(v);
        for (int64_t k = 0; k < n_out; ++k) _mm256_store_ps(panel + (c0 + c + k) * kAvx2PanelRows + half * 8, v[k]);
      }
    }
  }
}

int64_t Avx2F32PanelBytes(int64_t n_cols) { return n_cols * kAvx2PanelRows * 4; }

void Avx2F32PanelMatMul(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts,
                        int64_t n_tokens, float* y, int64_t y_stride) {
  constexpr int kT = 6;
  const auto* p = reinterpret_cast<const float*>(panel);
  const auto* x = reinterpret_cast<const float*>(acts.data);
  const int64_t x_stride = acts.row_stride / 4;
  for (int64_t c0 = 0; c0 < n_cols; c0 += kChunkCols) {
    const int64_t c1 = c0 + kChunkCols < n_cols ? c0 + kChunkCols : n_cols;
    const bool first = c0 == 0;
    int64_t t = 0;
    for (; t + kT <= n_tokens; t += kT)
      PanelTile<kT>(p, c0, c1, x + t * x_stride, x_stride, first, n_valid_rows, y + t * y_stride, y_stride);
    for (; t < n_tokens; ++t)
      PanelTile<1>(p, c0, c1, x + t * x_stride, x_stride, first, n_valid_rows, y + t * y_stride, y_stride);
  }
}

const TypeKernels* Avx2FloatKernels(GgmlType type) {
  switch (type) {
    case GgmlType::kF32: return &kF32Kernels;
    case GgmlType::kF16: return &kF16Kernels;
    case GgmlType::kBF16: return &kBf16Kernels;
    default: return nullptr;
  }
}

}  // namespace ridge::kernels::internal
