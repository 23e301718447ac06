// Q8_0 and Q4_0 MatMul inner kernels for AVX2 (+ FMA, F16C), and the panels
// of Q4_1, Q5_0, Q5_1, IQ4_NL and MXFP4 (their rows path: matmul_q32_avx2.cc).
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
// Rows path (file layout, decode and small batches): a tile is 8 rows × up
// to 4 tokens; the 8 rows' block dots are reduced so that lane i holds row
// i's exact block sum, and then, per (row, token), one float chain over the
// blocks,
//   acc = fma(float(Σ_block w·x), d_w · d_x, acc),
// the very steps of the AVX-512 kernels (matmul_quant_avx512.cc), so both
// targets give the same bits. The panel path (prefill, and every call on
// weights repacked at load) reads the 32-row layout of weight_panels.h, the
// same bytes as on AVX-512, and takes the same float steps. A token's result
// does not depend on the other tokens of the call (batch invariance).
#include "ridge/kernels/simd_avx2.h"

#include <cstring>

#include "ridge/kernels/matmul_isa.h"
#include "ridge/kernels/scratch.h"
#include "ridge/kernels/weight_panels.h"

namespace ridge::kernels::internal {
namespace {

constexpr int kBlock = 32;

int64_t Align64(int64_t n) { return (n + 63) & ~int64_t{63}; }

// Layout of one prepared activation row of n_cols (a multiple of 32):
//   q          int8  [n_cols]
//   d          float [n_blocks]
//   block_bias int32 [n_blocks]   −8 · Σq of each block (Q4_0, Q5_0)
//   dsum       float [n_blocks]   d · Σq of each block (Q4_1, Q5_1), as matmul_q32_avx2.cc's
struct ActLayout {
  int64_t n_blocks, d_off, block_bias_off, dsum_off, bytes;
  explicit ActLayout(int64_t n_cols) {
    n_blocks = n_cols / kBlock;
    d_off = Align64(n_cols);
    block_bias_off = d_off + Align64(n_blocks * 4);
    dsum_off = block_bias_off + Align64(n_blocks * 4);
    bytes = dsum_off + Align64(n_blocks * 4);
  }
};

int64_t ActRowBytes(int64_t n_cols) { return ActLayout(n_cols).bytes; }

void PrepareActRow(const float* x, int64_t n_cols, uint8_t* dst) {
  const ActLayout layout(n_cols);
  auto* q = reinterpret_cast<int8_t*>(dst);
  auto* d = reinterpret_cast<float*>(dst + layout.d_off);
  auto* block_bias = reinterpret_cast<int32_t*>(dst + layout.block_bias_off);
  auto* dsum = reinterpret_cast<float*>(dst + layout.dsum_off);
  for (int64_t b = 0; b < layout.n_blocks; ++b) {
    __m256i lane_sums;
    d[b] = avx2::QuantizeBlock32(x + b * kBlock, q + b * kBlock, &lane_sums);
    const int32_t sum = avx2::HorizontalSumI32(lane_sums);
    block_bias[b] = -8 * sum;
    dsum[b] = d[b] * static_cast<float>(sum);
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

// ---- panels (prefill, batched decode, weights repacked at load) ---------
// A panel holds 32 rows in the layout of weight_panels.h, the one the AVX-512
// kernels read, so that weights repacked at load are the same bytes on both.
// In a block, group g's 4 bytes of rows 8k .. 8k + 7 (quarter k) are one
// 32-byte register at g·128 + 32k, a row per int32 lane: a tile keeps a
// row's exact block sum in its lane (no reduction across lanes) and then
// takes the rows kernel's float steps, so both paths give the same bits.
// Q8_0 panel bytes are w + 128, which vpmaddubsw cannot take (255·127·2
// saturates int16): the xor gives w back for the sign trick above.
constexpr int64_t kPanelRows = panels::kRows;
constexpr int64_t kQuarterRows = 8;
constexpr int kQuarters = 4;

// The panel types of this file, K below: the panel's format and how a tile
// turns a group's bytes into products.
//   Q8_0: bytes w + 128 in the panel (flip), the sign trick on w (above).
//   Q4_0, Q4_1: nibbles as the unsigned operand, a block's 8 groups summed
//         in int16 (≤ 8·2·15·127 = 30480); Q4_0's −8·Σx added to the exact
//         sum, Q4_1's minimum a float step of its own (below).
//   Q5_0, Q5_1: the nibbles and their fifth bit (the panel's high plane,
//         weight_panels.h) as the unsigned operand; a group step's two pair
//         sums (≤ 2·2·31·127 = 15748) added in int16, then widened; Q5_0's
//         −16·Σx added.
//   IQ4_NL, MXFP4: nibbles indexing 16 signed levels (vpshufb), |level|
//         against x with the level's sign: IQ4_NL's |level| ≤ 127 fills a
//         word with one pair sum (≤ 32258), widened at once; MXFP4's ≤ 12
//         lets a block's 8 groups sum in int16 (≤ 8·2·12·127 = 24384).
// Q4_1, Q5_0, Q5_1, IQ4_NL and MXFP4 have their rows path in
// matmul_q32_avx2.cc, whose float steps these panels take (acc =
// fma(float(Σu·x + k·Σx), d·d_x, acc), then acc = fma(m, d_x·Σx, acc) for
// the types with a minimum), as the AVX-512 panels do
// (matmul_q32_avx512.cc): the same bits.
// kLevels: the nibbles index Levels() (a flag, not a null pointer test: with
// -fsanitize=undefined g++ 12 takes no address comparison as constant).
// kInt16Groups: how many of a block's 8 groups of 4 products add in int16
// before they widen to int32 (8, 2 or 1); kBiasEights: the block's offset
// k·Σx in units of the activations' −8·Σx (Q4_0 1, Q5_0 2).
struct Q8Kind {
  static constexpr panels::Format kFormat = panels::kQ8_0;
  static constexpr bool kNibbles = false, kLevels = false, kE8M0Scale = false;
  static constexpr int kInt16Groups = 1, kBiasEights = 0;
};
struct Q4Kind {
  static constexpr panels::Format kFormat = panels::kQ4_0;
  static constexpr bool kNibbles = true, kLevels = false, kE8M0Scale = false;
  static constexpr int kInt16Groups = 8, kBiasEights = 1;
};
struct Q4_1Kind {
  static constexpr panels::Format kFormat = panels::kQ4_1;
  static constexpr bool kNibbles = true, kLevels = false, kE8M0Scale = false;
  static constexpr int kInt16Groups = 8, kBiasEights = 0;
};
template <bool kMin>
struct Q5Kind {
  static constexpr panels::Format kFormat = kMin ? panels::kQ5_1 : panels::kQ5_0;
  static constexpr bool kNibbles = true, kLevels = false, kE8M0Scale = false;
  static constexpr int kInt16Groups = 2, kBiasEights = kMin ? 0 : 2;
};
struct IQ4NLKind {
  static constexpr panels::Format kFormat = panels::kIQ4_NL;
  static constexpr bool kNibbles = true, kLevels = true, kE8M0Scale = false;
  static constexpr int kInt16Groups = 1, kBiasEights = 0;
  static const int8_t* Levels() { return kIq4NlLevels; }
};
struct MXFP4Kind {
  static constexpr panels::Format kFormat = panels::kMXFP4;
  static constexpr bool kNibbles = true, kLevels = true, kE8M0Scale = true;
  static constexpr int kInt16Groups = 8, kBiasEights = 0;
  static const int8_t* Levels() { return kMxfp4Levels; }
};
static_assert(Q8Kind::kFormat.file_block_bytes == sizeof(BlockQ8_0));
static_assert(Q4Kind::kFormat.file_block_bytes == sizeof(BlockQ4_0));
static_assert(Q4_1Kind::kFormat.file_block_bytes == sizeof(BlockQ4_1));
static_assert(Q5Kind<false>::kFormat.file_block_bytes == sizeof(BlockQ5_0));
static_assert(Q5Kind<true>::kFormat.file_block_bytes == sizeof(BlockQ5_1));
static_assert(IQ4NLKind::kFormat.file_block_bytes == sizeof(BlockIQ4_NL));
static_assert(MXFP4Kind::kFormat.file_block_bytes == sizeof(BlockMXFP4));

// panels::HighPlaneWord of each int32 lane (the same formula, 8 rows at once).
__m256i HighPlaneWords(__m256i qh) {
  __m256i word = _mm256_setzero_si256();
  for (int g = 0; g < 8; ++g) {
    const __m256i nibble = _mm256_and_si256(_mm256_srli_epi32(qh, 4 * g), _mm256_set1_epi32(0xf));
    const __m256i spread =
        _mm256_and_si256(_mm256_mullo_epi32(nibble, _mm256_set1_epi32(0x00204081)), _mm256_set1_epi32(0x01010101));
    word = _mm256_or_si256(word, _mm256_slli_epi32(spread, g));
  }
  return word;
}

// Bit s of each byte of a high plane, moved to bit 4 (the fifth bit of a
// code): 16-bit shifts by at most 4, whose bits crossing into the other byte
// of a word never reach its bit 4.
inline __m256i FifthBits(__m256i high_plane, int s) {
  const __m256i moved = s <= 4 ? _mm256_slli_epi16(high_plane, 4 - s) : _mm256_srli_epi16(high_plane, s - 4);
  return _mm256_and_si256(moved, _mm256_set1_epi8(0x10));
}

template <typename K>
int64_t PanelBytes(int64_t n_cols) {
  return n_cols / kBlock * K::kFormat.block_bytes();
}

// Packs rows [r_begin, r_begin + 32) of the file-layout matrix w into the
// layout of weight_panels.h (rows past w.n_rows: zero quants, the last row's
// scales; their outputs are never stored). Per quarter, the 8 rows' quants
// of a block (nibbles: of two blocks) are transposed as 8 × 8 int32.
template <typename K>
void PackPanel(const MatView& w, int64_t r_begin, uint8_t* panel) {
  const int64_t n_blocks = w.n_cols / kBlock;
  constexpr int64_t kFileBlockBytes = K::kFormat.file_block_bytes;
  constexpr int64_t kBlockBytes = K::kFormat.block_bytes();
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(K::kFormat.flip));
  for (int64_t k = 0; k < kQuarters; ++k) {
    const int64_t first = r_begin + k * kQuarterRows;
    const uint8_t* rows[kQuarterRows];  // nullptr: past the matrix
    int64_t scale_offsets[kQuarterRows];
    const int64_t last = w.n_rows - 1;
    for (int i = 0; i < kQuarterRows; ++i) {
      rows[i] = first + i < w.n_rows ? w.data + (first + i) * w.row_bytes : nullptr;
      scale_offsets[i] = ((first + i < w.n_rows ? first + i : last) - r_begin) * w.row_bytes;
    }
    const uint8_t* scale_base = w.data + r_begin * w.row_bytes;
    uint8_t* out = panel + k * kQuarterRows * 4;
    if constexpr (K::kNibbles) {
      for (int64_t b = 0; b < n_blocks; b += 2) {  // blocks b and b + 1: 4 groups each
        const bool pair = b + 1 < n_blocks;
        __m256i v[8];
        for (int i = 0; i < kQuarterRows; ++i) {
          if (rows[i] == nullptr) {
            v[i] = _mm256_setzero_si256();
            continue;
          }
          const uint8_t* qs = rows[i] + b * kFileBlockBytes + K::kFormat.file_quant_offset();
          const __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
          const __m128i hi =
              pair ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + kFileBlockBytes)) : _mm_setzero_si128();
          v[i] = _mm256_set_m128i(hi, lo);
        }
        avx2::Transpose8x8(v);
        for (int g = 0; g < 4; ++g) {
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + b * kBlockBytes + g * kPanelRows * 4), v[g]);
          if (pair)
            _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + (b + 1) * kBlockBytes + g * kPanelRows * 4),
                                v[4 + g]);
        }
      }
    } else {
      for (int64_t b = 0; b < n_blocks; ++b) {
        __m256i v[8];
        for (int i = 0; i < kQuarterRows; ++i)
          v[i] = rows[i] == nullptr ? _mm256_setzero_si256()
                                    : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                          rows[i] + b * kFileBlockBytes + K::kFormat.file_quant_offset()));
        avx2::Transpose8x8(v);
        for (int g = 0; g < 8; ++g)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + b * kBlockBytes + g * kPanelRows * 4),
                              _mm256_xor_si256(v[g], flip));
      }
    }
    for (int64_t b = 0; b < n_blocks; ++b) {
      constexpr panels::Format f = K::kFormat;
      uint8_t* out = panel + b * kBlockBytes;
      const uint8_t* blocks = scale_base + b * kFileBlockBytes;
      if constexpr (K::kE8M0Scale) {
        for (int i = 0; i < kQuarterRows; ++i) out[f.scale_offset() + k * kQuarterRows + i] = blocks[scale_offsets[i]];
      } else {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + f.scale_offset() + k * 16),
                         avx2::HalvesOf8(blocks, scale_offsets));
      }
      if constexpr (f.min_bytes != 0)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + f.min_offset() + k * 16),
                         avx2::HalvesOf8(blocks + f.file_min_offset(), scale_offsets));
      if constexpr (f.high_bytes != 0) {
        int32_t qh[kQuarterRows];
        for (int i = 0; i < kQuarterRows; ++i) std::memcpy(&qh[i], blocks + scale_offsets[i] + f.file_high_offset(), 4);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + f.high_offset() + k * 32),
                            HighPlaneWords(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh))));
      }
    }
  }
}

