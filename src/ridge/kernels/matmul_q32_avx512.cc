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
// whatever the other tokens of the call (batch invariance). Prefill (from 8
// tokens) packs 32 rows into a panel of unpacked codes, scales and minimums
// and runs the same integer sums and float steps against every token (as the
// Q8_0/Q4_0 panels in matmul_quant_avx512.cc), so a token's results are the
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
__m256i FiveBitCodes(const uint8_t* qh, const uint8_t* packed) {
  uint32_t high;
  std::memcpy(&high, qh, 4);
  const __m256i low = Nibbles(packed);
  return _mm256_mask_add_epi8(low, static_cast<__mmask32>(high), low, _mm256_set1_epi8(16));
}

// 2^(e − 128) for an E8M0 byte (MXFP4's scale), exactly as the scalar
// E8M0Half: the float whose exponent field is e − 1, or for e = 0, 1 the
// subnormals 2^-128 and 2^-127.
float E8M0Half(uint8_t e) {
  const uint32_t bits = e >= 2 ? static_cast<uint32_t>(e - 1) << 23 : 0x00200000u << e;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// The same for the bytes at base + offsets[i], in lanes 0..7.
__m256 E8M0HalfOf8(const uint8_t* base, const int64_t offsets[8]) {
  const __m256i e = _mm256_setr_epi32(base[offsets[0]], base[offsets[1]], base[offsets[2]], base[offsets[3]],
                                      base[offsets[4]], base[offsets[5]], base[offsets[6]], base[offsets[7]]);
  const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
  const __m256i subnormal = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
  const __mmask8 small = _mm256_cmplt_epi32_mask(e, _mm256_set1_epi32(2));
  return _mm256_castsi256_ps(_mm256_mask_blend_epi32(small, normal, subnormal));
}

// Per type: where a block keeps its fields, and its codes as unsigned bytes
// (InOrder: the codes themselves; Unsigned, for the rows path: the high half
// of the bytes may hold 2^kHighShift × its codes, taken in place, one
// instruction fewer); kBiasFactor: the offset of u from
// the signed weight code (Σ(u + k)·q = Σu·q + k·Σq); kHasMin: w = d·u + m;
// kE8M0Scale: the scale is MXFP4's exponent byte, not an f16.
struct Q4_1Codes {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ4_1);
  static constexpr int kHighShift = 4, kBiasFactor = 0;
  static constexpr bool kHasMin = true, kE8M0Scale = false, kWeightPanels = false;
  static __m256i Unsigned(const uint8_t* block) {
    const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 4)));
    return _mm256_and_si256(both, _mm256_setr_m128i(_mm_set1_epi8(0x0f), _mm_set1_epi8(static_cast<char>(0xf0))));
  }
  static __m256i InOrder(const uint8_t* block) { return Nibbles(block + 4); }
};

struct Q5_0Codes {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ5_0);
  static constexpr int kHighShift = 0, kBiasFactor = -16;
  static constexpr bool kHasMin = false, kE8M0Scale = false, kWeightPanels = false;
  static __m256i Unsigned(const uint8_t* block) { return FiveBitCodes(block + 2, block + 6); }
  static __m256i InOrder(const uint8_t* block) { return Unsigned(block); }
};

struct Q5_1Codes {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ5_1);
  static constexpr int kHighShift = 0, kBiasFactor = 0;
  static constexpr bool kHasMin = true, kE8M0Scale = false, kWeightPanels = false;
  static __m256i Unsigned(const uint8_t* block) { return FiveBitCodes(block + 4, block + 8); }
  static __m256i InOrder(const uint8_t* block) { return Unsigned(block); }
};

struct IQ4_NLCodes {
  static constexpr int64_t kBlockBytes = sizeof(BlockIQ4_NL);
  static constexpr int kHighShift = 0, kBiasFactor = -128;
  static constexpr bool kHasMin = false, kE8M0Scale = false, kWeightPanels = true;
  static constexpr panels::Format kPanelFormat = panels::kIQ4_NL;
  static constexpr const int8_t* kLevels = kIq4NlLevels;
  static __m256i Unsigned(const uint8_t* block) {
    // The levels + 128 (1..241: the sign bit flipped), in both 128-bit lanes for vpshufb.
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4NlLevels)));
    const __m256i table = _mm256_xor_si256(levels, _mm256_set1_epi8(static_cast<char>(0x80)));
    return _mm256_shuffle_epi8(table, Nibbles(block + 2));
  }
  static __m256i InOrder(const uint8_t* block) { return Unsigned(block); }
};

