// F32, F16 and BF16 MatMul inner kernels for AVX-512.
//
// The rows path only, for every batch size, kR rows × kT tokens per pass, one
// masked tail:
//   F32, F16: weights converted exactly to f32 as they stream in (F16 by
//     vcvtph2ps) and multiplied by the f32 activations with FMA;
//   BF16: the activations rounded to BF16 once per call (nearest even, as
//     llama.cpp's CPU path rounds them for BF16 weights) and multiplied with
//     the weights as they are by the BF16 dot (vdpbf16ps): each product is
//     exact, and one instruction takes 32 columns where an FMA takes 16. A
//     rounding moves each activation by ≤ 2⁻⁸ of itself; the vdpbf16ps
//     reads a BF16 denormal (|w| < 1.2e-38) as zero.
// The f32 / bf16 panel kernels that prefill used from 8 tokens on summed in
// another order, so a token's logits depended on what shared its step; they
// are gone: the rows tile below is prefill's kernel too.
#include <algorithm>

#include "ridge/kernels/simd_avx512.h"

#include "ridge/kernels/matmul_isa.h"

namespace ridge::kernels::internal {
namespace {

enum class Kind { kF32, kF16, kBF16 };

// Columns a step multiplies: one zmm of f32 products, or of BF16 pairs.
template <Kind kKind>
constexpr int64_t StepCols() {
  return kKind == Kind::kBF16 ? 32 : 16;
}

template <Kind kKind>
constexpr int64_t ElemBytes() {
  return kKind == Kind::kF32 ? 4 : 2;
}

// Bytes of one activation element as the kernels read it: f32, or BF16 for BF16 weights.
template <Kind kKind>
constexpr int64_t ActBytes() {
  return kKind == Kind::kBF16 ? 2 : 4;
}

// The first n of 16 or 32 lanes (n may be ≤ 0 or past the end).
__mmask16 Mask16(int64_t n) {
  return n >= 16 ? __mmask16{0xffff} : n <= 0 ? __mmask16{0} : static_cast<__mmask16>((1u << n) - 1u);
}
__mmask32 Mask32(int64_t n) {
  return n >= 32 ? ~__mmask32{0} : n <= 0 ? __mmask32{0} : static_cast<__mmask32>((1u << n) - 1u);
}

// One step's weights from p (n < StepCols: the first n, the rest zero): f32,
// or BF16 pairs as they are.
template <Kind kKind>
auto LoadStep(const uint8_t* p, int64_t n = StepCols<kKind>()) {
  if constexpr (kKind == Kind::kF32) {
    return n == StepCols<kKind>() ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(Mask16(n), p);
  } else if constexpr (kKind == Kind::kF16) {
    return _mm512_cvtph_ps(n == StepCols<kKind>() ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))
                                                  : _mm256_maskz_loadu_epi16(Mask16(n), p));
  } else {
    return n == StepCols<kKind>() ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi16(Mask32(n), p);
  }
}

// One step's activations (the same lanes as LoadStep's weights).
template <Kind kKind>
auto LoadActStep(const uint8_t* p, int64_t n = StepCols<kKind>()) {
  if constexpr (kKind == Kind::kBF16) {
    return n == StepCols<kKind>() ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi16(Mask32(n), p);
  } else {
    return n == StepCols<kKind>() ? _mm512_loadu_ps(p) : _mm512_maskz_loadu_ps(Mask16(n), p);
  }
}

// acc + w · x lane by lane: one FMA, or two exact products a lane (BF16 pairs).
inline __m512 MulAdd(__m512 w, __m512 x, __m512 acc) { return _mm512_fmadd_ps(w, x, acc); }
inline __m512 MulAdd(__m512i w, __m512i x, __m512 acc) {
  return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(w), reinterpret_cast<__m512bh>(x));
}

// BF16 weights' activation row: n_cols BF16 (nearest even, vcvtne2ps2bf16),
// zero to a whole number of 64-byte lines.
int64_t Bf16ActRowBytes(int64_t n_cols) { return (2 * n_cols + 63) / 64 * 64; }

