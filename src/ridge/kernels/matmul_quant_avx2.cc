// Q8_0 and Q4_0 MatMul inner kernels for AVX2 (+ FMA, F16C).
//
// Activations are quantized once per call to int8 blocks of 32 with a float
// scale (simd_avx2.h). One block's dot product by vpmaddubsw (unsigned ×
// signed bytes → pairs of int16):
//   Q8_0: |w| as the unsigned operand and x with w's sign (vpsignb); |w| ≤ 128
//         and |x| ≤ 127 keep each int16 pair sum ≤ 32512, so nothing
//         saturates; vpmaddwd widens the pairs to int32;
//   Q4_0: the nibble q = w + 8 as the unsigned operand (pairs ≤ 2·15·127, so
//         eight rows' words can be summed in int16), and the block's −8·Σx
//         added to the exact sum.
// A tile is 8 rows × up to 4 tokens: the 8 rows' block dots are reduced so
// that lane i holds row i's exact block sum, and then, per (row, token), one
// float chain over the blocks,
//   acc = fma(float(Σ_block w·x), d_w · d_x, acc),
// the very steps of the AVX-512 kernels (matmul_quant_avx512.cc), so both
// targets give the same bits. A token's result does not depend on the other
// tokens of the call (batch invariance): prefill and batched decode take this
// kernel too, 4 tokens per pass over weights kept in L2 by the driver.
#include "ridge/kernels/simd_avx2.h"

#include <cstring>

#include "ridge/kernels/matmul_isa.h"

namespace ridge::kernels::internal {
namespace {

constexpr int kBlock = 32;

int64_t Align64(int64_t n) { return (n + 63) & ~int64_t{63}; }

// Layout of one prepared activation row of n_cols (a multiple of 32):
//   q          int8  [n_cols]
//   d          float [n_blocks]
//   block_bias int32 [n_blocks]   −8 · Σq of each block (Q4_0)
struct ActLayout {
  int64_t n_blocks, d_off, block_bias_off, bytes;
  explicit ActLayout(int64_t n_cols) {
    n_blocks = n_cols / kBlock;
    d_off = Align64(n_cols);
    block_bias_off = d_off + Align64(n_blocks * 4);
    bytes = block_bias_off + Align64(n_blocks * 4);
  }
};

int64_t ActRowBytes(int64_t n_cols) { return ActLayout(n_cols).bytes; }

void PrepareActRow(const float* x, int64_t n_cols, uint8_t* dst) {
  const ActLayout layout(n_cols);
  auto* q = reinterpret_cast<int8_t*>(dst);
  auto* d = reinterpret_cast<float*>(dst + layout.d_off);
  auto* block_bias = reinterpret_cast<int32_t*>(dst + layout.block_bias_off);
  for (int64_t b = 0; b < layout.n_blocks; ++b) {
    __m256i lane_sums;
    d[b] = avx2::QuantizeBlock32(x + b * kBlock, q + b * kBlock, &lane_sums);
    block_bias[b] = -8 * avx2::HorizontalSumI32(lane_sums);
  }
}

// The 32 nibbles of a Q4_0 block as bytes in element order (low nibbles are
// elements 0..15, high nibbles 16..31).
__m256i Q4Nibbles(const uint8_t* block) {
  const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2));
  const __m256i both = _mm256_set_m128i(_mm_srli_epi16(packed, 4), packed);
  return _mm256_and_si256(both, _mm256_set1_epi8(0x0f));
}

// Rows r .. r + 8 × kT tokens (rows past r_end read row r_end - 1 and are not
// stored); also prefetches (into L2) the tile kPrefetchTiles ahead, a slice
// per block (see matmul_quant_avx512.cc for why).
constexpr int kPrefetchTiles = 2;
constexpr int kRowsPerTile = 8;