struct MXFP4Codes {
  static constexpr int64_t kBlockBytes = sizeof(BlockMXFP4);
  static constexpr int kHighShift = 0, kBiasFactor = -128;
  static constexpr bool kHasMin = false, kE8M0Scale = true, kWeightPanels = true;
  static constexpr panels::Format kPanelFormat = panels::kMXFP4;
  static constexpr const int8_t* kLevels = kMxfp4Levels;
  static __m256i Unsigned(const uint8_t* block) {
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Levels)));
    const __m256i table = _mm256_xor_si256(levels, _mm256_set1_epi8(static_cast<char>(0x80)));
    return _mm256_shuffle_epi8(table, Nibbles(block + 1));
  }
  static __m256i InOrder(const uint8_t* block) { return Unsigned(block); }
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

// ---- panels (prefill) ----------------------------------------------------
// A panel holds 32 rows (two zmm of 16 rows). For each block b and each
// group g of 4 elements (8 groups per block), 32 rows × 4 unsigned codes:
//   codes  uint8 [n_blocks][8 groups][32 rows][4]
//   scales float [n_blocks][32 rows]   (the rows' block scales; 0 for padding)
//   mins   float [n_blocks][32 rows]   (Q4_1 / Q5_1 only)
constexpr int64_t kPanelRows = 32;

template <typename Codes>
int64_t PanelBytes(int64_t n_cols) {
  const int64_t n_blocks = n_cols / kBlock;
  if constexpr (Codes::kWeightPanels) return n_blocks * Codes::kPanelFormat.block_bytes();
  return n_blocks * 8 * kPanelRows * 4 + (Codes::kHasMin ? 2 : 1) * n_blocks * kPanelRows * 4;
}

