// K-quant MatMul for AVX2 (+ FMA, F16C), Q4_K and Q5_K:
// matmul_kquant_avx512.cc with vpmaddubsw + vpmaddwd in place of vpdpbusd
// (unsigned weights ≤ 31 against int8 activations: pairs ≤ 2·31·127 < 2¹⁵,
// nothing saturates; the high nibble is therefore shifted down rather than
// used in place). Sums of several pairs stay int16 only for Q4_K (codes ≤
// 15). Q6_K, Q3_K, Q2_K and IQ4_XS have their own file (matmul_q6k_avx2.cc);
// this one holds the activation preparation every K-quant kernel of this ISA
// shares, theirs included.
//
// Rows path (decode): activations quantized once per call to int8 blocks of
// 32 with a float scale; each 32-element piece of a super-block is one dot.
//   Q4_K: w = d·sc_s·q − dmin·m_s (q 4-bit, 8 sub-blocks of 32 with 6-bit sc,
//         m): per sub-block the exact Σq·x scaled by (sc·d)·d_x, and the
//         mins against d_x·Σq_x (the order is written at the Q4_K tiles).
//   Q5_K: Q4_K with a fifth bit per code (qh), the same float steps.
// Q4_K, Q5_K: 8 rows in lanes per rows tile and a panel path from 8 tokens on
// (prefill, batched decode), in the AVX-512 file's float order (same bits).
#include "ridge/kernels/simd_avx2.h"

#include <cstring>

#include "ridge/kernels/kquant_rows_impl.h"
#include "ridge/kernels/matmul_isa.h"
#include "ridge/kernels/weight_panels.h"

namespace ridge::kernels::internal {
namespace {

__m256i Dot(__m256i u8, __m256i s8) {  // 8 int32 lanes, each Σ of 4 products
  return _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1));
}

void PrepareActRow(const float* x, int64_t n_cols, uint8_t* dst) {
  const ActLayout layout(n_cols);
  auto* q = reinterpret_cast<int8_t*>(dst);
  auto* d = reinterpret_cast<float*>(dst + layout.d_off);
  auto* dsum = reinterpret_cast<float*>(dst + layout.dsum_off);
  auto* bias = reinterpret_cast<int32_t*>(dst + layout.bias_off);
  auto* gsum = reinterpret_cast<float*>(dst + layout.gsum_off);
  auto* gbias = reinterpret_cast<int32_t*>(dst + layout.gbias_off);
  for (int64_t b = 0; b < layout.n_blocks; ++b) {
    __m256i lane_sums;
    const float scale = avx2::QuantizeBlock32(x + b * kActBlock, q + b * kActBlock, &lane_sums);
    const __m256i lane_bias = _mm256_mullo_epi32(lane_sums, _mm256_set1_epi32(-32));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(bias + b * 8), lane_bias);
    d[b] = scale;
    dsum[b] = scale * static_cast<float>(avx2::HorizontalSumI32(lane_sums));
    StoreGroupSums(lane_sums, scale, gsum + 2 * b, gbias + 2 * b);
  }
}

// ---- Q4_K and Q5_K ------------------------------------------------------------
// The same tiles for both, kQ5 adding the fifth bit of each code (qh bit s
// of byte l: bit 4 of element 32s + l) to the nibble taken.
// The float steps of matmul_kquant_avx512.cc's Q4_K (the same bits): per
// (row, token), one chain over the 32-element sub-blocks s,
//   acc = fma(float(Σ_s q·x), (sc_s·d) · d_x, acc)      Σ exact
//   acc = fnmadd(m_s·dmin, d_x·Σq_x, acc)
// in a rows tile (8 rows in lanes, dots reduced across rows in int16: codes
// ≤ 15; Q5_K's in int32) and in a panel tile (rows in lanes from the start).
constexpr int kQ4KTileRows = 8;

