// F32, F16 and BF16 MatMul inner kernels for AVX-512.
//
// Rows path (decode): weights converted exactly to f32 as they stream in
// (F16 by vcvtph2ps, BF16 by a 16-bit shift) and multiplied by the f32
// activations with FMA; kR rows × kT tokens per pass, one masked tail.
// Panels path (prefill): 32 rows packed so that the 32 rows sit in the lanes
// of two zmm registers, multiplied by broadcast activations:
//   F32, F16: f32 panel, FMA (exact weights);
//   BF16:     bf16 pairs per lane, vdpbf16ps on activations rounded to bf16.
// The K dimension is cut into chunks so that a chunk of the panel stays in L2
// while every token tile passes over it.
#include "ridge/kernels/simd_avx512.h"

#include <cstring>

#include "ridge/kernels/matmul_isa.h"

namespace ridge::kernels::internal {
namespace {

enum class Kind { kF32, kF16, kBF16 };

constexpr int64_t kPanelRows = kAvx512PanelRows;
constexpr int64_t kChunkCols = 256;  // K chunk of the panel kernels (32 rows × 256 × 4 B = 32 KiB)

__mmask16 TailMask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }  // n <= 16

// 16 weights (or fewer under mask) as floats.
template <Kind kKind>
__m512 LoadWeights(const uint8_t* p, __mmask16 mask) {
  if constexpr (kKind == Kind::kF32) {
    return _mm512_maskz_loadu_ps(mask, p);
  } else if constexpr (kKind == Kind::kF16) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, p));
  } else {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mask, p)), 16));
  }
}

template <Kind kKind>
__m512 LoadWeights(const uint8_t* p) {
  if constexpr (kKind == Kind::kF32) {
    return _mm512_loadu_ps(p);
  } else if constexpr (kKind == Kind::kF16) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  } else {
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))), 16));
  }
}

template <Kind kKind>
constexpr int64_t ElemBytes() {
  return kKind == Kind::kF32 ? 4 : 2;
}

// One row × kT tokens, kU 16-column steps in flight. A thread's rows are one
// sequential stream; the row kPrefetchRows ahead is prefetched into L2 a
// slice per step (one stream the hardware follows, plus the explicit
// prefetch: 16-20 → 24-25 GB/s from DRAM on one Zen 4 core for F16, where
// several rows at once were slower).
constexpr int kPrefetchRows = 2;

template <Kind kKind, int kT>
void RowTokens(const MatView& w, const ActView& acts, int64_t r, float* y, int64_t y_stride) {
  constexpr int64_t kEb = ElemBytes<kKind>();
  constexpr int kU = kT == 1 ? 4 : 2;
  constexpr int64_t kStepCols = 16 * kU;
  constexpr int kPrefetchLines = static_cast<int>(kStepCols * kEb / 64);
  const uint8_t* row = w.data + r * w.row_bytes;
  const uint8_t* ahead = row + kPrefetchRows * w.row_bytes;
  const float* x[kT];
  #pragma GCC unroll 16
  for (int t = 0; t < kT; ++t) x[t] = reinterpret_cast<const float*>(acts.data + t * acts.row_stride);
  __m512 acc[kU][kT];
  for (int u = 0; u < kU; ++u)
    #pragma GCC unroll 16
    for (int t = 0; t < kT; ++t) acc[u][t] = _mm512_setzero_ps();
  int64_t c = 0;
  for (; c + kStepCols <= w.n_cols; c += kStepCols) {
#pragma GCC unroll 8
    for (int p = 0; p < kPrefetchLines; ++p)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + c * kEb + p * 64), _MM_HINT_T1);