template <bool kQ4, int kT>
void RowsTile(const MatView& w, const ActLayout& layout, const ActView& acts, int64_t r, int64_t r_end, float* y,
              int64_t y_stride) {
  constexpr int64_t kBlockBytes = kQ4 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0);
  constexpr int kPrefetchLines = (kRowsPerTile * kBlockBytes + 63) / 64;
  const int n_valid = static_cast<int>(r_end - r < kRowsPerTile ? r_end - r : kRowsPerTile);
  const uint8_t* base = w.data + r * w.row_bytes;
  const uint8_t* ahead = base + kPrefetchTiles * kRowsPerTile * w.row_bytes;
  int64_t row_offsets[kRowsPerTile];  // byte offset of each row from `base`
  for (int i = 0; i < kRowsPerTile; ++i) row_offsets[i] = (i < n_valid ? i : n_valid - 1) * w.row_bytes;
  const int8_t* xq[kT];
  const float* xd[kT];
  const int32_t* xbias[kT];
  for (int t = 0; t < kT; ++t) {
    const uint8_t* a = acts.data + t * acts.row_stride;
    xq[t] = reinterpret_cast<const int8_t*>(a);
    xd[t] = reinterpret_cast<const float*>(a + layout.d_off);
    xbias[t] = reinterpret_cast<const int32_t*>(a + layout.block_bias_off);
  }
  const __m256i ones16 = _mm256_set1_epi16(1);
  __m256 acc[kT];
  for (int t = 0; t < kT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < layout.n_blocks; ++b) {
#pragma GCC unroll 8
    for (int p = 0; p < kPrefetchLines; ++p)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + b * kRowsPerTile * kBlockBytes + p * 64), _MM_HINT_T1);
    const uint8_t* blocks = base + b * kBlockBytes;
    const __m256 dw = avx2::ScalesOf8(blocks, row_offsets);
    __m256i wu[kRowsPerTile];  // the unsigned operand: nibbles (Q4_0) or |w| (Q8_0)
#pragma GCC unroll 8
    for (int i = 0; i < kRowsPerTile; ++i) {
      if constexpr (kQ4) {
        wu[i] = Q4Nibbles(blocks + row_offsets[i]);
      } else {
        const __m256i ws = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks + row_offsets[i] + 2));
        wu[i] = _mm256_sign_epi8(ws, ws);  // |w|; -128 stays 0x80, read as 128 unsigned
      }
    }
#pragma GCC unroll 4
    for (int t = 0; t < kT; ++t) {
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[t] + b * kBlock));
      __m256i dot[kRowsPerTile];
      __m256i sums;
      if constexpr (kQ4) {
#pragma GCC unroll 8
        for (int i = 0; i < kRowsPerTile; ++i) dot[i] = _mm256_maddubs_epi16(wu[i], xv);
        sums = _mm256_add_epi32(avx2::SumWordsOf8(dot), _mm256_set1_epi32(xbias[t][b]));
      } else {
#pragma GCC unroll 8
        for (int i = 0; i < kRowsPerTile; ++i) {
          const __m256i ws = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks + row_offsets[i] + 2));
          dot[i] = _mm256_madd_epi16(_mm256_maddubs_epi16(wu[i], _mm256_sign_epi8(xv, ws)), ones16);
        }
        sums = avx2::SumLanesOf8(dot);
      }
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(dw, _mm256_set1_ps(xd[t][b])), acc[t]);
    }
  }
  if (n_valid == kRowsPerTile) {
    for (int t = 0; t < kT; ++t) _mm256_storeu_ps(y + t * y_stride + r, acc[t]);
  } else {
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int t = 0; t < kT; ++t) _mm256_maskstore_ps(y + t * y_stride + r, mask, acc[t]);
  }
}

template <bool kQ4, int kT>
void RowsForTokens(const MatView& w, const ActView& acts, int64_t r_begin, int64_t r_end, float* y,
                   int64_t y_stride) {
  const ActLayout layout(w.n_cols);
  for (int64_t r = r_begin; r < r_end; r += kRowsPerTile) RowsTile<kQ4, kT>(w, layout, acts, r, r_end, y, y_stride);
}

template <bool kQ4>
void Rows(const MatView& w, const ActView& acts, int64_t n_tokens, int64_t r_begin, int64_t r_end, float* y,
          int64_t y_stride) {
  switch (n_tokens) {
    case 1: return RowsForTokens<kQ4, 1>(w, acts, r_begin, r_end, y, y_stride);
    case 2: return RowsForTokens<kQ4, 2>(w, acts, r_begin, r_end, y, y_stride);
    case 3: return RowsForTokens<kQ4, 3>(w, acts, r_begin, r_end, y, y_stride);
    default: return RowsForTokens<kQ4, 4>(w, acts, r_begin, r_end, y, y_stride);
  }
}

// ---- panels (prefill, batched decode) -----------------------------------
// A panel holds 16 rows (a whole 64-byte line of y per token, so two threads
// never write the same line) as two halves of 8. In a half, for each block b
// and each group g of 4 elements (8 groups per block), the 8 rows' 4 bytes
// side by side: one 32-byte register, a row per int32 lane. Q8_0 keeps w
// (signed; |w| and x with w's sign are taken in the kernel), Q4_0 the
// nibbles 0..15. Then the rows' block scales:
//   half h bytes  [n_blocks][8 groups][8 rows][4]   at h · HalfBytes
//          scales float [n_blocks][8 rows]          after both halves' bytes
// The kernel keeps a row's exact block sum in its lane (no reduction across
// lanes), then takes the same float steps as the rows kernel: same bits.
constexpr int64_t kPanelRows = 16;
constexpr int64_t kHalfRows = 8;