// The codes of sub-block 2k + h of 32 elements from the block's qs bytes
// 32k.. (and for Q5_K its qh bytes), one byte each.
template <bool kQ5>
__m256i Q4KCodes(__m256i qs, __m256i qh, int k, int h) {
  const __m256i nibble = _mm256_and_si256(h == 0 ? qs : _mm256_srli_epi16(qs, 4), _mm256_set1_epi8(0x0f));
  return kQ5 ? _mm256_or_si256(nibble, BitOfBytes(qh, 2 * k + h, 4)) : nibble;
}

// Lane i = Σ of the 32 products of u[i] (codes) and x: Q4_K's partial sums
// fit int16 (SumWordsOf8), Q5_K's pairs go to int32 first.
template <bool kQ5>
__m256i DotsOf8(const __m256i u[8], __m256i x) {
  __m256i dot[8];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) dot[i] = kQ5 ? Dot(u[i], x) : _mm256_maddubs_epi16(u[i], x);
  return kQ5 ? avx2::SumLanesOf8(dot) : avx2::SumWordsOf8(dot);
}

// sc_s·d and m_s·dmin of one row's super-block, sub-blocks in lanes.
void Q4KRowScales(const uint8_t* block, __m256* ws, __m256* wm) {
  __m256 sc, mn;
  Q4KScalesMins(block + 4, &sc, &mn);
  *ws = _mm256_mul_ps(sc, _mm256_set1_ps(F16At(block)));
  *wm = _mm256_mul_ps(mn, _mm256_set1_ps(F16At(block + 2)));
}

// Rows r .. r + 8 (rows past r_end read row r_end - 1 and are not stored).
template <bool kQ5, int kT>
void Q4KRowsTile(const MatView& w, const ActLayout& layout, const ActView& acts, int64_t r, int64_t r_end, float* y,
                 int64_t y_stride) {
  constexpr panels::Q4KFamily kFile = panels::Q4KFamilyOf(kQ5);  // the block's layout
  constexpr int64_t kBlockBytes = kFile.file_block_bytes;
  constexpr int kPrefetchLines = (kQ4KTileRows * kBlockBytes + 63) / 64;
  const int n_valid = static_cast<int>(r_end - r < kQ4KTileRows ? r_end - r : kQ4KTileRows);
  const uint8_t* base = w.data + r * w.row_bytes;
  const uint8_t* ahead = base + kPrefetchTiles * kQ4KTileRows * w.row_bytes;
  int64_t row_offsets[kQ4KTileRows];
  for (int i = 0; i < kQ4KTileRows; ++i) row_offsets[i] = (i < n_valid ? i : n_valid - 1) * w.row_bytes;
  const int64_t n_super = w.n_cols / kQK_K;
  TokenActs tok[kT];
  for (int t = 0; t < kT; ++t) tok[t] = TokenActs(acts.data + t * acts.row_stride, layout);
  __m256 acc[kT];
  for (int t = 0; t < kT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
#pragma GCC unroll 8
    for (int p = 0; p < kPrefetchLines; ++p)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + sb * kQ4KTileRows * kBlockBytes + p * 64), _MM_HINT_T1);
    const uint8_t* blocks = base + sb * kBlockBytes;
    __m256 ws[8], wm[8];  // after the transposes: [s] = the 8 rows' values for sub-block s
    for (int i = 0; i < kQ4KTileRows; ++i) Q4KRowScales(blocks + row_offsets[i], &ws[i], &wm[i]);
    avx2::Transpose8x8(ws);
    avx2::Transpose8x8(wm);
    for (int k = 0; k < 4; ++k) {  // qs bytes 32k..32k+31: sub-blocks 2k (low nibbles) and 2k + 1 (high)
      for (int h = 0; h < 2; ++h) {
        const int s = 2 * k + h;
        __m256i u[kQ4KTileRows];
#pragma GCC unroll 8
        for (int i = 0; i < kQ4KTileRows; ++i) {
          const uint8_t* block = blocks + row_offsets[i];
          const __m256i qs = Load256(block + kFile.file_quant_offset + 32 * k);
          u[i] = Q4KCodes<kQ5>(qs, kQ5 ? Load256(block + kFile.file_high_offset) : qs, k, h);
        }
#pragma GCC unroll 4
        for (int t = 0; t < kT; ++t) {
          const int64_t xb = sb * 8 + s;
          const __m256i sums = DotsOf8<kQ5>(u, Load256(tok[t].q + xb * kActBlock));
          acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums),
                                   _mm256_mul_ps(ws[s], _mm256_set1_ps(tok[t].d[xb])), acc[t]);
          acc[t] = _mm256_fnmadd_ps(wm[s], _mm256_set1_ps(tok[t].dsum[xb]), acc[t]);
        }
      }
    }
  }
  if (n_valid == kQ4KTileRows) {
    for (int t = 0; t < kT; ++t) _mm256_storeu_ps(y + t * y_stride + r, acc[t]);
  } else {
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int t = 0; t < kT; ++t) _mm256_maskstore_ps(y + t * y_stride + r, mask, acc[t]);
  }
}