void PrepareBf16Acts(const float* x, int64_t n_cols, uint8_t* dst) {
  const int64_t padded_cols = Bf16ActRowBytes(n_cols) / 2;
  for (int64_t c = 0; c < padded_cols; c += 32) {
    const __m512 lo = _mm512_maskz_loadu_ps(Mask16(n_cols - c), x + c);
    const __m512 hi = _mm512_maskz_loadu_ps(Mask16(n_cols - c - 16), x + c + 16);
    _mm512_storeu_si512(dst + 2 * c, reinterpret_cast<__m512i>(_mm512_cvtne2ps_pbh(hi, lo)));
  }
}

// kR rows × kT tokens. A thread's rows are one sequential stream; with
// kPrefetch the row kPrefetchRows ahead is prefetched into L2 a slice per step
// (one stream the hardware follows, plus the explicit prefetch: 16-20 → 24-25
// GB/s from DRAM on one Zen 4 core for F16). Without: the rows are in L2
// already (a block an earlier tile of tokens read), where the prefetches
// only take load slots (BF16 prefill at 48 against 64 % of the BF16-dot peak
// with them, Zen 5).
//
// Batch invariance: every (row, token) output is the same chain of
// multiply-adds whatever kR and kT are (one accumulator over the steps in
// column order, the tail on it under a mask, then summed across its lanes),
// so a token's result does not depend on the other tokens of the call. A step
// holds the kR rows' weights in registers and loads each token's activations
// once for all of them: 4 rows × 6 tokens take 10 loads for 24 FMAs or BF16
// dots (3 rows × 4 tokens × 2 interleaved accumulators took 7 for 12 and ran
// prefill at a third of the FMA peak on a Zen 5: docs/benchmarks.md,
// 2026-12-04).
constexpr int kPrefetchRows = 2;
constexpr int kRowsPerTile = 4;
// Decode streams 2 rows a tile (4, on a Zen 5: no faster, and 25 % slower
// for F16 without the 2-step passes below).
constexpr int kDecodeRows = 2;
constexpr int kTileTokens = 6;  // 4 × 6 accumulators, 4 weights and 1 activation: 29 of the 32 zmm
// Tokens a call takes (the driver's pass over a task's rows): a block of
// rows read from memory serves up to 16 tiles of tokens from L2.
constexpr int kMaxTokens = 16 * kTileTokens;

template <Kind kKind, bool kPrefetch, int kR, int kT>
void RowsTile(const MatView& w, const ActView& acts, int64_t r, float* y, int64_t y_stride) {
  constexpr int64_t kEb = ElemBytes<kKind>(), kAb = ActBytes<kKind>(), kStep = StepCols<kKind>();
  constexpr int kPrefetchLines = static_cast<int>((kR * 2 * kStep * kEb + 63) / 64);
  const uint8_t* row = w.data + r * w.row_bytes;
  const uint8_t* ahead = row + kPrefetchRows * kR * w.row_bytes;
  const uint8_t* x[kT];
  for (int t = 0; t < kT; ++t) x[t] = acts.data + t * acts.row_stride;
  __m512 acc[kR][kT];
  for (int i = 0; i < kR; ++i)
    for (int t = 0; t < kT; ++t) acc[i][t] = _mm512_setzero_ps();
  // One step on every accumulator (the steps are one chain each, in column
  // order, however the loop below groups them); n < kStep: the masked tail.
  auto step = [&](int64_t c, int64_t n) {
    decltype(LoadStep<kKind>(row)) wv[kR];
#pragma GCC unroll 4
    for (int i = 0; i < kR; ++i) wv[i] = LoadStep<kKind>(row + i * w.row_bytes + c * kEb, n);
#pragma GCC unroll 8
    for (int t = 0; t < kT; ++t) {
      const auto xv = LoadActStep<kKind>(x[t] + c * kAb, n);
#pragma GCC unroll 4
      for (int i = 0; i < kR; ++i) acc[i][t] = MulAdd(wv[i], xv, acc[i][t]);
    }
  };
  // Two steps a pass: each row's weights at least a whole cache line.
  int64_t c = 0;
  for (; c + 2 * kStep <= w.n_cols; c += 2 * kStep) {
#pragma GCC unroll 8
    for (int p = 0; p < (kPrefetch ? kPrefetchLines : 0); ++p)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + c * kEb * kR + p * 64), _MM_HINT_T1);
    step(c, kStep);
    step(c + kStep, kStep);
  }
  if (c + kStep <= w.n_cols) {
    step(c, kStep);
    c += kStep;
  }
  if (c < w.n_cols) step(c, w.n_cols - c);
  for (int i = 0; i < kR; ++i)
    for (int t = 0; t < kT; ++t) y[t * y_stride + r + i] = _mm512_reduce_add_ps(acc[i][t]);
}

