// Q4_1, Q5_0, Q5_1, IQ4_NL and MXFP4 MatMul for AVX-512 (VNNI): rows and panels.
//
// Activations are quantized once per call to int8 blocks of 32 with a float
// scale d_x (as for Q8_0/Q4_0), and each block also keeps Σq_x and d_x·Σq_x.
// A weight block's 32 codes become unsigned bytes u in element order, and one
// vpdpbusd per row and token takes Σ u·q_x exactly. Per (row, token) the
// float steps are then, block after block:
//   Q4_1, Q5_1 (w = d·u + m):        acc = fma(Σu·q_x, d·d_x, acc)
//                                     acc = fma(m, d_x·Σq_x, acc)
//   Q5_0 (w = d·(u − 16)):           acc = fma(Σu·q_x − 16·Σq_x, d·d_x, acc)
//   IQ4_NL (w = d·level[c], u = level[c] + 128 by one vpshufb):
//                                     acc = fma(Σu·q_x − 128·Σq_x, d·d_x, acc)
//   MXFP4 (w = 2^(e−128)·level[c]): as IQ4_NL, with MXFP4's levels and the
//                                     E8M0 byte's scale
// whatever the other tokens of the call (batch invariance). Weights repacked
// at load are the weight panels of weight_panels.h, multiplied in place at
// every token count; in the file's layout, prefill (from 8 tokens) packs
// each panel per call and decode takes the rows. The panels take the same
// integer sums and float steps as the rows, so a token's results are the
// same bits whichever path its call takes.
#include <cstring>

#include "ridge/kernels/matmul_isa.h"
#include "ridge/kernels/simd_avx512.h"
#include "ridge/kernels/weight_panels.h"

namespace ridge::kernels::internal {
namespace {

constexpr int kBlock = 32;

int64_t Align64(int64_t n) { return (n + 63) & ~int64_t{63}; }

// One prepared activation row of n_cols (a multiple of 32):
//   q     int8  [n_cols]
//   d     float [n_blocks]   scale of each block
//   qsum  int32 [n_blocks]   Σq of each block
//   dsum  float [n_blocks]   d·Σq of each block
struct ActLayout {
  int64_t n_blocks, d_off, qsum_off, dsum_off, bytes;
  explicit ActLayout(int64_t n_cols) {
    n_blocks = n_cols / kBlock;
    d_off = Align64(n_cols);
    qsum_off = d_off + Align64(n_blocks * 4);
    dsum_off = qsum_off + Align64(n_blocks * 4);
    bytes = dsum_off + Align64(n_blocks * 4);
  }
};

int64_t ActRowBytes(int64_t n_cols) { return ActLayout(n_cols).bytes; }

void PrepareActRow(const float* x, int64_t n_cols, uint8_t* dst) {
  const ActLayout layout(n_cols);
  auto* q = reinterpret_cast<int8_t*>(dst);
  auto* d = reinterpret_cast<float*>(dst + layout.d_off);
  auto* qsum = reinterpret_cast<int32_t*>(dst + layout.qsum_off);
  auto* dsum = reinterpret_cast<float*>(dst + layout.dsum_off);
  for (int64_t b = 0; b < layout.n_blocks; ++b) {
    __m256i lane_sums;
    const float scale = avx512::QuantizeBlock32(x + b * kBlock, q + b * kBlock, &lane_sums);
    const int32_t sum = avx512::HorizontalSumI32(lane_sums);
    d[b] = scale;
    qsum[b] = sum;
    dsum[b] = scale * static_cast<float>(sum);
  }
}

// 16 packed bytes → 32 codes 0..15 in element order (low nibbles are
// elements 0..15, high nibbles 16..31).
// One broadcast load and a per-lane shift (0, then 4), one instruction fewer
// than a shift and an insert.
__m256i Nibbles(const uint8_t* packed) {
  const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(packed)));
  const __m256i shifted = _mm256_srlv_epi16(both, _mm256_setr_m128i(_mm_setzero_si128(), _mm_set1_epi16(4)));
  return _mm256_and_si256(shifted, _mm256_set1_epi8(0x0f));
}

// 5-bit codes: the nibbles plus 16 where bit j of the 32-bit qh is set.
__m256i FiveBitCodesInOrder(const uint8_t* qh, const uint8_t* packed) {
  uint32_t high;
  std::memcpy(&high, qh, 4);
  const __m256i low = Nibbles(packed);
  return _mm256_mask_add_epi8(low, static_cast<__mmask32>(high), low, _mm256_set1_epi8(16));
}

