// F32, F16 and BF16 MatMul inner kernels for AVX2 + FMA + F16C.
//
// The rows path only, for every batch size: weights converted exactly to f32
// as they stream in (F16 by vcvtph2ps, BF16 by a 16-bit shift), FMA with the
// f32 activations. The f32 panel kernel that prefill used from 32 tokens on
// summed in another order (a token's logits depended on what shared its
// step); it is gone until a prefill kernel sums in this order.
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

// kR rows × kT tokens; the rows kPrefetchRows ahead are prefetched into L2
// a slice per step (see matmul_float_avx512.cc).
//
// Batch invariance: every (row, token) output is the same chain of FMAs
// whatever kR and kT are (kU accumulators over interleaved 8-column steps,
// the tails on the first, summed in a fixed order), so a token's result does
// not depend on the other tokens of the call. Decode takes 2 rows at a time
// for more independent FMA chains.
constexpr int kPrefetchRows = 2;
constexpr int kU = 2;
constexpr int64_t kStepCols = 8 * kU;

template <Kind kKind, int kR, int kT>
void RowsTile(const MatView& w, const ActView& acts, int64_t r, float* y, int64_t y_stride) {
  constexpr int64_t kEb = ElemBytes<kKind>();
  constexpr int kPrefetchLines = static_cast<int>((kR * kStepCols * kEb + 63) / 64);
  const uint8_t* row = w.data + r * w.row_bytes;
  const uint8_t* ahead = row + kPrefetchRows * kR * w.row_bytes;
  const float* x[kT];
  for (int t = 0; t < kT; ++t) x[t] = reinterpret_cast<const float*>(acts.data + t * acts.row_stride);
  __m256 acc[kR][kU][kT];
  for (int i = 0; i < kR; ++i)
    for (int u = 0; u < kU; ++u)
      for (int t = 0; t < kT; ++t) acc[i][u][t] = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + kStepCols <= w.n_cols; c += kStepCols) {
#pragma GCC unroll 8
    for (int p = 0; p < kPrefetchLines; ++p)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + c * kEb * kR + p * 64), _MM_HINT_T1);
#pragma GCC unroll 8
    for (int u = 0; u < kU; ++u) {
#pragma GCC unroll 4
      for (int i = 0; i < kR; ++i) {
        const __m256 wv = Load8<kKind>(row + i * w.row_bytes + (c + 8 * u) * kEb);
#pragma GCC unroll 4
        for (int t = 0; t < kT; ++t)
          acc[i][u][t] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x[t] + c + 8 * u), acc[i][u][t]);
      }
    }
  }
  for (; c + 8 <= w.n_cols; c += 8)
    for (int i = 0; i < kR; ++i) {
      const __m256 wv = Load8<kKind>(row + i * w.row_bytes + c * kEb);
      for (int t = 0; t < kT; ++t) acc[i][0][t] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x[t] + c), acc[i][0][t]);
    }
  if (c < w.n_cols) {
    const int64_t n = w.n_cols - c;
    for (int i = 0; i < kR; ++i) {
      const __m256 wv = LoadPartial<kKind>(row + i * w.row_bytes + c * kEb, n);
      for (int t = 0; t < kT; ++t) acc[i][0][t] = _mm256_fmadd_ps(wv, LoadPartialF32(x[t] + c, n), acc[i][0][t]);
    }
  }
  for (int i = 0; i < kR; ++i)
    for (int t = 0; t < kT; ++t) {
      __m256 sum = acc[i][0][t];
      for (int u = 1; u < kU; ++u) sum = _mm256_add_ps(sum, acc[i][u][t]);
      y[t * y_stride + r + i] = HorizontalSum(sum);
    }
}

template <Kind kKind, int kT>
void RowsForTokens(const MatView& w, const ActView& acts, int64_t r_begin, int64_t r_end, float* y,
                   int64_t y_stride) {
  constexpr int kR = kT == 1 ? 2 : 1;
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

const TypeKernels* Avx2FloatKernels(GgmlType type) {
  switch (type) {
    case GgmlType::kF32: return &kF32Kernels;
    case GgmlType::kF16: return &kF16Kernels;
    case GgmlType::kBF16: return &kBf16Kernels;
    default: return nullptr;
  }
}

}  // namespace ridge::kernels::internal