// The next panel is prefetched into L2 by the tiles (quarters × tokens) of
// this one in pieces (PrefetchSlice, matmul_isa.h). On a Zen 5 under
// RIDGE_ISA=avx2, the model alternated in one process, runs of a repacked
// panel against 32 slices of it: Q8_0 4 tokens 1.08-1.13 ×, 8 tokens
// 1.02-1.15 ×, 16 tokens 1.015-1.03 ×, Q4_0 8 tokens 1.08-1.11 ×, whether the
// host's memory read ~54 or ~83 GB/s. Not measured on a Zen 3, where the
// slices were tuned (PanelRun).

// The codes of group g of quarter q of the panel block p, as bytes: *lo
// those of the low nibbles (elements 4g .. 4g + 3), *hi of the high ones
// (16 + 4g ..); Q5: with bit g and bit 4 + g of the quarter's high plane;
// IQ4_NL, MXFP4: the signed levels they index.
template <typename K>
inline __attribute__((always_inline)) void GroupCodes(const uint8_t* p, int q, int g, __m256i* lo, __m256i* hi) {
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i wv =
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + g * kPanelRows * 4 + q * kQuarterRows * 4));
  *lo = _mm256_and_si256(wv, low4);
  *hi = _mm256_and_si256(_mm256_srli_epi16(wv, 4), low4);
  if constexpr (K::kFormat.high_bytes != 0) {
    const __m256i high_plane =
        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + K::kFormat.high_offset() + q * kQuarterRows * 4));
    *lo = _mm256_or_si256(*lo, FifthBits(high_plane, g));
    *hi = _mm256_or_si256(*hi, FifthBits(high_plane, 4 + g));
  }
  if constexpr (K::kLevels) {
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(K::Levels())));
    *lo = _mm256_shuffle_epi8(levels, *lo);
    *hi = _mm256_shuffle_epi8(levels, *hi);
  }
}