// 2^(e − 128) for the E8M0 bytes (MXFP4's scale) at base + offsets[i], in
// lanes 0..7, exactly as the scalar E8M0Half: the float whose exponent field
// is e − 1, or for e = 0, 1 the subnormals 2^-128 and 2^-127.
__m256 E8M0HalfOf8(const uint8_t* base, const int64_t offsets[8]) {
  const __m256i e = _mm256_setr_epi32(base[offsets[0]], base[offsets[1]], base[offsets[2]], base[offsets[3]],
                                      base[offsets[4]], base[offsets[5]], base[offsets[6]], base[offsets[7]]);
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
  const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
  const __mmask8 small = _mm256_cmplt_epi32_mask(e, _mm256_set1_epi32(2));
  return _mm256_castsi256_ps(_mm256_mask_blend_epi32(small, normal, subnormal));
}

// Per type: where a block keeps its fields, and its codes as unsigned bytes
// (Unsigned, for the rows path: the high half of the bytes may hold
// 2^kHighShift × its codes, taken in place, one instruction fewer; Panel, for
// the panels: the codes of group g's low (kHigh = false) or high nibbles from
// a 64-byte load w of 16 rows' packed nibbles and h of their high plane);
// kBiasFactor: the offset of u from the signed weight code (Σ(u + k)·q =
// Σu·q + k·Σq); kHasMin: w = d·u + m; kE8M0Scale: the scale is MXFP4's
// exponent byte, not an f16.
inline __m512i LowNibbles(__m512i w) { return _mm512_and_si512(w, _mm512_set1_epi8(0x0f)); }
inline __m512i HighNibbles(__m512i w) { return LowNibbles(_mm512_srli_epi16(w, 4)); }

struct Q4_1Codes {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ4_1);
  static constexpr int kHighShift = 4, kBiasFactor = 0;
  static constexpr bool kHasMin = true, kE8M0Scale = false;
  static constexpr panels::Format kPanelFormat = panels::kQ4_1;
  static __m256i Unsigned(const uint8_t* block) {
    const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 4)));
    return _mm256_and_si256(both, _mm256_setr_m128i(_mm_set1_epi8(0x0f), _mm_set1_epi8(static_cast<char>(0xf0))));
  }
  template <bool kHigh>
  static __m512i Panel(__m512i w, __m512i, int) {
    return kHigh ? HighNibbles(w) : LowNibbles(w);
  }
};

template <bool kMin>
struct Q5Codes {
  static constexpr int64_t kBlockBytes = kMin ? sizeof(BlockQ5_1) : sizeof(BlockQ5_0);
  static constexpr int kHighShift = 0, kBiasFactor = kMin ? 0 : -16;
  static constexpr bool kHasMin = kMin, kE8M0Scale = false;
  static constexpr panels::Format kPanelFormat = kMin ? panels::kQ5_1 : panels::kQ5_0;
  static __m256i Unsigned(const uint8_t* block) {
    return FiveBitCodesInOrder(block + kPanelFormat.file_high_offset(), block + kPanelFormat.file_quant_offset());
  }
  template <bool kHigh>
  static __m512i Panel(__m512i w, __m512i h, int g) {
    return avx512::FiveBitCodes(w, h, kHigh ? 4 + g : g, kHigh);
  }
};
using Q5_0Codes = Q5Codes<false>;
using Q5_1Codes = Q5Codes<true>;
static_assert(sizeof(BlockQ5_0) == panels::kQ5_0.file_block_bytes &&
              sizeof(BlockQ5_1) == panels::kQ5_1.file_block_bytes);

// IQ4_NL and MXFP4: the nibbles index the levels + 128 (1..241: the sign bit
// flipped), one vpshufb in each 128-bit lane.
template <const int8_t* kLevels>
__m512i LevelTable512() {
  return _mm512_xor_si512(_mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kLevels))),
                          _mm512_set1_epi8(static_cast<char>(0x80)));
}