template <bool kQ5, int kT>
void Q4KRowsForTokens(const MatView& w, const ActView& acts, int64_t r_begin, int64_t r_end, float* y,
                      int64_t y_stride) {
  const ActLayout layout(w.n_cols);
  for (int64_t r = r_begin; r < r_end; r += kQ4KTileRows) Q4KRowsTile<kQ5, kT>(w, layout, acts, r, r_end, y, y_stride);
}

template <bool kQ5>
void Q4KRows(const MatView& w, const ActView& acts, int64_t n_tokens, int64_t r_begin, int64_t r_end, float* y,
             int64_t y_stride) {
  switch (n_tokens) {
    case 1: return Q4KRowsForTokens<kQ5, 1>(w, acts, r_begin, r_end, y, y_stride);
    case 2: return Q4KRowsForTokens<kQ5, 2>(w, acts, r_begin, r_end, y, y_stride);
    case 3: return Q4KRowsForTokens<kQ5, 3>(w, acts, r_begin, r_end, y, y_stride);
    default: return Q4KRowsForTokens<kQ5, 4>(w, acts, r_begin, r_end, y, y_stride);
  }
}

// Q4_K and Q5_K panels, file layout: 16 rows as two halves of 8:
// per half, for each sub-block s and group g of 4 elements, the 8 rows'
// 4 codes a byte each (one register, a row per int32 lane); then sc·d and m·dmin:
//   half h bytes [n_sub][8 groups][8 rows][4]     at h · HalfBytes
//   ws, wm       float [2 halves][n_sub][8 rows]  after both halves' bytes
constexpr int64_t kQ4KPanelRows = 16;
constexpr int64_t kHalfRows = 8;

int64_t Q4KHalfBytes(int64_t n_cols) { return (n_cols / kActBlock) * 8 * kHalfRows * 4; }
int64_t Q4KPanelBytes(int64_t n_cols) { return 2 * Q4KHalfBytes(n_cols) + 4 * (n_cols / kActBlock) * kHalfRows * 4; }