// Q5's codes, and IQ4_NL's and MXFP4's levels, decoded once a call for
// prefill, a byte a code: per block, [8 groups: the low nibbles' 4, then the
// high ones'][32 rows][4], so that a tile loads two vectors a group step
// instead of taking 10 operations (Q5) or 5 (the levels). On a Zen 5 under
// RIDGE_ISA=avx2, against decoding in each tile: pp512 Q5_0 1.21 × (185-187
// -> 225-226 t/s), Q5_1 1.19 ×, IQ4_NL 1.06-1.13 ×, MXFP4 1.14-1.15 ×;
// batch-16 decode Q5_0 1.15 ×, IQ4_NL 1.08-1.11 ×, MXFP4 1.07-1.08 ×. From 5
// tokens instead of kDecodeOnceTokens, Q5_0's 6 and 8 tokens ran 0.97-1.02 ×.
// Panels up to kMaxDecodedBytes (176 KiB at 5632 columns, in a Zen 3's 512
// KiB L2); wider ones decode in each tile. Q4_0 and Q4_1 (two operations a
// group step) decode in each tile.
constexpr int64_t kDecodedBlockBytes = 8 * kPanelRows * 4;
constexpr int64_t kDecodeOnceTokens = 12;
constexpr int64_t kMaxDecodedBytes = 256 * 1024;