#pragma GCC unroll 8
    for (int u = 0; u < kU; ++u) {
      const __m512 wv = LoadWeights<kKind>(row + (c + 16 * u) * kEb);
#pragma GCC unroll 8
      for (int t = 0; t < kT; ++t) acc[u][t] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x[t] + c + 16 * u), acc[u][t]);
    }
  }
  for (; c < w.n_cols; c += 16) {
    const __mmask16 mask = w.n_cols - c >= 16 ? __mmask16(0xffff) : TailMask(w.n_cols - c);
    const __m512 wv = LoadWeights<kKind>(row + c * kEb, mask);
    #pragma GCC unroll 16
    for (int t = 0; t < kT; ++t) acc[0][t] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(mask, x[t] + c), acc[0][t]);
  }
  #pragma GCC unroll 16
  for (int t = 0; t < kT; ++t) {
    __m512 sum = acc[0][t];
    for (int u = 1; u < kU; ++u) sum = _mm512_add_ps(sum, acc[u][t]);
    y[t * y_stride + r] = _mm512_reduce_add_ps(sum);
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

// ---- F32 / F16 panels: f32 [n_cols][32 rows] -----------------------------

int64_t F32PanelBytes(int64_t n_cols) { return n_cols * kPanelRows * 4; }

template <Kind kKind>
void PackF32Panel(const MatView& w, int64_t r_begin, uint8_t* panel_bytes) {
  constexpr int64_t kEb = ElemBytes<kKind>();
  auto* panel = reinterpret_cast<float*>(panel_bytes);
  for (int64_t half = 0; half < 2; ++half) {
    const int64_t r0 = r_begin + half * 16;
    const uint8_t* rows[16];
    bool valid[16];
    for (int i = 0; i < 16; ++i) {
      valid[i] = r0 + i < w.n_rows;
      rows[i] = valid[i] ? w.data + (r0 + i) * w.row_bytes : nullptr;
    }
    for (int64_t c = 0; c < w.n_cols; c += 16) {
      const int64_t n = w.n_cols - c < 16 ? w.n_cols - c : 16;
      const __mmask16 mask = TailMask(n);
      __m512 v[16];
      for (int i = 0; i < 16; ++i) v[i] = valid[i] ? LoadWeights<kKind>(rows[i] + c * kEb, mask) : _mm512_setzero_ps();
      avx512::Transpose16x16(v);
      for (int64_t j = 0; j < n; ++j) _mm512_store_ps(panel + (c + j) * kPanelRows + half * 16, v[j]);
    }
  }
}

// Accumulates 32 panel rows × kT tokens over columns [c_begin, c_end) into y.
template <int kT>
void F32PanelTile(const float* panel, int64_t c_begin, int64_t c_end, const float* x, int64_t x_stride,
                  bool first_chunk, __mmask16 m0, __mmask16 m1, float* y, int64_t y_stride) {
  __m512 acc0[kT], acc1[kT];
  #pragma GCC unroll 16
  for (int t = 0; t < kT; ++t) {
    if (first_chunk) {
      acc0[t] = acc1[t] = _mm512_setzero_ps();
    } else {
      acc0[t] = _mm512_maskz_loadu_ps(m0, y + t * y_stride);
      acc1[t] = _mm512_maskz_loadu_ps(m1, y + t * y_stride + 16);
    }
  }
  const float* p = panel + c_begin * kPanelRows;
  for (int64_t c = c_begin; c < c_end; ++c, p += kPanelRows) {
    const __m512 w0 = _mm512_load_ps(p);
    const __m512 w1 = _mm512_load_ps(p + 16);
    #pragma GCC unroll 16
    for (int t = 0; t < kT; ++t) {
      const __m512 xb = _mm512_set1_ps(x[t * x_stride + c]);
      acc0[t] = _mm512_fmadd_ps(w0, xb, acc0[t]);
      acc1[t] = _mm512_fmadd_ps(w1, xb, acc1[t]);
    }
  }
  #pragma GCC unroll 16
  for (int t = 0; t < kT; ++t) {
    _mm512_mask_storeu_ps(y + t * y_stride, m0, acc0[t]);
    _mm512_mask_storeu_ps(y + t * y_stride + 16, m1, acc1[t]);
  }
}

void RowMasks(int64_t n_valid_rows, __mmask16* m0, __mmask16* m1) {
  *m0 = n_valid_rows >= 16 ? __mmask16(0xffff) : TailMask(n_valid_rows);
  *m1 = n_valid_rows >= 32 ? __mmask16(0xffff) : n_valid_rows <= 16 ? __mmask16(0) : TailMask(n_valid_rows - 16);
}

void F32PanelMatMul(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts,
                    int64_t n_tokens, float* y, int64_t y_stride) {
  constexpr int kT = 12;
  __mmask16 m0, m1;
  RowMasks(n_valid_rows, &m0, &m1);
  const auto* p = reinterpret_cast<const float*>(panel);
  const auto* x = reinterpret_cast<const float*>(acts.data);
  const int64_t x_stride = acts.row_stride / 4;
  for (int64_t c0 = 0; c0 < n_cols; c0 += kChunkCols) {
    const int64_t c1 = c0 + kChunkCols < n_cols ? c0 + kChunkCols : n_cols;
    const bool first = c0 == 0;
    int64_t t = 0;
    for (; t + kT <= n_tokens; t += kT)
      F32PanelTile<kT>(p, c0, c1, x + t * x_stride, x_stride, first, m0, m1, y + t * y_stride, y_stride);
    for (; t + 4 <= n_tokens; t += 4)
      F32PanelTile<4>(p, c0, c1, x + t * x_stride, x_stride, first, m0, m1, y + t * y_stride, y_stride);
    for (; t < n_tokens; ++t)
      F32PanelTile<1>(p, c0, c1, x + t * x_stride, x_stride, first, m0, m1, y + t * y_stride, y_stride);
  }
}

// ---- BF16 panels: pairs of bf16 per lane, [n_cols/2][32 rows][2] ----------

int64_t PairCount(int64_t n_cols) { return (n_cols + 1) / 2; }
int64_t Bf16PanelBytes(int64_t n_cols) { return PairCount(n_cols) * kPanelRows * 4; }

// Activations rounded to bf16 (nearest even), an even count (zero padded).
int64_t Bf16ActRowBytes(int64_t n_cols) { return (PairCount(n_cols) * 4 + 63) & ~int64_t{63}; }
void Bf16PrepareActRow(const float* x, int64_t n_cols, uint8_t* dst) {
  auto* out = reinterpret_cast<uint16_t*>(dst);
  int64_t c = 0;
  for (; c + 32 <= n_cols; c += 32) {
    const __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + c + 16), _mm512_loadu_ps(x + c));
    _mm512_storeu_si512(out + c, reinterpret_cast<const __m512i&>(v));
  }
  for (; c < n_cols; c += 16) {
    const int64_t n = n_cols - c < 16 ? n_cols - c : 16;
    const __m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(TailMask(n), x + c));
    _mm256_mask_storeu_epi16(out + c, TailMask(n), reinterpret_cast<const __m256i&>(v));
  }
  if (n_cols % 2) out[n_cols] = 0;
}