float F16At(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// IQ4_NL and MXFP4: the weight panels of weight_panels.h (codes still packed,
// scales as in the file), as repacked at load.
template <typename Codes>
void PackWeightPanel(const MatView& w, int64_t r_begin, uint8_t* panel) {
  constexpr panels::Format kFormat = Codes::kPanelFormat;
  static_assert(kFormat.file_block_bytes == Codes::kBlockBytes);
  const int64_t n_blocks = w.n_cols / kBlock;
  avx512::PackPanelQuants<4>(w.data, w.n_rows, w.row_bytes, r_begin, n_blocks, kFormat.file_block_bytes,
                             kFormat.scale_bytes, 0, kFormat.block_bytes(), panel);
  // Rows past the matrix repeat its last row's scales: their outputs are never stored.
  for (int64_t j = 0; j < kPanelRows; ++j) {
    const uint8_t* row = w.data + std::min(r_begin + j, w.n_rows - 1) * w.row_bytes;
    for (int64_t b = 0; b < n_blocks; ++b)
      std::memcpy(panel + b * kFormat.block_bytes() + kFormat.quant_bytes + j * kFormat.scale_bytes,
                  row + b * kFormat.file_block_bytes, kFormat.scale_bytes);
  }
}

template <typename Codes>
void PackPanel(const MatView& w, int64_t r_begin, uint8_t* panel) {
  if constexpr (Codes::kWeightPanels) return PackWeightPanel<Codes>(w, r_begin, panel);
  const int64_t n_blocks = w.n_cols / kBlock;
  constexpr int64_t kBlockBytes = Codes::kBlockBytes;
  auto* scales = reinterpret_cast<float*>(panel + n_blocks * 8 * kPanelRows * 4);
  float* mins = scales + n_blocks * kPanelRows;
  // Two blocks of 16 rows at a time: 16 rows × 16 four-byte groups, transposed
  // so that each register holds one group of the 16 rows.
  for (int64_t half = 0; half < 2; ++half) {
    const int64_t r0 = r_begin + half * 16;
    const uint8_t* rows[16];
    for (int i = 0; i < 16; ++i) rows[i] = r0 + i < w.n_rows ? w.data + (r0 + i) * w.row_bytes : nullptr;
    for (int64_t b = 0; b < n_blocks; b += 2) {
      const bool pair = b + 1 < n_blocks;
      __m512 v[16];
      for (int i = 0; i < 16; ++i) {
        if (rows[i] == nullptr) {
          v[i] = _mm512_setzero_ps();
          continue;
        }
        const __m256i lo = Codes::InOrder(rows[i] + b * kBlockBytes);
        const __m256i hi = pair ? Codes::InOrder(rows[i] + (b + 1) * kBlockBytes) : _mm256_setzero_si256();
        v[i] = _mm512_castsi512_ps(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
      }
      avx512::Transpose16x16(v);
      for (int g = 0; g < (pair ? 16 : 8); ++g)
        _mm512_store_ps(reinterpret_cast<float*>(panel + ((b * 8 + g) * kPanelRows + half * 16) * 4), v[g]);
    }
  }
  for (int64_t j = 0; j < kPanelRows; ++j) {
    const int64_t r = r_begin + j;
    const uint8_t* row = r < w.n_rows ? w.data + r * w.row_bytes : nullptr;
    for (int64_t b = 0; b < n_blocks; ++b) {
      float scale = 0.0f;
      if (row) scale = Codes::kE8M0Scale ? E8M0Half(row[b * kBlockBytes]) : F16At(row + b * kBlockBytes);
      scales[b * kPanelRows + j] = scale;
      if constexpr (Codes::kHasMin) mins[b * kPanelRows + j] = row ? F16At(row + b * kBlockBytes + 2) : 0.0f;
    }
  }
}

// 32 panel rows × kT tokens. Integer accumulators per block start at the
// block's offset k·Σq_x and take 8 vpdpbusd (one per 4-element group,
// activation bytes broadcast); then the rows path's float steps.
template <typename Codes, int kT>
void PanelTile(const uint8_t* panel, int64_t n_blocks, int64_t n_valid_rows, const ActLayout& layout,
               const uint8_t* acts, int64_t act_stride, float* y, int64_t y_stride) {
  const auto* scales = reinterpret_cast<const float*>(panel + n_blocks * 8 * kPanelRows * 4);
  const float* mins = scales + n_blocks * kPanelRows;
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
  const uint8_t* p = panel;
  for (int64_t b = 0; b < n_blocks; ++b) {
    __m512i dot0[kT], dot1[kT];
    for (int t = 0; t < kT; ++t) dot0[t] = dot1[t] = _mm512_set1_epi32(Codes::kBiasFactor * xqsum[t][b]);
#pragma GCC unroll 8
    for (int g = 0; g < 8; ++g, p += kPanelRows * 4) {
      const __m512i w0 = _mm512_load_si512(p);
      const __m512i w1 = _mm512_load_si512(p + 64);
#pragma GCC unroll 8
      for (int t = 0; t < kT; ++t) {
        int32_t x4;
        std::memcpy(&x4, xq[t] + b * kBlock + g * 4, 4);
        const __m512i xb = _mm512_set1_epi32(x4);
        dot0[t] = _mm512_dpbusd_epi32(dot0[t], w0, xb);
        dot1[t] = _mm512_dpbusd_epi32(dot1[t], w1, xb);
      }
    }
    const __m512 s0 = _mm512_load_ps(scales + b * kPanelRows);
    const __m512 s1 = _mm512_load_ps(scales + b * kPanelRows + 16);
    avx512::PanelScaleBlock<kT>(s0, s1, xd, b, dot0, dot1, acc0, acc1);
    if constexpr (Codes::kHasMin) {
      const __m512 m0 = _mm512_load_ps(mins + b * kPanelRows);
      const __m512 m1 = _mm512_load_ps(mins + b * kPanelRows + 16);
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

// 2^(e − 128) for 16 E8M0 bytes, as E8M0Half.
__m512 E8M0HalfOf16(const uint8_t* bytes) {
  const __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes)));
  const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
  const __m512i subnormal = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
  const __mmask16 small = _mm512_cmplt_epi32_mask(e, _mm512_set1_epi32(2));
  return _mm512_castsi512_ps(_mm512_mask_blend_epi32(small, normal, subnormal));
}

// The same sums and float steps as PanelTile, on a weight panel: each 64-byte
// load gives two groups of 16 rows' codes (low and high nibbles), looked up
// into levels + 128 by one vpshufb each.
template <typename Codes, int kT>
void WeightPanelTile(const uint8_t* panel, int64_t n_blocks, int64_t n_valid_rows, const ActLayout& layout,
                     const uint8_t* acts, int64_t act_stride, float* y, int64_t y_stride, int64_t stream_ahead) {
  constexpr panels::Format kFormat = Codes::kPanelFormat;
  const int8_t* xq[kT];
  const float* xd[kT];
  const int32_t* xqsum[kT];
  for (int t = 0; t < kT; ++t) {
    const uint8_t* a = acts + t * act_stride;
    xq[t] = reinterpret_cast<const int8_t*>(a);
    xd[t] = reinterpret_cast<const float*>(a + layout.d_off);
    xqsum[t] = reinterpret_cast<const int32_t*>(a + layout.qsum_off);
  }
  const __m512i table = _mm512_xor_si512(
      _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(Codes::kLevels))),
      _mm512_set1_epi8(static_cast<char>(0x80)));
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  __m512 acc0[kT], acc1[kT];
  for (int t = 0; t < kT; ++t) acc0[t] = acc1[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* p = panel + b * kFormat.block_bytes();
    if (stream_ahead > 0) {  // weights repacked at load stream from memory (see matmul_quant_avx512.cc)
      constexpr int64_t kBlockBytes = kFormat.block_bytes();
#pragma GCC unroll 9
      for (int64_t line = 0; line < kBlockBytes; line += 64)
        _mm_prefetch(reinterpret_cast<const char*>(p + stream_ahead + line), _MM_HINT_T0);
    }
    __m512i dot0[kT], dot1[kT];
    for (int t = 0; t < kT; ++t) dot0[t] = dot1[t] = _mm512_set1_epi32(Codes::kBiasFactor * xqsum[t][b]);
    auto group = [&](__m512i w0, __m512i w1, int element) {
      avx512::PanelGroupDots<kT>(w0, w1, xq, b * kBlock + element, dot0, dot1);
    };
#pragma GCC unroll 4
    for (int g = 0; g < 4; ++g) {
      const __m512i w0 = _mm512_loadu_si512(p + g * kPanelRows * 4);
      const __m512i w1 = _mm512_loadu_si512(p + g * kPanelRows * 4 + 64);
      group(_mm512_shuffle_epi8(table, _mm512_and_si512(w0, low4)),
            _mm512_shuffle_epi8(table, _mm512_and_si512(w1, low4)), 4 * g);
      group(_mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(w0, 4), low4)),
            _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(w1, 4), low4)), 16 + 4 * g);
    }
    const uint8_t* scales = p + kFormat.quant_bytes;
    __m512 s0, s1;
    if constexpr (Codes::kE8M0Scale) {
      s0 = E8M0HalfOf16(scales);
      s1 = E8M0HalfOf16(scales + 16);
    } else {
      s0 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales)));
      s1 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + 32)));
    }
    avx512::PanelScaleBlock<kT>(s0, s1, xd, b, dot0, dot1, acc0, acc1);
  }
  avx512::StorePanelTile<kT>(acc0, acc1, n_valid_rows, y, y_stride);
}