template <Kind kKind, bool kPrefetch, int kT>
void RowsForTokens(const MatView& w, const ActView& acts, int64_t r_begin, int64_t r_end, float* y,
                   int64_t y_stride) {
  constexpr int kR = kT == 1 ? kDecodeRows : kRowsPerTile;
  int64_t r = r_begin;
  for (; r + kR <= r_end; r += kR) RowsTile<kKind, kPrefetch, kR, kT>(w, acts, r, y, y_stride);
  for (; r < r_end; ++r) RowsTile<kKind, kPrefetch, 1, kT>(w, acts, r, y, y_stride);
}

// Up to kTileTokens tokens.
template <Kind kKind, bool kPrefetch>
void TileOfTokens(const MatView& w, const ActView& acts, int64_t n_tokens, int64_t r_begin, int64_t r_end, float* y,
                  int64_t y_stride) {
  switch (n_tokens) {
    case 1: return RowsForTokens<kKind, kPrefetch, 1>(w, acts, r_begin, r_end, y, y_stride);
    case 2: return RowsForTokens<kKind, kPrefetch, 2>(w, acts, r_begin, r_end, y, y_stride);
    case 3: return RowsForTokens<kKind, kPrefetch, 3>(w, acts, r_begin, r_end, y, y_stride);
    case 4: return RowsForTokens<kKind, kPrefetch, 4>(w, acts, r_begin, r_end, y, y_stride);
    case 5: return RowsForTokens<kKind, kPrefetch, 5>(w, acts, r_begin, r_end, y, y_stride);
    default: return RowsForTokens<kKind, kPrefetch, kTileTokens>(w, acts, r_begin, r_end, y, y_stride);
  }
}

// Per block of rows, the first tile of tokens reads the rows from memory
// (prefetching), every other tile from L2.
template <Kind kKind>
void Rows(const MatView& w, const ActView& acts, int64_t n_tokens, int64_t r_begin, int64_t r_end, float* y,
          int64_t y_stride) {
  if (n_tokens <= kTileTokens) return TileOfTokens<kKind, true>(w, acts, n_tokens, r_begin, r_end, y, y_stride);
  const int64_t block_rows = std::max<int64_t>(kRowsPerTile, kL2BlockBytes / w.row_bytes / kRowsPerTile * kRowsPerTile);
  for (int64_t rb = r_begin; rb < r_end; rb += block_rows) {
    const int64_t re = std::min(r_end, rb + block_rows);
    TileOfTokens<kKind, true>(w, acts, kTileTokens, rb, re, y, y_stride);
    for (int64_t t = kTileTokens; t < n_tokens; t += kTileTokens) {
      const ActView tile{acts.data + t * acts.row_stride, acts.row_stride};
      TileOfTokens<kKind, false>(w, tile, std::min<int64_t>(kTileTokens, n_tokens - t), rb, re, y + t * y_stride,
                                 y_stride);
    }
  }
}

constexpr ActPrep kFloatActs{nullptr, nullptr};
constexpr TypeKernels kF32Kernels = RowsOnlyKernels(kFloatActs, kMaxTokens, Rows<Kind::kF32>);
constexpr TypeKernels kF16Kernels = RowsOnlyKernels(kFloatActs, kMaxTokens, Rows<Kind::kF16>);
constexpr TypeKernels kBf16Kernels =
    RowsOnlyKernels(ActPrep{Bf16ActRowBytes, PrepareBf16Acts}, kMaxTokens, Rows<Kind::kBF16>);

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
