// F32, F16 and BF16 MatMul inner kernels for AVX-512.
//
// The rows path only, for every batch size: weights converted exactly to f32
// as they stream in (F16 by vcvtph2ps, BF16 by a 16-bit shift) and multiplied
// by the f32 activations with FMA; kR rows × kT tokens per pass, one masked
// tail. The f32 / bf16 panel kernels that prefill used from 8 tokens on summed
// in another order, so a token's logits depended on what shared its step;
// they are gone until a prefill kernel sums in this order (docs/benchmarks.md
// has the prefill cost).
#include "ridge/kernels/simd_avx512.h"

#include "ridge/kernels/matmul_isa.h"

namespace ridge::kernels::internal {
namespace {

enum class Kind { kF32, kF16, kBF16 };

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

// kR rows × kT tokens. A thread's rows are one sequential stream; the row
// kPrefetchRows ahead is prefetched into L2 a slice per step (one stream the
// hardware follows, plus the explicit prefetch: 16-20 → 24-25 GB/s from DRAM
// on one Zen 4 core for F16).
//
// Batch invariance: every (row, token) output is the same chain of FMAs
// whatever kR and kT are (kU accumulators over interleaved 16-column steps,
// the tail on the first, summed in a fixed order), so a token's result does
// not depend on the other tokens of the call. Decode takes 2 rows at a time
// for more independent FMA chains, several tokens 3 rows (weight loads shared
// by the tokens, activation loads by the rows).
constexpr int kPrefetchRows = 2;
constexpr int kU = 2;
constexpr int64_t kStepCols = 16 * kU;

template <Kind kKind, int kR, int kT>
void RowsTile(const MatView& w, const ActView& acts, int64_t r, float* y, int64_t y_stride) {
  constexpr int64_t kEb = ElemBytes<kKind>();
  constexpr int kPrefetchLines = static_cast<int>(kR * kStepCols * kEb / 64);
  const uint8_t* row = w.data + r * w.row_bytes;
  const uint8_t* ahead = row + kPrefetchRows * kR * w.row_bytes;
  const float* x[kT];
  for (int t = 0; t < kT; ++t) x[t] = reinterpret_cast<const float*>(acts.data + t * acts.row_stride);
  __m512 acc[kR][kU][kT];
  for (int i = 0; i < kR; ++i)
    for (int u = 0; u < kU; ++u)
      for (int t = 0; t < kT; ++t) acc[i][u][t] = _mm512_setzero_ps();
  int64_t c = 0;
  for (; c + kStepCols <= w.n_cols; c += kStepCols) {
#pragma GCC unroll 8
    for (int p = 0; p < kPrefetchLines; ++p)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + c * kEb * kR + p * 64), _MM_HINT_T1);
#pragma GCC unroll 8
    for (int u = 0; u < kU; ++u) {
      __m512 xv[kT];
      for (int t = 0; t < kT; ++t) xv[t] = _mm512_loadu_ps(x[t] + c + 16 * u);
#pragma GCC unroll 4
      for (int i = 0; i < kR; ++i) {
        const __m512 wv = LoadWeights<kKind>(row + i * w.row_bytes + (c + 16 * u) * kEb);
#pragma GCC unroll 8
        for (int t = 0; t < kT; ++t) acc[i][u][t] = _mm512_fmadd_ps(wv, xv[t], acc[i][u][t]);
      }
    }
  }
  for (; c < w.n_cols; c += 16) {
    const __mmask16 mask = w.n_cols - c >= 16 ? __mmask16(0xffff) : TailMask(w.n_cols - c);
    for (int i = 0; i < kR; ++i) {
      const __m512 wv = LoadWeights<kKind>(row + i * w.row_bytes + c * kEb, mask);
      for (int t = 0; t < kT; ++t)
        acc[i][0][t] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(mask, x[t] + c), acc[i][0][t]);
    }
  }
  for (int i = 0; i < kR; ++i)
    for (int t = 0; t < kT; ++t) {
      __m512 sum = acc[i][0][t];
      for (int u = 1; u < kU; ++u) sum = _mm512_add_ps(sum, acc[i][u][t]);
      y[t * y_stride + r + i] = _mm512_reduce_add_ps(sum);
    }
}

template <Kind kKind, int kT>
void RowsForTokens(const MatView& w, const ActView& acts, int64_t r_begin, int64_t r_end, float* y,
                   int64_t y_stride) {
  constexpr int kR = kT == 1 ? 2 : 3;  // 3 rows × 4 tokens × 2 accumulators: 24 of the 32 zmm
  int64_t r = r_begin;
  for (; r + kR <= r_end; r += kR) RowsTile<kKind, kR, kT>(w, acts, r, y, y_stride);
  for (; r < r_end; ++r) RowsTile<kKind, 1, kT>(w, acts, r, y, y_stride);
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

constexpr ActPrep kFloatActs{nullptr, nullptr};
constexpr TypeKernels kF32Kernels{kFloatActs, 4, Rows<Kind::kF32>, kFloatActs, 0, 0, nullptr, nullptr, nullptr};
constexpr TypeKernels kF16Kernels{kFloatActs, 4, Rows<Kind::kF16>, kFloatActs, 0, 0, nullptr, nullptr, nullptr};
constexpr TypeKernels kBf16Kernels{kFloatActs, 4, Rows<Kind::kBF16>, kFloatActs, 0, 0, nullptr, nullptr, nullptr};

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