struct IQ4_NLCodes {
  static constexpr int64_t kBlockBytes = sizeof(BlockIQ4_NL);
  static constexpr int kHighShift = 0, kBiasFactor = -128;
  static constexpr bool kHasMin = false, kE8M0Scale = false;
  static constexpr panels::Format kPanelFormat = panels::kIQ4_NL;
  static __m256i Unsigned(const uint8_t* block) {
    return _mm256_shuffle_epi8(_mm512_castsi512_si256(LevelTable512<kIq4NlLevels>()), Nibbles(block + 2));
  }
  template <bool kHigh>
  static __m512i Panel(__m512i w, __m512i, int) {
    return _mm512_shuffle_epi8(LevelTable512<kIq4NlLevels>(), kHigh ? HighNibbles(w) : LowNibbles(w));
  }
};

struct MXFP4Codes {
  static constexpr int64_t kBlockBytes = sizeof(BlockMXFP4);
  static constexpr int kHighShift = 0, kBiasFactor = -128;
  static constexpr bool kHasMin = false, kE8M0Scale = true;
  static constexpr panels::Format kPanelFormat = panels::kMXFP4;
  static __m256i Unsigned(const uint8_t* block) {
    return _mm256_shuffle_epi8(_mm512_castsi512_si256(LevelTable512<kMxfp4Levels>()), Nibbles(block + 1));
  }
  template <bool kHigh>
  static __m512i Panel(__m512i w, __m512i, int) {
    return _mm512_shuffle_epi8(LevelTable512<kMxfp4Levels>(), kHigh ? HighNibbles(w) : LowNibbles(w));
  }
};

// Prefetch (into L2) of the tile kPrefetchTiles ahead, one slice per block:
// 8 rows are 8 short streams the hardware prefetcher follows too late (see
// matmul_quant_avx512.cc).
constexpr int kPrefetchTiles = 2;
constexpr int kRowsPerTile = 8;

// Rows r .. r + 8 (rows past r_end read row r_end - 1 and are not stored).
// The 8 rows' block sums are reduced so that lane i holds row i's, and the 8
// rows' float chains run in the lanes of one register.
template <typename Codes, int kT>
void RowsTile(const MatView& w, const ActLayout& layout, const ActView& acts, int64_t r, int64_t r_end, float* y,
              int64_t y_stride) {
  constexpr int64_t kBlockBytes = Codes::kBlockBytes;
  constexpr int kPrefetchLines = (kRowsPerTile * kBlockBytes + 63) / 64;
  const int n_valid = static_cast<int>(r_end - r < kRowsPerTile ? r_end - r : kRowsPerTile);
  const uint8_t* base = w.data + r * w.row_bytes;
  const uint8_t* ahead = base + kPrefetchTiles * kRowsPerTile * w.row_bytes;
  int64_t row_offsets[kRowsPerTile];  // byte offset of each row from `base`
  for (int i = 0; i < kRowsPerTile; ++i) row_offsets[i] = (i < n_valid ? i : n_valid - 1) * w.row_bytes;
  const int8_t* xq[kT];
  const float* xd[kT];
  const int32_t* xqsum[kT];
  const float* xdsum[kT];
  for (int t = 0; t < kT; ++t) {
    const uint8_t* a = acts.data + t * acts.row_stride;
    xq[t] = reinterpret_cast<const int8_t*>(a);
    xd[t] = reinterpret_cast<const float*>(a + layout.d_off);
    xqsum[t] = reinterpret_cast<const int32_t*>(a + layout.qsum_off);
    xdsum[t] = reinterpret_cast<const float*>(a + layout.dsum_off);
  }
  __m256 acc[kT];
  for (int t = 0; t < kT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < layout.n_blocks; ++b) {
#pragma GCC unroll 8
    for (int p = 0; p < kPrefetchLines; ++p)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + b * kRowsPerTile * kBlockBytes + p * 64), _MM_HINT_T1);
    const uint8_t* blocks = base + b * kBlockBytes;
    const __m256 dw =
        Codes::kE8M0Scale ? E8M0HalfOf8(blocks, row_offsets) : avx512::ScalesOf8(blocks, row_offsets);
    __m256 mw;
    if constexpr (Codes::kHasMin) mw = avx512::ScalesOf8(blocks + 2, row_offsets);
    __m256i wv[kRowsPerTile];
#pragma GCC unroll 8
    for (int i = 0; i < kRowsPerTile; ++i) wv[i] = Codes::Unsigned(blocks + row_offsets[i]);
#pragma GCC unroll 4
    for (int t = 0; t < kT; ++t) {
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[t] + b * kBlock));
      __m256i dot[kRowsPerTile];