int64_t HalfBytes(int64_t n_cols) { return (n_cols / kBlock) * 8 * kHalfRows * 4; }
int64_t PanelBytes(int64_t n_cols) { return 2 * HalfBytes(n_cols) + 2 * (n_cols / kBlock) * kHalfRows * 4; }

template <bool kQ4>
void PackPanel(const MatView& w, int64_t r_begin, uint8_t* panel) {
  const int64_t n_blocks = w.n_cols / kBlock;
  constexpr int64_t kBlockBytes = kQ4 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0);
  auto* scales = reinterpret_cast<float*>(panel + 2 * HalfBytes(w.n_cols));
  for (int64_t h = 0; h < 2; ++h) {
    const int64_t r0 = r_begin + h * kHalfRows;
    uint8_t* bytes = panel + h * HalfBytes(w.n_cols);
    float* half_scales = scales + h * n_blocks * kHalfRows;
    if (r0 >= w.n_rows) {  // a half past the matrix: zero weights and scales
      std::memset(bytes, 0, static_cast<size_t>(HalfBytes(w.n_cols)));
      std::memset(half_scales, 0, static_cast<size_t>(n_blocks * kHalfRows * 4));
      continue;
    }
    const int n_valid = static_cast<int>(w.n_rows - r0 < kHalfRows ? w.n_rows - r0 : kHalfRows);
    const uint8_t* base = w.data + r0 * w.row_bytes;
    int64_t row_offsets[kHalfRows];  // rows past the matrix repeat its last row (their outputs are not stored)
    for (int i = 0; i < kHalfRows; ++i) row_offsets[i] = (i < n_valid ? i : n_valid - 1) * w.row_bytes;
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t* blocks = base + b * kBlockBytes;
      __m256i v[kHalfRows];
      for (int i = 0; i < kHalfRows; ++i) {
        if constexpr (kQ4) {
          v[i] = Q4Nibbles(blocks + row_offsets[i]);
        } else {
          v[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks + row_offsets[i] + 2));
        }
      }
      avx2::Transpose8x8(v);
      for (int g = 0; g < 8; ++g)
        _mm256_store_si256(reinterpret_cast<__m256i*>(bytes + (b * 8 + g) * kHalfRows * 4), v[g]);
      _mm256_store_ps(half_scales + b * kHalfRows, avx2::ScalesOf8(blocks, row_offsets));
    }
  }
}

// Rows of the next panel a tile prefetches into L2, a slice of each per block.
struct TilePrefetch {
  const uint8_t* rows[kPanelRows];
  int n = 0;
  int64_t step = 0;  // bytes of a row per block
};

// The rows of `next` that tile k of n_tiles prefetches (every n_tiles-th):
// the next panel's reads are spread over this one's arithmetic.
TilePrefetch PrefetchSlice(const PanelPrefetch& next, int64_t n_blocks, int64_t k, int64_t n_tiles) {
  TilePrefetch pf;
  pf.step = next.n_rows > 0 ? (next.row_bytes + n_blocks - 1) / n_blocks : 0;
  for (int64_t j = k; j < next.n_rows && pf.n < kPanelRows; j += n_tiles) pf.rows[pf.n++] = next.first + j * next.row_bytes;
  return pf;
}

// 8 panel rows × kT tokens over all blocks.
template <bool kQ4, int kT>
void PanelTile(const uint8_t* bytes, const float* scales, int64_t n_blocks, const ActLayout& layout,
               const uint8_t* acts, int64_t act_stride, float* y, int64_t y_stride, int n_valid,
               const TilePrefetch& pf) {
  const int8_t* xq[kT];
  const float* xd[kT];
  const int32_t* xbias[kT];
  for (int t = 0; t < kT; ++t) {
    const uint8_t* a = acts + t * act_stride;
    xq[t] = reinterpret_cast<const int8_t*>(a);
    xd[t] = reinterpret_cast<const float*>(a + layout.d_off);
    xbias[t] = reinterpret_cast<const int32_t*>(a + layout.block_bias_off);
  }
  const __m256i ones16 = _mm256_set1_epi16(1);
  __m256 acc[kT];
  for (int t = 0; t < kT; ++t) acc[t] = _mm256_setzero_ps();
  const uint8_t* p = bytes;
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int i = 0; i < pf.n; ++i) _mm_prefetch(reinterpret_cast<const char*>(pf.rows[i] + b * pf.step), _MM_HINT_T1);
    __m256i dot[kT];
    for (int t = 0; t < kT; ++t) dot[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int g = 0; g < 8; ++g, p += kHalfRows * 4) {
      const __m256i wv = _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
      if constexpr (kQ4) {  // int16 pair sums of 8 groups: ≤ 8·2·15·127 < 2¹⁵
#pragma GCC unroll 8
        for (int t = 0; t < kT; ++t) {
          int32_t x4;
          std::memcpy(&x4, xq[t] + b * kBlock + g * 4, 4);
          dot[t] = _mm256_add_epi16(dot[t], _mm256_maddubs_epi16(wv, _mm256_set1_epi32(x4)));
        }
      } else {
        const __m256i wa = _mm256_sign_epi8(wv, wv);
#pragma GCC unroll 8
        for (int t = 0; t < kT; ++t) {
          int32_t x4;
          std::memcpy(&x4, xq[t] + b * kBlock + g * 4, 4);
          const __m256i xs = _mm256_sign_epi8(_mm256_set1_epi32(x4), wv);
          dot[t] = _mm256_add_epi32(dot[t], _mm256_madd_epi16(_mm256_maddubs_epi16(wa, xs), ones16));
        }
      }
    }
    const __m256 dw = _mm256_load_ps(scales + b * kHalfRows);