template <bool kQ5>
void Q4KPackPanel(const MatView& w, int64_t r_begin, uint8_t* panel) {
  constexpr panels::Q4KFamily kFile = panels::Q4KFamilyOf(kQ5);  // the block's layout
  constexpr int64_t kBlockBytes = kFile.file_block_bytes;
  const int64_t n_super = w.n_cols / kQK_K, n_sub = w.n_cols / kActBlock;
  auto* ws = reinterpret_cast<float*>(panel + 2 * Q4KHalfBytes(w.n_cols));
  float* wm = ws + 2 * n_sub * kHalfRows;
  for (int64_t h = 0; h < 2; ++h) {
    const int64_t r0 = r_begin + h * kHalfRows;
    uint8_t* bytes = panel + h * Q4KHalfBytes(w.n_cols);
    float* hws = ws + h * n_sub * kHalfRows;
    float* hwm = wm + h * n_sub * kHalfRows;
    if (r0 >= w.n_rows) {  // a half past the matrix: zero weights and scales
      std::memset(bytes, 0, static_cast<size_t>(Q4KHalfBytes(w.n_cols)));
      std::memset(hws, 0, static_cast<size_t>(n_sub * kHalfRows * 4));
      std::memset(hwm, 0, static_cast<size_t>(n_sub * kHalfRows * 4));
      continue;
    }
    const int n_valid = static_cast<int>(w.n_rows - r0 < kHalfRows ? w.n_rows - r0 : kHalfRows);
    const uint8_t* base = w.data + r0 * w.row_bytes;
    int64_t row_offsets[kHalfRows];  // rows past the matrix repeat its last row (their outputs are not stored)
    for (int i = 0; i < kHalfRows; ++i) row_offsets[i] = (i < n_valid ? i : n_valid - 1) * w.row_bytes;
    for (int64_t sb = 0; sb < n_super; ++sb) {
      const uint8_t* blocks = base + sb * kBlockBytes;
      for (int k = 0; k < 4; ++k) {
        __m256i lo[kHalfRows], hi[kHalfRows];
        for (int i = 0; i < kHalfRows; ++i) {
          const uint8_t* block = blocks + row_offsets[i];
          const __m256i qs = Load256(block + kFile.file_quant_offset + 32 * k);
          const __m256i qh = kQ5 ? Load256(block + kFile.file_high_offset) : qs;
          lo[i] = Q4KCodes<kQ5>(qs, qh, k, 0);
          hi[i] = Q4KCodes<kQ5>(qs, qh, k, 1);
        }
        avx2::Transpose8x8(lo);
        avx2::Transpose8x8(hi);
        const int64_t s = sb * 8 + 2 * k;
        for (int g = 0; g < 8; ++g) {
          _mm256_store_si256(reinterpret_cast<__m256i*>(bytes + (s * 8 + g) * kHalfRows * 4), lo[g]);
          _mm256_store_si256(reinterpret_cast<__m256i*>(bytes + ((s + 1) * 8 + g) * kHalfRows * 4), hi[g]);
        }
      }
      __m256 vs[8], vm[8];
      for (int i = 0; i < kHalfRows; ++i) Q4KRowScales(blocks + row_offsets[i], &vs[i], &vm[i]);
      avx2::Transpose8x8(vs);
      avx2::Transpose8x8(vm);
      for (int s = 0; s < 8; ++s) {
        _mm256_store_ps(hws + (sb * 8 + s) * kHalfRows, vs[s]);
        _mm256_store_ps(hwm + (sb * 8 + s) * kHalfRows, vm[s]);
      }
    }
  }
}

// 8 panel rows × kT tokens over all sub-blocks.
template <bool kQ5, int kT>
void Q4KPanelTile(const uint8_t* bytes, const float* ws, const float* wm, int64_t n_sub, const ActLayout& layout,
                  const uint8_t* acts, int64_t act_stride, float* y, int64_t y_stride, int n_valid) {
  TokenActs tok[kT];
  for (int t = 0; t < kT; ++t) tok[t] = TokenActs(acts + t * act_stride, layout);
  const __m256i ones16 = _mm256_set1_epi16(1);
  __m256 acc[kT];
  for (int t = 0; t < kT; ++t) acc[t] = _mm256_setzero_ps();
  const uint8_t* p = bytes;
  for (int64_t s = 0; s < n_sub; ++s) {
    // Exact int16 pair sums over runs of groups, to int32 after each: Q4_K's
    // 8 groups (≤ 8·2·15·127 < 2¹⁵), Q5_K's 4 (≤ 4·2·31·127 < 2¹⁵).
    constexpr int kRunGroups = kQ5 ? 4 : 8;
    __m256i dot[kT];
    for (int t = 0; t < kT; ++t) dot[t] = _mm256_setzero_si256();
#pragma GCC unroll 2
    for (int g0 = 0; g0 < 8; g0 += kRunGroups) {
      __m256i dot16[kT];
      for (int t = 0; t < kT; ++t) dot16[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int g = g0; g < g0 + kRunGroups; ++g, p += kHalfRows * 4) {
        const __m256i wv = _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
#pragma GCC unroll 8
        for (int t = 0; t < kT; ++t) {
          int32_t x4;
          std::memcpy(&x4, tok[t].q + s * kActBlock + g * 4, 4);
          dot16[t] = _mm256_add_epi16(dot16[t], _mm256_maddubs_epi16(wv, _mm256_set1_epi32(x4)));
        }
      }
      for (int t = 0; t < kT; ++t) dot[t] = _mm256_add_epi32(dot[t], _mm256_madd_epi16(dot16[t], ones16));
    }
    const __m256 vs = _mm256_load_ps(ws + s * kHalfRows), vm = _mm256_load_ps(wm + s * kHalfRows);
#pragma GCC unroll 8
    for (int t = 0; t < kT; ++t) {
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot[t]), _mm256_mul_ps(vs, _mm256_set1_ps(tok[t].d[s])), acc[t]);
      acc[t] = _mm256_fnmadd_ps(vm, _mm256_set1_ps(tok[t].dsum[s]), acc[t]);
    }
  }
  if (n_valid >= kHalfRows) {
    for (int t = 0; t < kT; ++t) _mm256_storeu_ps(y + t * y_stride, acc[t]);
  } else {
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    for (int t = 0; t < kT; ++t) _mm256_maskstore_ps(y + t * y_stride, mask, acc[t]);
  }
}

