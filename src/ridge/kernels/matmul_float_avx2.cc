// F32, F16 and BF16 MatMul inner kernels for AVX2 + FMA + F16C.
//
// The rows path only, for every batch size: weights converted exactly to f32
// (F16 by vcvtph2ps, BF16 by a 16-bit shift), FMA with the f32 activations.
// Up to kTileTokens tokens (decode) convert the weights as they stream in.
// With more (prefill) the first tile of tokens also stores a block of rows
// converted into a per-thread f32 scratch, and every other tile multiplies
// against that: on a Zen 1 a ymm vcvtph2ps takes the FMA pipe for two FMAs'
// time, and converting once per tile of 4 tokens held F16 prefill to ~55 % of
// the FP32 FMA peak (docs/benchmarks.md, 2026-12-05, fifth). The f32 panel
// kernel that prefill used from 32 tokens on summed in another order (a
// token's logits depended on what shared its step); it is gone until a
// prefill kernel sums in this order.
#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "ridge/kernels/matmul_isa.h"
#include "ridge/kernels/scratch.h"

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
// a slice per step (see matmul_float_avx512.cc), unless the rows are already
// in cache (kPrefetch false: the f32 scratch, or a block an earlier tile of
// tokens read; past the scratch's end a prefetch ran into unmapped memory and
// took 80 % of the time). A step converts the kR rows' weights once and
// loads each token's activations once for all kR rows (kept in a register:
// GCC otherwise folds the load into every row's FMA). With kStore it also
// stores the converted weights there, row i of the tile at
// f32 + (r + i)·f32_stride (a row's tail padded with zeros to 8 floats).
//
// Batch invariance: every (row, token) output is the same chain of FMAs
// whatever kR and kT are (kU accumulators over interleaved 8-column steps,
// the tails on the first, summed in a fixed order), and the same whether its
// weights were converted on the way or read back converted (both exact), so a
// token's result does not depend on the other tokens of the call.
constexpr int kPrefetchRows = 2;
constexpr int kU = 2;
constexpr int64_t kStepCols = 8 * kU;
constexpr int kTileRows = 2;
constexpr int kTileTokens = 3;  // 2 rows × 3 tokens × kU: 12 accumulators, 2 weights, 1 activation of 16 ymm
// Tokens a call takes (the driver's pass over a task's rows): a block's
// conversion serves up to 32 tiles of tokens.
constexpr int kMaxTokens = 32 * kTileTokens;