template <typename K>
void DecodeCodes(const uint8_t* panel, int64_t n_blocks, uint8_t* out) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* p = panel + b * K::kFormat.block_bytes();
    uint8_t* c = out + b * kDecodedBlockBytes;
    for (int q = 0; q < kQuarters; ++q)
      for (int g = 0; g < 4; ++g) {
        __m256i lo, hi;
        GroupCodes<K>(p, q, g, &lo, &hi);
        _mm256_store_si256(reinterpret_cast<__m256i*>(c + g * kPanelRows * 4 + q * kQuarterRows * 4), lo);
        _mm256_store_si256(reinterpret_cast<__m256i*>(c + (4 + g) * kPanelRows * 4 + q * kQuarterRows * 4), hi);
      }
  }
}

// Quarters [k0, k0 + kQ) of a panel × kT tokens over all blocks: per block,
// kQ × kT exact int32 block sums (a row per lane), then one convert and one
// FMA per (quarter, token) in the rows kernel's order. y points at the
// panel's row 0 for the tile's first token.
template <typename K, int kT, int kQ, bool kDecoded = false>
void PanelTile(const uint8_t* panel, int64_t n_blocks, int k0, int64_t n_valid_rows, const ActLayout& layout,
               const uint8_t* acts, int64_t act_stride, float* y, int64_t y_stride, const TilePrefetch& pf,
               const uint8_t* codes = nullptr) {
  const int8_t* xq[kT];
  const float* xd[kT];
  const int32_t* xbias[kT];
  for (int t = 0; t < kT; ++t) {
    const uint8_t* a = acts + t * act_stride;
    xq[t] = reinterpret_cast<const int8_t*>(a);
    xd[t] = reinterpret_cast<const float*>(a + layout.d_off);
    xbias[t] = reinterpret_cast<const int32_t*>(a + layout.block_bias_off);
  }
  // A token's d·Σq of block b is xd[t][b + dsum_from_d] (one index for every
  // token, not a pointer more each).
  const int64_t dsum_from_d = (layout.dsum_off - layout.d_off) / 4;
  const __m256i ones16 = _mm256_set1_epi16(1);
  __m256 acc[kQ][kT];
  for (int q = 0; q < kQ; ++q)
    for (int t = 0; t < kT; ++t) acc[q][t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int i = 0; i < pf.n; ++i)
      for (int l = 0; l < pf.lines; ++l)
        _mm_prefetch(reinterpret_cast<const char*>(pf.pieces[i] + b * pf.step + 64 * l), _MM_HINT_T1);
    constexpr int64_t kBlockBytes = K::kFormat.block_bytes();
    const uint8_t* p = panel + b * kBlockBytes;
    if (pf.ahead > 0) {
#pragma GCC unroll 17
      for (int64_t line = 0; line < kBlockBytes; line += 64)
        _mm_prefetch(reinterpret_cast<const char*>(p + pf.ahead + line), _MM_HINT_T1);
    }
    // Group by group, each quarter's rows in turn (one broadcast of a
    // token's 4 activation bytes serves every quarter).
    __m256i dot[kQ][kT];
    for (int q = 0; q < kQ; ++q)
      for (int t = 0; t < kT; ++t) dot[q][t] = _mm256_setzero_si256();
    if constexpr (K::kNibbles) {
#pragma GCC unroll 4
      for (int g = 0; g < 4; ++g) {
        __m256i xl[kT], xh[kT];
        for (int t = 0; t < kT; ++t) {
          int32_t l, h;
          std::memcpy(&l, xq[t] + b * kBlock + 4 * g, 4);
          std::memcpy(&h, xq[t] + b * kBlock + 16 + 4 * g, 4);
          xl[t] = _mm256_set1_epi32(l);
          xh[t] = _mm256_set1_epi32(h);
        }
#pragma GCC unroll 4
        for (int q = 0; q < kQ; ++q) {
          __m256i lo, hi;
          if constexpr (kDecoded) {
            const uint8_t* c = codes + b * kDecodedBlockBytes + (k0 + q) * kQuarterRows * 4;
            lo = _mm256_load_si256(reinterpret_cast<const __m256i*>(c + g * kPanelRows * 4));
            hi = _mm256_load_si256(reinterpret_cast<const __m256i*>(c + (4 + g) * kPanelRows * 4));
          } else {
            GroupCodes<K>(p, k0 + q, g, &lo, &hi);
          }
          // The group step's two pair sums into the block sum (kInt16Groups).
          const auto add = [&](__m256i& sum, __m256i pl, __m256i ph) {
            if constexpr (K::kInt16Groups == 8) {
              sum = _mm256_add_epi16(sum, _mm256_add_epi16(pl, ph));
            } else if constexpr (K::kInt16Groups == 2) {
              sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_add_epi16(pl, ph), ones16));
            } else {
              sum =
                  _mm256_add_epi32(sum, _mm256_add_epi32(_mm256_madd_epi16(pl, ones16), _mm256_madd_epi16(ph, ones16)));
            }
          };
          if constexpr (!K::kLevels) {
#pragma GCC unroll 8
            for (int t = 0; t < kT; ++t)
              add(dot[q][t], _mm256_maddubs_epi16(lo, xl[t]), _mm256_maddubs_epi16(hi, xh[t]));
          } else {
            const __m256i lo_abs = _mm256_abs_epi8(lo), hi_abs = _mm256_abs_epi8(hi);
#pragma GCC unroll 8
            for (int t = 0; t < kT; ++t)
              add(dot[q][t], _mm256_maddubs_epi16(lo_abs, _mm256_sign_epi8(xl[t], lo)),
                  _mm256_maddubs_epi16(hi_abs, _mm256_sign_epi8(xh[t], hi)));
          }
        }
        avx2::KeepInRegisters(dot);
      }
      for (int q = 0; q < kQ; ++q)
        for (int t = 0; t < kT; ++t) {
          if constexpr (K::kInt16Groups == 8) dot[q][t] = _mm256_madd_epi16(dot[q][t], ones16);
          if constexpr (K::kBiasEights != 0)  // Q4_0's −8·Σx, Q5_0's −16·Σx
            dot[q][t] = _mm256_add_epi32(dot[q][t], _mm256_set1_epi32(K::kBiasEights * xbias[t][b]));
        }
    } else {
      const __m256i flip = _mm256_set1_epi8(static_cast<char>(panels::kQ8_0.flip));
#pragma GCC unroll 8
      for (int g = 0; g < 8; ++g) {
        __m256i xv[kT];
        for (int t = 0; t < kT; ++t) {
          int32_t x4;
          std::memcpy(&x4, xq[t] + b * kBlock + 4 * g, 4);
          xv[t] = _mm256_set1_epi32(x4);
        }
#pragma GCC unroll 4
        for (int q = 0; q < kQ; ++q) {
          const __m256i ws = _mm256_xor_si256(
              _mm256_loadu_si256(
                  reinterpret_cast<const __m256i*>(p + g * kPanelRows * 4 + (k0 + q) * kQuarterRows * 4)),
              flip);
          const __m256i wa = _mm256_sign_epi8(ws, ws);  // |w|; -128 stays 0x80, read as 128 unsigned
#pragma GCC unroll 8
          for (int t = 0; t < kT; ++t) {
            const __m256i xs = _mm256_sign_epi8(xv[t], ws);
            dot[q][t] = _mm256_add_epi32(dot[q][t], _mm256_madd_epi16(_mm256_maddubs_epi16(wa, xs), ones16));
          }
        }
        avx2::KeepInRegisters(dot);
      }
    }