void PackBf16Panel(const MatView& w, int64_t r_begin, uint8_t* panel_bytes) {
  const int64_t n_pairs = PairCount(w.n_cols);
  auto* panel = reinterpret_cast<uint32_t*>(panel_bytes);
  for (int64_t half = 0; half < 2; ++half) {
    const int64_t r0 = r_begin + half * 16;
    const uint8_t* rows[16];
    bool valid[16];
    for (int i = 0; i < 16; ++i) {
      valid[i] = r0 + i < w.n_rows;
      rows[i] = valid[i] ? w.data + (r0 + i) * w.row_bytes : nullptr;
    }
    // 16 rows × 32 bf16 columns = 16 rows × 16 pairs: a 16×16 transpose of 32-bit pairs.
    for (int64_t c = 0; c < w.n_cols; c += 32) {
      const int64_t n = w.n_cols - c < 32 ? w.n_cols - c : 32;
      const __mmask32 mask = n == 32 ? __mmask32(0xffffffffu) : static_cast<__mmask32>((1u << n) - 1u);
      __m512 v[16];
      for (int i = 0; i < 16; ++i)
        v[i] = valid[i] ? _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(mask, rows[i] + c * 2)) : _mm512_setzero_ps();
      avx512::Transpose16x16(v);
      const int64_t pairs = (n + 1) / 2;
      for (int64_t j = 0; j < pairs; ++j)
        _mm512_store_ps(reinterpret_cast<float*>(panel + (c / 2 + j) * kPanelRows + half * 16), v[j]);
    }
  }
  (void)n_pairs;
}