#pragma GCC unroll 8
      for (int i = 0; i < kRowsPerTile; ++i) dot[i] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), wv[i], xv);
      __m256i sums = avx512::SumLanesOf8<Codes::kHighShift>(dot);
      if constexpr (Codes::kBiasFactor != 0)
        sums = _mm256_add_epi32(sums, _mm256_set1_epi32(Codes::kBiasFactor * xqsum[t][b]));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(dw, _mm256_set1_ps(xd[t][b])), acc[t]);
      if constexpr (Codes::kHasMin) acc[t] = _mm256_fmadd_ps(mw, _mm256_set1_ps(xdsum[t][b]), acc[t]);
    }
  }
  const __mmask8 valid = static_cast<__mmask8>((1u << n_valid) - 1);
  for (int t = 0; t < kT; ++t) _mm256_mask_storeu_ps(y + t * y_stride + r, valid, acc[t]);
}

template <typename Codes, int kT>
void RowsForTokens(const MatView& w, const ActView& acts, int64_t r_begin, int64_t r_end, float* y,
                   int64_t y_stride) {
  const ActLayout layout(w.n_cols);
  for (int64_t r = r_begin; r < r_end; r += kRowsPerTile)
    RowsTile<Codes, kT>(w, layout, acts, r, r_end, y, y_stride);
}

template <typename Codes>
void Rows(const MatView& w, const ActView& acts, int64_t n_tokens, int64_t r_begin, int64_t r_end, float* y,
          int64_t y_stride) {
  switch (n_tokens) {
    case 1: return RowsForTokens<Codes, 1>(w, acts, r_begin, r_end, y, y_stride);
    case 2: return RowsForTokens<Codes, 2>(w, acts, r_begin, r_end, y, y_stride);
    case 3: return RowsForTokens<Codes, 3>(w, acts, r_begin, r_end, y, y_stride);
    default: return RowsForTokens<Codes, 4>(w, acts, r_begin, r_end, y, y_stride);
  }
}

// ---- panels ---------------------------------------------------------------
// The weight panels of weight_panels.h: codes still packed, the rows' fields
// as in the file but Q5's qh bits (the high plane).
constexpr int64_t kPanelRows = panels::kRows;

template <typename Codes>
int64_t PanelBytes(int64_t n_cols) {
  return n_cols / kBlock * Codes::kPanelFormat.block_bytes();
}

// panels::HighPlaneWord of each int32 lane (the same formula, 16 rows at once).
__m512i HighPlaneWords(__m512i qh) {
  __m512i word = _mm512_setzero_si512();
  for (int g = 0; g < 8; ++g) {
    const __m512i nibble = _mm512_and_si512(_mm512_srli_epi32(qh, 4 * g), _mm512_set1_epi32(0xf));
    const __m512i spread =
        _mm512_and_si512(_mm512_mullo_epi32(nibble, _mm512_set1_epi32(0x00204081)), _mm512_set1_epi32(0x01010101));
    word = _mm512_or_si512(word, _mm512_slli_epi32(spread, g));
  }
  return word;
}

// Rows [r_begin, r_begin + 32) of the file-layout w as a weight panel, at
// load or per call. Rows past the matrix: zero quants, the last row's other
// fields (their outputs are never stored). The rows' scales, minimums and
// qh words are gathered 16 rows at a time (a per-call pack of Q5_0 taking
// them row by row ran pp512 0.95 × with --mmap).
template <typename Codes>
void PackPanel(const MatView& w, int64_t r_begin, uint8_t* panel) {
  constexpr panels::Format kFormat = Codes::kPanelFormat;
  static_assert(kFormat.file_block_bytes == Codes::kBlockBytes);
  static_assert(kFormat.scale_bytes + kFormat.min_bytes <= 4, "one 32-bit gather takes a row's scale and minimum");
  const int64_t n_blocks = w.n_cols / kBlock;
  avx512::PackPanelQuants<4>(w.data, w.n_rows, w.row_bytes, r_begin, n_blocks, kFormat.file_block_bytes,
                             kFormat.file_quant_offset(), 0, kFormat.block_bytes(), panel);
  const uint8_t* base = w.data + r_begin * w.row_bytes;
  for (int half = 0; half < 2; ++half) {
    alignas(64) int32_t offsets[16];  // of each row from base
    for (int i = 0; i < 16; ++i)
      offsets[i] = static_cast<int32_t>((std::min(r_begin + 16 * half + i, w.n_rows - 1) - r_begin) * w.row_bytes);
    const __m512i rows = _mm512_load_si512(offsets);
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t* blocks = base + b * kFormat.file_block_bytes;
      uint8_t* out = panel + b * kFormat.block_bytes();
      const __m512i head = _mm512_i32gather_epi32(rows, blocks, 1);  // scale, then minimum
      if constexpr (kFormat.scale_bytes == 1) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out + kFormat.scale_offset() + 16 * half),
                         _mm512_cvtepi32_epi8(head));
      } else {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + kFormat.scale_offset() + 32 * half),
                            _mm512_cvtepi32_epi16(head));
      }
      if constexpr (kFormat.min_bytes != 0)
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + kFormat.min_offset() + 32 * half),
                            _mm512_cvtepi32_epi16(_mm512_srli_epi32(head, 16)));
      if constexpr (kFormat.high_bytes != 0) {
        const __m512i qh = _mm512_i32gather_epi32(rows, blocks + kFormat.file_high_offset(), 1);
        _mm512_storeu_si512(out + kFormat.high_offset() + 64 * half, HighPlaneWords(qh));
      }
    }
  }
}