#pragma GCC unroll 4
    for (int q = 0; q < kQ; ++q) {
      const uint8_t* scales = p + K::kFormat.scale_offset() + (k0 + q) * kQuarterRows * K::kFormat.scale_bytes;
      const __m256 dw = K::kE8M0Scale ? avx2::E8M0HalfOf8(_mm256_cvtepu8_epi32(_mm_loadl_epi64(
                                            reinterpret_cast<const __m128i*>(scales))))
                                      : _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales)));
#pragma GCC unroll 8
      for (int t = 0; t < kT; ++t)
        acc[q][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[q][t]), _mm256_mul_ps(dw, _mm256_set1_ps(xd[t][b])),
                                    acc[q][t]);
      if constexpr (K::kFormat.min_bytes != 0) {  // Q4_1, Q5_1: acc = fma(m, d_x·Σx, acc)
        const __m256 mw = _mm256_cvtph_ps(_mm_loadu_si128(
            reinterpret_cast<const __m128i*>(p + K::kFormat.min_offset() + (k0 + q) * kQuarterRows * 2)));
#pragma GCC unroll 8
        for (int t = 0; t < kT; ++t) acc[q][t] = _mm256_fmadd_ps(mw, _mm256_set1_ps(xd[t][b + dsum_from_d]), acc[q][t]);
      }
    }
  }
  for (int q = 0; q < kQ; ++q) {
    const int64_t n_valid = n_valid_rows - (k0 + q) * kQuarterRows;
    float* yq = y + (k0 + q) * kQuarterRows;
    if (n_valid >= kQuarterRows) {
      for (int t = 0; t < kT; ++t) _mm256_storeu_ps(yq + t * y_stride, acc[q][t]);
    } else if (n_valid > 0) {
      const __m256i mask =
          _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n_valid)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
      for (int t = 0; t < kT; ++t) _mm256_maskstore_ps(yq + t * y_stride, mask, acc[q][t]);
    }
  }
}