template <typename Codes, int kT>
void AnyPanelTile(const uint8_t* panel, int64_t n_blocks, int64_t n_valid_rows, const ActLayout& layout,
                  const uint8_t* acts, int64_t act_stride, float* y, int64_t y_stride, int64_t stream_ahead) {
  if constexpr (Codes::kWeightPanels) {
    WeightPanelTile<Codes, kT>(panel, n_blocks, n_valid_rows, layout, acts, act_stride, y, y_stride, stream_ahead);
  } else {
    PanelTile<Codes, kT>(panel, n_blocks, n_valid_rows, layout, acts, act_stride, y, y_stride);  // never repacked
  }
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
    AnyPanelTile<Codes, kT>(panel, n, n_valid_rows, layout, acts.data + t * acts.row_stride, acts.row_stride,
                            y + t * y_stride, y_stride, ahead);
  const uint8_t* a = acts.data + t * acts.row_stride;
  float* yt = y + t * y_stride;
  const int64_t s = acts.row_stride;
  switch (n_tokens - t) {
    case 0: break;
    case 1: AnyPanelTile<Codes, 1>(panel, n, n_valid_rows, layout, a, s, yt, y_stride, ahead); break;
    case 2: AnyPanelTile<Codes, 2>(panel, n, n_valid_rows, layout, a, s, yt, y_stride, ahead); break;
    case 3: AnyPanelTile<Codes, 3>(panel, n, n_valid_rows, layout, a, s, yt, y_stride, ahead); break;
    case 4: AnyPanelTile<Codes, 4>(panel, n, n_valid_rows, layout, a, s, yt, y_stride, ahead); break;
    default: AnyPanelTile<Codes, 5>(panel, n, n_valid_rows, layout, a, s, yt, y_stride, ahead); break;
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

const TypeKernels* Avx512Q32WeightPanelKernels(GgmlType type) {
  switch (type) {
    case GgmlType::kIQ4_NL: return &kIQ4_NLKernels;
    case GgmlType::kMXFP4: return &kMXFP4Kernels;
    default: return nullptr;
  }
}

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