#pragma GCC unroll 8
    for (int t = 0; t < kT; ++t) {
      __m256i sums = dot[t];
      if constexpr (kQ4) sums = _mm256_add_epi32(_mm256_madd_epi16(sums, ones16), _mm256_set1_epi32(xbias[t][b]));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(dw, _mm256_set1_ps(xd[t][b])), acc[t]);
    }
  }
  if (n_valid >= kHalfRows) {
    for (int t = 0; t < kT; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
  } else {
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int t = 0; t < kT; ++t) _mm256_maskstore_ps(y + t * y_stride, mask, acc[t]);
  }
}

template <bool kQ4>
void PanelMatMul(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts, int64_t n_tokens,
                 float* y, int64_t y_stride, const PanelPrefetch& next) {
  const ActLayout layout(n_cols);
  const int64_t n_blocks = layout.n_blocks;
  const auto* scales = reinterpret_cast<const float*>(panel + 2 * HalfBytes(n_cols));
  constexpr int kT = 4;
  const int64_t n_tiles = 2 * ((n_tokens + kT - 1) / kT);
  int64_t k = 0;
  for (int64_t h = 0; h < 2; ++h) {
    const int n_valid = static_cast<int>(n_valid_rows - h * kHalfRows);
    if (n_valid <= 0) break;
    const uint8_t* bytes = panel + h * HalfBytes(n_cols);
    const float* hs = scales + h * n_blocks * kHalfRows;
    float* yh = y + h * kHalfRows;
    int64_t t = 0;
    for (; t + kT <= n_tokens; t += kT, ++k)
      PanelTile<kQ4, kT>(bytes, hs, n_blocks, layout, acts.data + t * acts.row_stride, acts.row_stride,
                         yh + t * y_stride, y_stride, n_valid, PrefetchSlice(next, n_blocks, k, n_tiles));
    const uint8_t* a = acts.data + t * acts.row_stride;
    float* yt = yh + t * y_stride;
    const TilePrefetch pf = PrefetchSlice(next, n_blocks, k, n_tiles);
    switch (n_tokens - t) {
      case 0: break;
      case 1: PanelTile<kQ4, 1>(bytes, hs, n_blocks, layout, a, acts.row_stride, yt, y_stride, n_valid, pf); break;
      case 2: PanelTile<kQ4, 2>(bytes, hs, n_blocks, layout, a, acts.row_stride, yt, y_stride, n_valid, pf); break;
      default: PanelTile<kQ4, 3>(bytes, hs, n_blocks, layout, a, acts.row_stride, yt, y_stride, n_valid, pf); break;
    }
    if (n_tokens % kT != 0) ++k;
  }
}

constexpr int64_t kPanelMinTokens = 8;
constexpr ActPrep kQuantActs{ActRowBytes, PrepareActRow};
constexpr TypeKernels kQ8_0Kernels{kQuantActs, 4, Rows<false>, kQuantActs, kPanelRows, kPanelMinTokens,
                                   PanelBytes, PackPanel<false>, PanelMatMul<false>};
constexpr TypeKernels kQ4_0Kernels{kQuantActs, 4, Rows<true>, kQuantActs, kPanelRows, kPanelMinTokens,
                                   PanelBytes, PackPanel<true>, PanelMatMul<true>};

}  // namespace

const TypeKernels* Avx2QuantKernels(GgmlType type) {
  switch (type) {
    case GgmlType::kQ8_0: return &kQ8_0Kernels;
    case GgmlType::kQ4_0: return &kQ4_0Kernels;
    default: return nullptr;
  }
}

}  // namespace ridge::kernels::internal