// Every token, tiles of one quarter × up to 4 tokens (ForEachQuarterTile;
// EvenTokenTiles: 5 tokens as 3 + 2 decoded Q8_0 6 % faster in the model
// than 4 + 1), the codes read from `codes` (kDecoded, DecodeCodes) or the
// panel.
template <typename K, bool kDecoded>
void QuarterTiles(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts, int64_t n_tokens,
                  float* y, int64_t y_stride, const PanelPrefetch& next, const uint8_t* codes) {
  const ActLayout layout(n_cols);
  const int64_t n = layout.n_blocks, s = acts.row_stride;
  const auto tile = [&](int q, int64_t t, int64_t size, const TilePrefetch& pf) {
    const uint8_t* a = acts.data + t * s;
    float* yt = y + t * y_stride;
    switch (size) {
      case 1: return PanelTile<K, 1, 1, kDecoded>(panel, n, q, n_valid_rows, layout, a, s, yt, y_stride, pf, codes);
      case 2: return PanelTile<K, 2, 1, kDecoded>(panel, n, q, n_valid_rows, layout, a, s, yt, y_stride, pf, codes);
      case 3: return PanelTile<K, 3, 1, kDecoded>(panel, n, q, n_valid_rows, layout, a, s, yt, y_stride, pf, codes);
      default: return PanelTile<K, 4, 1, kDecoded>(panel, n, q, n_valid_rows, layout, a, s, yt, y_stride, pf, codes);
    }
  };
  ForEachQuarterTile(n_valid_rows, n_tokens, n, next, tile);
}