template <int kT>
void Bf16PanelTile(const uint32_t* panel, int64_t p_begin, int64_t p_end, const uint32_t* x, int64_t x_stride,
                   bool first_chunk, __mmask16 m0, __mmask16 m1, float* y, int64_t y_stride) {
  __m512 acc0[kT], acc1[kT];
  #pragma GCC unroll 16
  for (int t = 0; t < kT; ++t) {
    if (first_chunk) {
      acc0[t] = acc1[t] = _mm512_setzero_ps();
    } else {
      acc0[t] = _mm512_maskz_loadu_ps(m0, y + t * y_stride);
      acc1[t] = _mm512_maskz_loadu_ps(m1, y + t * y_stride + 16);
    }
  }
  const uint32_t* p = panel + p_begin * kPanelRows;
  for (int64_t c = p_begin; c < p_end; ++c, p += kPanelRows) {
    const __m512bh w0 = reinterpret_cast<__m512bh>(_mm512_load_si512(p));
    const __m512bh w1 = reinterpret_cast<__m512bh>(_mm512_load_si512(p + 16));
    #pragma GCC unroll 16
    for (int t = 0; t < kT; ++t) {
      const __m512bh xb = reinterpret_cast<__m512bh>(_mm512_set1_epi32(static_cast<int>(x[t * x_stride + c])));
      acc0[t] = _mm512_dpbf16_ps(acc0[t], w0, xb);
      acc1[t] = _mm512_dpbf16_ps(acc1[t], w1, xb);
    }
  }
  #pragma GCC unroll 16
  for (int t = 0; t < kT; ++t) {
    _mm512_mask_storeu_ps(y + t * y_stride, m0, acc0[t]);
    _mm512_mask_storeu_ps(y + t * y_stride + 16, m1, acc1[t]);
  }
}

void Bf16PanelMatMul(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts,
                     int64_t n_tokens, float* y, int64_t y_stride) {
  constexpr int kT = 12;
  constexpr int64_t kChunkPairs = kChunkCols;  // 32 rows × 256 pairs × 4 B = 32 KiB
  __mmask16 m0, m1;
  RowMasks(n_valid_rows, &m0, &m1);
  const auto* p = reinterpret_cast<const uint32_t*>(panel);
  const auto* x = reinterpret_cast<const uint32_t*>(acts.data);
  const int64_t x_stride = acts.row_stride / 4;
  const int64_t n_pairs = PairCount(n_cols);
  for (int64_t c0 = 0; c0 < n_pairs; c0 += kChunkPairs) {
    const int64_t c1 = c0 + kChunkPairs < n_pairs ? c0 + kChunkPairs : n_pairs;
    const bool first = c0 == 0;
    int64_t t = 0;
    for (; t + kT <= n_tokens; t += kT)
      Bf16PanelTile<kT>(p, c0, c1, x + t * x_stride, x_stride, first, m0, m1, y + t * y_stride, y_stride);
    for (; t + 4 <= n_tokens; t += 4)
      Bf16PanelTile<4>(p, c0, c1, x + t * x_stride, x_stride, first, m0, m1, y + t * y_stride, y_stride);
    for (; t < n_tokens; ++t)
      Bf16PanelTile<1>(p, c0, c1, x + t * x_stride, x_stride, first, m0, m1, y + t * y_stride, y_stride);
  }
}

constexpr int64_t kPanelMinTokens = 8;
constexpr ActPrep kFloatActs{nullptr, nullptr};
constexpr TypeKernels kF32Kernels{kFloatActs, 4, Rows<Kind::kF32>, kFloatActs, kPanelRows, kPanelMinTokens,
                                  F32PanelBytes, PackF32Panel<Kind::kF32>, F32PanelMatMul};
constexpr TypeKernels kF16Kernels{kFloatActs, 4, Rows<Kind::kF16>, kFloatActs, kPanelRows, kPanelMinTokens,
                                  F32PanelBytes, PackF32Panel<Kind::kF16>, F32PanelMatMul};
// BF16: the rows path multiplies exact f32 activations, the panel path bf16 ones.
constexpr TypeKernels kBf16Kernels{kFloatActs, 4, Rows<Kind::kBF16>,
                                   {Bf16ActRowBytes, Bf16PrepareActRow}, kPanelRows, kPanelMinTokens,
                                   Bf16PanelBytes, PackBf16Panel, Bf16PanelMatMul};

}  // namespace

const TypeKernels* Avx512FloatKernels(GgmlType type) {
  switch (type) {
    case GgmlType::kF32: return &kF32Kernels;
    case GgmlType::kF16: return &kF16Kernels;
    case GgmlType::kBF16: return &kBf16Kernels;
    default: return nullptr;
  }
}

}  // namespace ridge::kernels::internal
