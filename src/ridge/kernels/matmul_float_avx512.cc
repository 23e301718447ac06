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
// whatever kR and kT are (one accumulator over the 16-column steps, the tail
// on it under a mask, then summed across its lanes), so a token's result does
// not depend on the other tokens of the call. A step holds the kR rows'
// converted weights in registers and loads each token's activations once for
// all of them: 4 rows × 6 tokens take 10 loads for 24 FMAs (3 rows × 4
// tokens × 2 interleaved accumulators took 7 for 12 and ran prefill at a
// third of the FMA peak on a Zen 5: docs/benchmarks.md, 2026-12-04).
constexpr int kPrefetchRows = 2;
constexpr int64_t kStepCols = 16;
constexpr int kRowsPerTile = 4;
// Decode streams 2 rows a tile (4, on a Zen 5: no faster, and 25 % slower
// for F16 without the 2-step passes below).
constexpr int kDecodeRows = 2;
constexpr int kMaxTokens = 6;  // 4 × 6 accumulators, 4 weights and 1 activation: 29 of the 32 zmm

template <Kind kKind, int kR, int kT>
void RowsTile(const MatView& w, const ActView& acts, int64_t r, float* y, int64_t y_stride) {
  constexpr int64_t kEb = ElemBytes<kKind>();
  constexpr int kPrefetchLines = static_cast<int>((kR * 2 * kStepCols * kEb + 63) / 64);
  const uint8_t* row = w.data + r * w.row_bytes;
  const uint8_t* ahead = row + kPrefetchRows * kR * w.row_bytes;
  const float* x[kT];
  for (int t = 0; t < kT; ++t) x[t] = reinterpret_cast<const float*>(acts.data + t * acts.row_stride);
  __m512 acc[kR][kT];
  for (int i = 0; i < kR; ++i)
    for (int t = 0; t < kT; ++t) acc[i][t] = _mm512_setzero_ps();
  // One 16-column step on every accumulator (the steps are one chain each,
  // in column order, however the loop below groups them).
  auto step = [&](int64_t c) {
    __m512 wv[kR];
#pragma GCC unroll 4
    for (int i = 0; i < kR; ++i) wv[i] = LoadWeights<kKind>(row + i * w.row_bytes + c * kEb);
#pragma GCC unroll 8
    for (int t = 0; t < kT; ++t) {
      const __m512 xv = _mm512_loadu_ps(x[t] + c);
#pragma GCC unroll 4
      for (int i = 0; i < kR; ++i) acc[i][t] = _mm512_fmadd_ps(wv[i], xv, acc[i][t]);
    }
  };
  // Two steps a pass: each row's weights a whole cache line of F16/BF16.
  int64_t c = 0;
  for (; c + 2 * kStepCols <= w.n_cols; c += 2 * kStepCols) {
#pragma GCC unroll 8
    for (int p = 0; p < kPrefetchLines; ++p)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + c * kEb * kR + p * 64), _MM_HINT_T1);
    step(c);
    step(c + kStepCols);
  }
  if (c + kStepCols <= w.n_cols) {
    step(c);
    c += kStepCols;
  }
  if (c < w.n_cols) {
    const __mmask16 mask = TailMask(w.n_cols - c);
    for (int i = 0; i < kR; ++i) {
      const __m512 wv = LoadWeights<kKind>(row + i * w.row_bytes + c * kEb, mask);
      for (int t = 0; t < kT; ++t) acc[i][t] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(mask, x[t] + c), acc[i][t]);
    }
  }
  for (int i = 0; i < kR; ++i)
    for (int t = 0; t < kT; ++t) y[t * y_stride + r + i] = _mm512_reduce_add_ps(acc[i][t]);
}

template <Kind kKind, int kT>
void RowsForTokens(const MatView& w, const ActView& acts, int64_t r_begin, int64_t r_end, float* y,
                   int64_t y_stride) {
  constexpr int kR = kT == 1 ? kDecodeRows : kRowsPerTile;
  int64_t r = r_begin;
  for (; r + kR <= r_end; r += kR) RowsTile<kKind, kR, kT>(w, acts, r, y, y_stride);
  for (; r < r_end; ++r) RowsTile<kKind, 1, kT>(w, acts, r, y, y_stride);
}

template <Kind kKind>
void Rows(const MatView& w, const ActView& acts, int64_t n_tokens, int64_t r_begin, int64_t r_end, float* y,
          int64_t y_stride) {
  switch (n_tokens) {  // 1 <= n_tokens <= kMaxTokens
    case 1: return RowsForTokens<kKind, 1>(w, acts, r_begin, r_end, y, y_stride);
    case 2: return RowsForTokens<kKind, 2>(w, acts, r_begin, r_end, y, y_stride);
    case 3: return RowsForTokens<kKind, 3>(w, acts, r_begin, r_end, y, y_stride);
    case 4: return RowsForTokens<kKind, 4>(w, acts, r_begin, r_end, y, y_stride);
    case 5: return RowsForTokens<kKind, 5>(w, acts, r_begin, r_end, y, y_stride);
    default: return RowsForTokens<kKind, kMaxTokens>(w, acts, r_begin, r_end, y, y_stride);
  }
}

constexpr ActPrep kFloatActs{nullptr, nullptr};
constexpr TypeKernels kF32Kernels = RowsOnlyKernels(kFloatActs, kMaxTokens, Rows<Kind::kF32>);
constexpr TypeKernels kF16Kernels = RowsOnlyKernels(kFloatActs, kMaxTokens, Rows<Kind::kF16>);
constexpr TypeKernels kBf16Kernels = RowsOnlyKernels(kFloatActs, kMaxTokens, Rows<Kind::kBF16>);

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