template <typename K>
void PanelMatMul(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts, int64_t n_tokens,
                 float* y, int64_t y_stride, const PanelPrefetch& next) {
  if constexpr (K::kFormat.high_bytes != 0 || K::kLevels) {
    const int64_t n_blocks = n_cols / kBlock;
    if (n_tokens >= kDecodeOnceTokens && n_blocks * kDecodedBlockBytes <= kMaxDecodedBytes) {
      thread_local ScratchBuffer code_scratch;  // the running thread's
      uint8_t* codes = code_scratch.Get(n_blocks * kDecodedBlockBytes);
      DecodeCodes<K>(panel, n_blocks, codes);
      return QuarterTiles<K, true>(panel, n_cols, n_valid_rows, acts, n_tokens, y, y_stride, next, codes);
    }
  }
  QuarterTiles<K, false>(panel, n_cols, n_valid_rows, acts, n_tokens, y, y_stride, next, nullptr);
}

// Panels [0, n_panels) of weights repacked at load (whole panels, consecutive
// from first), rows [32i, 32i + 32) of y for panel i, every token.
// 1-3 tokens (decode, speculation's verify passes) take whole panels, one
// after the other: a tile of the 4 quarters reads each block once, in
// memory order. Measured on the first AVX2-only machine, a Zen-1-class EPYC
// (docs/benchmarks.md, "AVX2 weight panels"): two streams side by side
// decoded 1 token 5-25 % slower, and quarters in the inner loop of each
// group (one activation broadcast for all four) were what took decode from
// 50 % to 77 % of a paired read (the other order ran out of the 16 ymm
// registers). Q8_0 is left to the hardware prefetcher: a software prefetch
// 1-64 KiB ahead cost it up to a quarter of its rate on that Zen 1 and on a
// Zen 3. Q4_0 does twice Q8_0's vector work per byte (two nibble products
// a byte), and on a Zen 1 its stream then fell behind: prefetching its own
// stream kQ4DecodeAheadBlocks blocks ahead (T1) took the median of
// BM_FewTokens/Q4_0_repacked/1 from 70 % to 84 % of a paired read (2 and 3
// tokens level) and tg128 from 63-67 % to 73 % ("Q4_0 decode prefetches its
// own stream", docs/benchmarks.md; not yet measured on a Zen 3). 4 tokens
// and more take PanelMatMul panel by panel; the run's first panel is
// prefetched stream_ahead bytes ahead by its first tile, and each later
// panel by the tiles of the one before it, a part each (PrefetchSlice): a
// panel's first tile alone bringing it in left the others to wait on memory
// in turn.
// Measured on a Zen 3 (BM_Batched/Q8_0_memory, model decode --batch 8,16),
// with the parts then row slices: 8 and 16 tokens 7-26 % faster; 64 level.
constexpr int64_t kQ4DecodeAheadBlocks = 8;