// 2^(e − 128) for 16 E8M0 bytes, as E8M0HalfOf8.
__m512 E8M0HalfOf16(const uint8_t* bytes) {
  const __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes)));
  const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
  const __m512i subnormal = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
  const __mmask16 small = _mm512_cmplt_epi32_mask(e, _mm512_set1_epi32(2));
  return _mm512_castsi512_ps(_mm512_mask_blend_epi32(small, normal, subnormal));
}

// 32 panel rows × kT tokens over all blocks. Integer accumulators per block
// start at the block's offset k·Σq_x and take one vpdpbusd per 4-element
// group (activation bytes broadcast): each 64-byte load of packed nibbles
// gives two groups of 16 rows' codes (Codes::Panel); then the rows path's
// float steps. stream_ahead > 0: the panel streams from memory (repacked at
// load), prefetched that far ahead (see matmul_quant_avx512.cc).
template <typename Codes, int kT>
void PanelTile(const uint8_t* panel, int64_t n_blocks, int64_t n_valid_rows, const ActLayout& layout,
               const uint8_t* acts, int64_t act_stride, float* y, int64_t y_stride, int64_t stream_ahead) {
  constexpr panels::Format kFormat = Codes::kPanelFormat;
  constexpr int64_t kBlockBytes = kFormat.block_bytes();
  const int8_t* xq[kT];
  const float* xd[kT];
  const int32_t* xqsum[kT];
  const float* xdsum[kT];
  for (int t = 0; t < kT; ++t) {
    const uint8_t* a = acts + t * act_stride;
    xq[t] = reinterpret_cast<const int8_t*>(a);
    xd[t] = reinterpret_cast<const float*>(a + layout.d_off);
    xqsum[t] = reinterpret_cast<const int32_t*>(a + layout.qsum_off);
    xdsum[t] = reinterpret_cast<const float*>(a + layout.dsum_off);
  }
  __m512 acc0[kT], acc1[kT];
  for (int t = 0; t < kT; ++t) acc0[t] = acc1[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* p = panel + b * kBlockBytes;
    if (stream_ahead > 0) {
#pragma GCC unroll 12
      for (int64_t line = 0; line < kBlockBytes; line += 64)
        _mm_prefetch(reinterpret_cast<const char*>(p + stream_ahead + line), _MM_HINT_T0);
    }
    __m512i dot0[kT], dot1[kT];
    for (int t = 0; t < kT; ++t) dot0[t] = dot1[t] = _mm512_set1_epi32(Codes::kBiasFactor * xqsum[t][b]);
    __m512i h0 = _mm512_setzero_si512(), h1 = h0;  // the 16 rows' high planes (Q5)
    if constexpr (kFormat.high_bytes != 0) {
      h0 = _mm512_loadu_si512(p + kFormat.high_offset());
      h1 = _mm512_loadu_si512(p + kFormat.high_offset() + 64);
    }
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) {
      const __m512i w0 = _mm512_loadu_si512(p + g * kPanelRows * 4);
      const __m512i w1 = _mm512_loadu_si512(p + g * kPanelRows * 4 + 64);
      avx512::PanelGroupDots<kT>(Codes::template Panel<false>(w0, h0, g), Codes::template Panel<false>(w1, h1, g), xq,
                                 b * kBlock + 4 * g, dot0, dot1);
      avx512::PanelGroupDots<kT>(Codes::template Panel<true>(w0, h0, g), Codes::template Panel<true>(w1, h1, g), xq,
                                 b * kBlock + 16 + 4 * g, dot0, dot1);
    }
    const uint8_t* scales = p + kFormat.scale_offset();
    __m512 s0, s1;
    if constexpr (Codes::kE8M0Scale) {
      s0 = E8M0HalfOf16(scales);
      s1 = E8M0HalfOf16(scales + 16);
    } else {
      s0 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales)));
      s1 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + 32)));
    }
    avx512::PanelScaleBlock<kT>(s0, s1, xd, b, dot0, dot1, acc0, acc1);
    if constexpr (Codes::kHasMin) {
      const uint8_t* mins = p + kFormat.min_offset();
      const __m512 m0 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(mins)));
      const __m512 m1 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(mins + 32)));