template <bool kQ5>
void Q4KPanelMatMul(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts,
                    int64_t n_tokens, float* y, int64_t y_stride, const PanelPrefetch& /*next*/) {
  const ActLayout layout(n_cols);
  const int64_t n_sub = n_cols / kActBlock;
  const auto* ws = reinterpret_cast<const float*>(panel + 2 * Q4KHalfBytes(n_cols));
  const float* wm = ws + 2 * n_sub * kHalfRows;
  constexpr int kT = 4;
  for (int64_t h = 0; h < 2; ++h) {
    const int n_valid = static_cast<int>(n_valid_rows - h * kHalfRows);
    if (n_valid <= 0) break;
    const uint8_t* bytes = panel + h * Q4KHalfBytes(n_cols);
    const float* hws = ws + h * n_sub * kHalfRows;
    const float* hwm = wm + h * n_sub * kHalfRows;
    float* yh = y + h * kHalfRows;
    int64_t t = 0;
    for (; t + kT <= n_tokens; t += kT)
      Q4KPanelTile<kQ5, kT>(bytes, hws, hwm, n_sub, layout, acts.data + t * acts.row_stride, acts.row_stride,
                       yh + t * y_stride, y_stride, n_valid);
    const uint8_t* a = acts.data + t * acts.row_stride;
    float* yt = yh + t * y_stride;
    switch (n_tokens - t) {
      case 0: break;
      case 1: Q4KPanelTile<kQ5, 1>(bytes, hws, hwm, n_sub, layout, a, acts.row_stride, yt, y_stride, n_valid); break;
      case 2: Q4KPanelTile<kQ5, 2>(bytes, hws, hwm, n_sub, layout, a, acts.row_stride, yt, y_stride, n_valid); break;
      default: Q4KPanelTile<kQ5, 3>(bytes, hws, hwm, n_sub, layout, a, acts.row_stride, yt, y_stride, n_valid); break;
    }
  }
}

constexpr ActPrep kQuantActs{ActRowBytes, PrepareActRow};
template <bool kQ5>
constexpr TypeKernels kQ4KKernels{kQuantActs,    4, Q4KRows<kQ5>,       kQuantActs,         kQ4KPanelRows,
                                  8,             Q4KPanelBytes, Q4KPackPanel<kQ5>, Q4KPanelMatMul<kQ5>};

}  // namespace

ActPrep Avx2KQuantActPrep() { return kQuantActs; }

const TypeKernels* Avx2KQuantKernels(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_K: return &kQ4KKernels<false>;
    case GgmlType::kQ5_K: return &kQ4KKernels<true>;
    case GgmlType::kQ6_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ2_K:
    case GgmlType::kIQ4_XS: return Avx2Q6KKernels(type, /*repacked=*/false);
    default: return nullptr;
  }
}

}  // namespace ridge::kernels::internal