template <typename K>
void PanelRun(const uint8_t* first, int64_t n_panels, int64_t n_cols, const ActView& acts, int64_t n_tokens,
              float* y, int64_t y_stride, int64_t stream_ahead) {
  const int64_t panel_bytes = PanelBytes<K>(n_cols);
  const ActLayout layout(n_cols);
  TilePrefetch own{};  // 1-3 tokens: the run's own stream, the nibble types only (above)
  if constexpr (K::kNibbles) own.ahead = kQ4DecodeAheadBlocks * K::kFormat.block_bytes();
  for (int64_t i = 0; i < n_panels; ++i) {
    const uint8_t* panel = first + i * panel_bytes;
    float* yp = y + i * kPanelRows;
    const int64_t n = layout.n_blocks, s = acts.row_stride;
    switch (n_tokens) {
      case 1: PanelTile<K, 1, kQuarters>(panel, n, 0, kPanelRows, layout, acts.data, s, yp, y_stride, own); break;
      case 2: PanelTile<K, 2, kQuarters>(panel, n, 0, kPanelRows, layout, acts.data, s, yp, y_stride, own); break;
      case 3: PanelTile<K, 3, kQuarters>(panel, n, 0, kPanelRows, layout, acts.data, s, yp, y_stride, own); break;
      default: {
        // The next panel as one row of bytes, cut among the tiles (PrefetchSlice).
        const bool more = i + 1 < n_panels;
        PanelMatMul<K>(panel, n_cols, kPanelRows, acts, n_tokens, yp, y_stride,
                         PanelPrefetch{panel + panel_bytes, more ? 1 : 0, panel_bytes, i == 0 ? stream_ahead : 0});
      }
    }
  }
}

constexpr int64_t kPanelMinTokens = 8;
constexpr ActPrep kQuantActs{ActRowBytes, PrepareActRow};
constexpr TypeKernels kQ8_0Kernels{kQuantActs, 4, Rows<false>, kQuantActs, kPanelRows, kPanelMinTokens,
                                   PanelBytes<Q8Kind>, PackPanel<Q8Kind>, PanelMatMul<Q8Kind>, PanelRun<Q8Kind>};
constexpr TypeKernels kQ4_0Kernels{kQuantActs, 4, Rows<true>, kQuantActs, kPanelRows, kPanelMinTokens,
                                   PanelBytes<Q4Kind>, PackPanel<Q4Kind>, PanelMatMul<Q4Kind>, PanelRun<Q4Kind>};

// Q4_1's, Q5_0's, Q5_1's, IQ4_NL's and MXFP4's: the rows path of
// matmul_q32_avx2.cc (its activations carry d_x·Σx for the types with a
// minimum), the panels here on this file's activations (the same int8 and
// scales: QuantizeBlock32; d_x·Σx made from d_x and −8·Σx as the rows path
// makes it).
template <typename K>
const TypeKernels* Q32PanelKernels(GgmlType type) {
  static const TypeKernels k = [&] {
    TypeKernels kernels = *Avx2Q32Kernels(type);
    kernels.panel_acts = kQuantActs;
    kernels.panel_rows = kPanelRows;
    kernels.panel_min_tokens = kPanelMinTokens;
    kernels.panel_bytes = PanelBytes<K>;
    kernels.pack_panel = PackPanel<K>;
    kernels.panel_matmul = PanelMatMul<K>;
    kernels.panel_run = PanelRun<K>;
    return kernels;
  }();
  return &k;
}

}  // namespace

const TypeKernels* Avx2QuantKernels(GgmlType type) {
  switch (type) {
    case GgmlType::kQ8_0: return &kQ8_0Kernels;
    case GgmlType::kQ4_0: return &kQ4_0Kernels;
    case GgmlType::kQ4_1: return Q32PanelKernels<Q4_1Kind>(type);
    case GgmlType::kQ5_0: return Q32PanelKernels<Q5Kind<false>>(type);
    case GgmlType::kQ5_1: return Q32PanelKernels<Q5Kind<true>>(type);
    case GgmlType::kIQ4_NL: return Q32PanelKernels<IQ4NLKind>(type);
    case GgmlType::kMXFP4: return Q32PanelKernels<MXFP4Kind>(type);
    default: return nullptr;
  }
}

const TypeKernels* Avx2WeightPanelKernels(GgmlType type) { return Avx2QuantKernels(type); }

}  // namespace ridge::kernels::internal