template <Kind kKind, bool kPrefetch, bool kStore, int kR, int kT>
void RowsTile(const MatView& w, const ActView& acts, int64_t r, float* y, int64_t y_stride, float* f32,
              int64_t f32_stride) {
  constexpr int64_t kEb = ElemBytes<kKind>();
  constexpr int kPrefetchLines = static_cast<int>((kR * kStepCols * kEb + 63) / 64);
  const uint8_t* row = w.data + r * w.row_bytes;
  const uint8_t* ahead = row + kPrefetchRows * kR * w.row_bytes;
  float* out = kStore ? f32 + r * f32_stride : nullptr;
  const float* x[kT];
  for (int t = 0; t < kT; ++t) x[t] = reinterpret_cast<const float*>(acts.data + t * acts.row_stride);
  __m256 acc[kR][kU][kT];
  for (int i = 0; i < kR; ++i)
    for (int u = 0; u < kU; ++u)
      for (int t = 0; t < kT; ++t) acc[i][u][t] = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + kStepCols <= w.n_cols; c += kStepCols) {
    if constexpr (kPrefetch) {
#pragma GCC unroll 8
      for (int p = 0; p < kPrefetchLines; ++p)
        _mm_prefetch(reinterpret_cast<const char*>(ahead + c * kEb * kR + p * 64), _MM_HINT_T1);
    }
#pragma GCC unroll 8
    for (int u = 0; u < kU; ++u) {
      __m256 wv[kR];
#pragma GCC unroll 4
      for (int i = 0; i < kR; ++i) {
        wv[i] = Load8<kKind>(row + i * w.row_bytes + (c + 8 * u) * kEb);
        if constexpr (kStore) _mm256_storeu_ps(out + i * f32_stride + c + 8 * u, wv[i]);
      }
#pragma GCC unroll 4
      for (int t = 0; t < kT; ++t) {
        __m256 xv = _mm256_loadu_ps(x[t] + c + 8 * u);
        if constexpr (kR > 1 && kT > 1) asm("" : "+x"(xv));
#pragma GCC unroll 4
        for (int i = 0; i < kR; ++i) acc[i][u][t] = _mm256_fmadd_ps(wv[i], xv, acc[i][u][t]);
      }
    }
  }
  for (; c + 8 <= w.n_cols; c += 8)
    for (int i = 0; i < kR; ++i) {
      const __m256 wv = Load8<kKind>(row + i * w.row_bytes + c * kEb);
      if constexpr (kStore) _mm256_storeu_ps(out + i * f32_stride + c, wv);
      for (int t = 0; t < kT; ++t) acc[i][0][t] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x[t] + c), acc[i][0][t]);
    }
  if (c < w.n_cols) {
    const int64_t n = w.n_cols - c;
    for (int i = 0; i < kR; ++i) {
      const __m256 wv = LoadPartial<kKind>(row + i * w.row_bytes + c * kEb, n);
      if constexpr (kStore) _mm256_storeu_ps(out + i * f32_stride + c, wv);
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

// Rows [r_begin, r_end) × kT tokens, kTileRows rows a tile.
template <Kind kKind, bool kPrefetch, bool kStore, int kT>
void RowsForTokens(const MatView& w, const ActView& acts, int64_t r_begin, int64_t r_end, float* y,
                   int64_t y_stride, float* f32, int64_t f32_stride) {
  int64_t r = r_begin;
  for (; r + kTileRows <= r_end; r += kTileRows)
    RowsTile<kKind, kPrefetch, kStore, kTileRows, kT>(w, acts, r, y, y_stride, f32, f32_stride);
  for (; r < r_end; ++r) RowsTile<kKind, kPrefetch, kStore, 1, kT>(w, acts, r, y, y_stride, f32, f32_stride);
}

// Up to kTileTokens tokens.
template <Kind kKind, bool kPrefetch, bool kStore = false>
void TileOfTokens(const MatView& w, const ActView& acts, int64_t n_tokens, int64_t r_begin, int64_t r_end, float* y,
                  int64_t y_stride, float* f32 = nullptr, int64_t f32_stride = 0) {
  switch (n_tokens) {
    case 1: return RowsForTokens<kKind, kPrefetch, kStore, 1>(w, acts, r_begin, r_end, y, y_stride, f32, f32_stride);
    case 2: return RowsForTokens<kKind, kPrefetch, kStore, 2>(w, acts, r_begin, r_end, y, y_stride, f32, f32_stride);
    default:
      return RowsForTokens<kKind, kPrefetch, kStore, kTileTokens>(w, acts, r_begin, r_end, y, y_stride, f32,
                                                                  f32_stride);
  }
}

template <Kind kKind>
void Rows(const MatView& w, const ActView& acts, int64_t n_tokens, int64_t r_begin, int64_t r_end, float* y,
          int64_t y_stride) {
  if (n_tokens <= kTileTokens) return TileOfTokens<kKind, true>(w, acts, n_tokens, r_begin, r_end, y, y_stride);
  // Prefill, per block of rows: the first tile of tokens reads the rows from
  // memory, converting F16/BF16 on the way and storing them as f32; every
  // other tile reads the f32 rows from L2. (A separate conversion pass waited
  // on memory while nothing else ran: 8 tokens took it at 51 % of the FMA
  // peak against the 64 % of converting per tile of tokens.)
  constexpr bool kConvert = kKind != Kind::kF32;
  const int64_t f32_stride = (w.n_cols + 7) / 8 * 8;
  const int64_t block_rows = std::max<int64_t>(kTileRows, kL2BlockBytes / (f32_stride * 4));
  thread_local ScratchBuffer converted;  // the running thread's
  float* f32 = kConvert ? reinterpret_cast<float*>(converted.Get(block_rows * f32_stride * 4)) : nullptr;
  for (int64_t rb = r_begin; rb < r_end; rb += block_rows) {
    const int64_t n_rows = std::min(block_rows, r_end - rb);
    const MatView block{w.data + rb * w.row_bytes, n_rows, w.n_cols, w.row_bytes};
    TileOfTokens<kKind, true, kConvert>(block, acts, kTileTokens, 0, n_rows, y + rb, y_stride, f32, f32_stride);
    const MatView again = kConvert ? MatView{reinterpret_cast<const uint8_t*>(f32), n_rows, w.n_cols, f32_stride * 4}
                                   : block;
    for (int64_t t = kTileTokens; t < n_tokens; t += kTileTokens) {
      const ActView tile{acts.data + t * acts.row_stride, acts.row_stride};
      TileOfTokens<Kind::kF32, false>(again, tile, std::min<int64_t>(kTileTokens, n_tokens - t), 0, n_rows,
                                      y + t * y_stride + rb, y_stride);
    }
  }
}

constexpr ActPrep kFloatActs{nullptr, nullptr};
constexpr TypeKernels kF32Kernels = RowsOnlyKernels(kFloatActs, kMaxTokens, Rows<Kind::kF32>);
constexpr TypeKernels kF16Kernels = RowsOnlyKernels(kFloatActs, kMaxTokens, Rows<Kind::kF16>);
constexpr TypeKernels kBf16Kernels = RowsOnlyKernels(kFloatActs, kMaxTokens, Rows<Kind::kBF16>);

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