#pragma GCC unroll 8
      for (int t = 0; t < kT; ++t) {
        const __m512 dsum = _mm512_set1_ps(xdsum[t][b]);
        acc0[t] = _mm512_fmadd_ps(m0, dsum, acc0[t]);
        acc1[t] = _mm512_fmadd_ps(m1, dsum, acc1[t]);
      }
    }
  }
  avx512::StorePanelTile<kT>(acc0, acc1, n_valid_rows, y, y_stride);
}

template <typename Codes>
void PanelMatMul(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts, int64_t n_tokens,
                 float* y, int64_t y_stride, const PanelPrefetch& next) {
  const ActLayout layout(n_cols);
  const int64_t n = layout.n_blocks;
  constexpr int kT = 6;
  int64_t t = 0;
  // The first tile brings a repacked panel's weights for the others.
  int64_t ahead = next.stream_ahead_bytes;
  for (; t + kT <= n_tokens; t += kT, ahead = 0)
    PanelTile<Codes, kT>(panel, n, n_valid_rows, layout, acts.data + t * acts.row_stride, acts.row_stride,
                         y + t * y_stride, y_stride, ahead);
  const uint8_t* a = acts.data + t * acts.row_stride;
  float* yt = y + t * y_stride;
  const int64_t s = acts.row_stride;
  switch (n_tokens - t) {
    case 0: break;
    case 1: PanelTile<Codes, 1>(panel, n, n_valid_rows, layout, a, s, yt, y_stride, ahead); break;
    case 2: PanelTile<Codes, 2>(panel, n, n_valid_rows, layout, a, s, yt, y_stride, ahead); break;
    case 3: PanelTile<Codes, 3>(panel, n, n_valid_rows, layout, a, s, yt, y_stride, ahead); break;
    case 4: PanelTile<Codes, 4>(panel, n, n_valid_rows, layout, a, s, yt, y_stride, ahead); break;
    default: PanelTile<Codes, 5>(panel, n, n_valid_rows, layout, a, s, yt, y_stride, ahead); break;
  }
}

constexpr int64_t kPanelMinTokens = 8;
constexpr ActPrep kQuantActs{ActRowBytes, PrepareActRow};

template <typename Codes>
constexpr TypeKernels MakeKernels() {
  return TypeKernels{kQuantActs, 4, Rows<Codes>, kQuantActs, kPanelRows, kPanelMinTokens,
                     PanelBytes<Codes>, PackPanel<Codes>, PanelMatMul<Codes>};
}
constexpr TypeKernels kQ4_1Kernels = MakeKernels<Q4_1Codes>();
constexpr TypeKernels kQ5_0Kernels = MakeKernels<Q5_0Codes>();
constexpr TypeKernels kQ5_1Kernels = MakeKernels<Q5_1Codes>();
constexpr TypeKernels kIQ4_NLKernels = MakeKernels<IQ4_NLCodes>();
constexpr TypeKernels kMXFP4Kernels = MakeKernels<MXFP4Codes>();

}  // namespace

const TypeKernels* Avx512Q32WeightPanelKernels(GgmlType type) { return Avx512Q32Kernels(type); }

const TypeKernels* Avx512Q32Kernels(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_1: return &kQ4_1Kernels;
    case GgmlType::kQ5_0: return &kQ5_0Kernels;
    case GgmlType::kQ5_1: return &kQ5_1Kernels;
    case GgmlType::kIQ4_NL: return &kIQ4_NLKernels;
    case GgmlType::kMXFP4: return &kMXFP4Kernels;
    default: return nullptr;
  }
}

}  // namespace ridge::kernels::internal
