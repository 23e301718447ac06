// K-quant MatMul for AVX-512 (VNNI): Q4_K and Q5_K here, and the activation
// preparation every K-quant kernel of this ISA shares (that of Q6_K, Q3_K,
// Q2_K and IQ4_XS included: matmul_q6k_avx512.cc).
//
// Rows path (decode): activations quantized once per call to int8 blocks of
// 32 with a float scale (as for Q8_0/Q4_0); each 32-element piece of a
// super-block is one vpdpbusd of unsigned weights against them.
//   Q4_K: w = d·sc_s·q − dmin·m_s (q 4-bit, 8 sub-blocks of 32 with 6-bit sc,
//         m): per sub-block the exact Σq·x scaled by (sc·d)·d_x, and the
//         mins against d_x·Σq_x (the order is written at the Q4_K tiles).
//   Q5_K: Q4_K with a fifth bit per code (qh), the same float steps.
// Q4_K and Q5_K in the file's layout (--mmap): 8 rows in lanes per rows tile
// and a panel path from 8 tokens on (prefill, batched decode), see below;
// repacked at load (the default) they run matmul_q4k_panels_avx512.cc. The
// others run the rows path for every batch, 4 tokens per pass.
#include <algorithm>
#include <cstring>

#include "ridge/kernels/matmul_isa.h"
#include "ridge/kernels/weight_panels.h"
#include "ridge/kernels/simd_avx512.h"
// After simd_avx512.h (the intrinsics).
#include "ridge/kernels/kquant_rows_impl.h"

namespace ridge::kernels::internal {
namespace {

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
    const float scale = avx512::QuantizeBlock32(x + b * kActBlock, q + b * kActBlock, &lane_sums);
    const __m256i lane_bias = _mm256_mullo_epi32(lane_sums, _mm256_set1_epi32(-32));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(bias + b * 8), lane_bias);
    d[b] = scale;
    dsum[b] = scale * static_cast<float>(avx512::HorizontalSumI32(lane_sums));
    StoreGroupSums(lane_sums, scale, gsum + 2 * b, gbias + 2 * b);
  }
}

// ---- Q4_K and Q5_K ------------------------------------------------------------
// The same tiles for both, kQ5 adding the fifth bit of each code (qh bit s
// of byte l: bit 4 of element 32s + l) to the nibble taken.
// Per (row, token), one float chain over the 32-element sub-blocks s, in the
// order of the elements, whatever path or tile:
//   acc = fma(float(Σ_s q·x), (sc_s·d) · d_x, acc)      Σ exact (int32)
//   acc = fnmadd(m_s·dmin, d_x·Σq_x, acc)
// so the rows tile (8 rows in lanes, block sums reduced across rows) and the
// panel tile (rows in lanes from the start) give the same bits.
constexpr int kQ4KRowsPerTile = 8;

// The codes of sub-block 2k + h of 32 elements from the block's qs bytes
// 32k.. (and for Q5_K its qh bytes; Q4_K ignores qh), one byte each, their
// values.
template <bool kQ5>
__m256i Q4KCodeValues(__m256i qs, __m256i qh, int k, int h) {
  const __m256i nibble = _mm256_and_si256(h == 0 ? qs : _mm256_srli_epi16(qs, 4), _mm256_set1_epi8(0x0f));
  return kQ5 ? _mm256_or_si256(nibble, BitOfBytes(qh, 2 * k + h, 4)) : nibble;
}

// As Q4KCodeValues, but Q4_K's high nibbles left in place (16 × their value:
// the tile shifts the sum down by 4), one op fewer.
template <bool kQ5>
__m256i Q4KCodes(__m256i qs, __m256i qh, int k, int h) {
  if (kQ5 || h == 0) return Q4KCodeValues<kQ5>(qs, qh, k, h);
  return _mm256_and_si256(qs, _mm256_set1_epi8(static_cast<char>(0xf0)));
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
  constexpr int kPrefetchLines = (kQ4KRowsPerTile * kBlockBytes + 63) / 64;
  const int n_valid = static_cast<int>(r_end - r < kQ4KRowsPerTile ? r_end - r : kQ4KRowsPerTile);
  const uint8_t* base = w.data + r * w.row_bytes;
  const uint8_t* ahead = base + kPrefetchTiles * kQ4KRowsPerTile * w.row_bytes;
  int64_t row_offsets[kQ4KRowsPerTile];
  for (int i = 0; i < kQ4KRowsPerTile; ++i) row_offsets[i] = (i < n_valid ? i : n_valid - 1) * w.row_bytes;
  const int64_t n_super = w.n_cols / kQK_K;
  TokenActs tok[kT];
  for (int t = 0; t < kT; ++t) tok[t] = TokenActs(acts.data + t * acts.row_stride, layout);
  __m256 acc[kT];
  for (int t = 0; t < kT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
#pragma GCC unroll 8
    for (int p = 0; p < kPrefetchLines; ++p)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + sb * kQ4KRowsPerTile * kBlockBytes + p * 64), _MM_HINT_T1);
    const uint8_t* blocks = base + sb * kBlockBytes;
    __m256i qh[kQ4KRowsPerTile];
    for (int i = 0; i < kQ4KRowsPerTile; ++i)
      qh[i] = kQ5 ? Load256(blocks + row_offsets[i] + kFile.file_high_offset) : _mm256_setzero_si256();
    __m256 ws[8], wm[8];  // after the transposes: [s] = the 8 rows' values for sub-block s
    for (int i = 0; i < kQ4KRowsPerTile; ++i) Q4KRowScales(blocks + row_offsets[i], &ws[i], &wm[i]);
    avx512::Transpose8x8(ws);
    avx512::Transpose8x8(wm);
    for (int k = 0; k < 4; ++k) {  // qs bytes 32k..32k+31: sub-blocks 2k (low nibbles) and 2k + 1 (high)
      __m256i qs[kQ4KRowsPerTile];
#pragma GCC unroll 8
      for (int i = 0; i < kQ4KRowsPerTile; ++i)
        qs[i] = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(blocks + row_offsets[i] + kFile.file_quant_offset + 32 * k));
#pragma GCC unroll 2
      for (int h = 0; h < 2; ++h) {
        const int s = 2 * k + h;
        __m256i u[kQ4KRowsPerTile];
#pragma GCC unroll 8
        for (int i = 0; i < kQ4KRowsPerTile; ++i) u[i] = Q4KCodes<kQ5>(qs[i], qh[i], k, h);
#pragma GCC unroll 4
        for (int t = 0; t < kT; ++t) {
          const int64_t xb = sb * 8 + s;
          const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(tok[t].q + xb * kActBlock));
          __m256i dot[kQ4KRowsPerTile];
#pragma GCC unroll 8
          for (int i = 0; i < kQ4KRowsPerTile; ++i) dot[i] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), u[i], xv);
          // Q4_K's high nibbles in place are 16 × their value: shifted back after the sum (exact).
          __m256i sums = avx512::SumLanesOf8<0>(dot);
          if (!kQ5 && h == 1) sums = _mm256_srai_epi32(sums, 4);
          acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums),
                                   _mm256_mul_ps(ws[s], _mm256_set1_ps(tok[t].d[xb])), acc[t]);
          acc[t] = _mm256_fnmadd_ps(wm[s], _mm256_set1_ps(tok[t].dsum[xb]), acc[t]);
        }
      }
    }
  }
  const __mmask8 valid = static_cast<__mmask8>((1u << n_valid) - 1);
  for (int t = 0; t < kT; ++t) _mm256_mask_storeu_ps(y + t * y_stride + r, valid, acc[t]);
}

template <bool kQ5, int kT>
void Q4KRowsForTokens(const MatView& w, const ActView& acts, int64_t r_begin, int64_t r_end, float* y,
                      int64_t y_stride) {
  const ActLayout layout(w.n_cols);
  for (int64_t r = r_begin; r < r_end; r += kQ4KRowsPerTile)
    Q4KRowsTile<kQ5, kT>(w, layout, acts, r, r_end, y, y_stride);
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

// Q4_K and Q5_K panels, file layout (prefill, batched decode): 32 rows (two
// zmm of 16), as the Q8_0/Q4_0 panels (matmul_quant_avx512.cc): for each
// sub-block s and group g of 4 elements, 32 rows × 4 codes a byte each (a
// nibble; Q5_K's with its fifth bit); then the rows' sc·d and m·dmin:
//   bytes [n_sub][8 groups][32 rows][4]
//   ws    float [n_sub][32 rows]   (0 for padding rows)
//   wm    float [n_sub][32 rows]
constexpr int64_t kQ4KPanelRows = 32;

int64_t Q4KPanelBytes(int64_t n_cols) {
  const int64_t n_sub = n_cols / kActBlock;
  return n_sub * 8 * kQ4KPanelRows * 4 + 2 * n_sub * kQ4KPanelRows * 4;
}

template <bool kQ5>
void Q4KPackPanel(const MatView& w, int64_t r_begin, uint8_t* panel) {
  constexpr panels::Q4KFamily kFile = panels::Q4KFamilyOf(kQ5);  // the block's layout
  constexpr int64_t kBlockBytes = kFile.file_block_bytes;
  const int64_t n_super = w.n_cols / kQK_K, n_sub = w.n_cols / kActBlock;
  auto* ws = reinterpret_cast<float*>(panel + n_sub * 8 * kQ4KPanelRows * 4);
  float* wm = ws + n_sub * kQ4KPanelRows;
  for (int64_t half = 0; half < 2; ++half) {
    const int64_t r0 = r_begin + half * 16;
    const uint8_t* rows[16];
    for (int i = 0; i < 16; ++i) rows[i] = r0 + i < w.n_rows ? w.data + (r0 + i) * w.row_bytes : nullptr;
    for (int64_t sb = 0; sb < n_super; ++sb) {
      for (int k = 0; k < 4; ++k) {  // sub-blocks 2k and 2k + 1 of 16 rows
        __m512 v[16];
        for (int i = 0; i < 16; ++i) {
          if (rows[i] == nullptr) {
            v[i] = _mm512_setzero_ps();
            continue;
          }
          const uint8_t* block = rows[i] + sb * kBlockBytes;
          const __m256i qs =
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + kFile.file_quant_offset + 32 * k));
          const __m256i qh = kQ5 ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + kFile.file_high_offset))
                                 : _mm256_setzero_si256();
          const __m256i lo = Q4KCodeValues<kQ5>(qs, qh, k, 0), hi = Q4KCodeValues<kQ5>(qs, qh, k, 1);
          v[i] = _mm512_castsi512_ps(_mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
        }
        avx512::Transpose16x16(v);
        const int64_t s = sb * 8 + 2 * k;
        for (int g = 0; g < 16; ++g)
          _mm512_store_ps(reinterpret_cast<float*>(panel + ((s * 8 + g) * kQ4KPanelRows + half * 16) * 4), v[g]);
      }
    }
  }
  // The scales, 8 rows at a time: each row's 8 sub-block values in lanes,
  // transposed to the 8 rows' values of each sub-block. Rows past the matrix
  // repeat its last row (their outputs are never stored).
  for (int64_t j0 = 0; j0 < kQ4KPanelRows; j0 += 8) {
    const int64_t n_valid = std::min<int64_t>(8, w.n_rows - (r_begin + j0));
    for (int64_t sb = 0; sb < n_super; ++sb) {
      __m256 vs[8], vm[8];
      if (n_valid <= 0) {
        for (int i = 0; i < 8; ++i) vs[i] = vm[i] = _mm256_setzero_ps();
      } else {
        for (int i = 0; i < 8; ++i)
          Q4KRowScales(w.data + (r_begin + j0 + (i < n_valid ? i : n_valid - 1)) * w.row_bytes + sb * kBlockBytes,
                       &vs[i], &vm[i]);
        avx512::Transpose8x8(vs);
        avx512::Transpose8x8(vm);
      }
      for (int s = 0; s < 8; ++s) {
        _mm256_store_ps(ws + (sb * 8 + s) * kQ4KPanelRows + j0, vs[s]);
        _mm256_store_ps(wm + (sb * 8 + s) * kQ4KPanelRows + j0, vm[s]);
      }
    }
  }
}

// 32 panel rows × kT tokens.
template <int kT>
void Q4KPanelTile(const uint8_t* panel, int64_t n_sub, int64_t n_valid_rows, const ActLayout& layout,
                  const uint8_t* acts, int64_t act_stride, float* y, int64_t y_stride) {
  const auto* ws = reinterpret_cast<const float*>(panel + n_sub * 8 * kQ4KPanelRows * 4);
  const float* wm = ws + n_sub * kQ4KPanelRows;
  TokenActs tok[kT];
  for (int t = 0; t < kT; ++t) tok[t] = TokenActs(acts + t * act_stride, layout);
  __m512 acc0[kT], acc1[kT];
  for (int t = 0; t < kT; ++t) acc0[t] = acc1[t] = _mm512_setzero_ps();
  const uint8_t* p = panel;
  for (int64_t s = 0; s < n_sub; ++s) {
    __m512i dot0[kT], dot1[kT];
    for (int t = 0; t < kT; ++t) dot0[t] = dot1[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int g = 0; g < 8; ++g, p += kQ4KPanelRows * 4) {
      const __m512i w0 = _mm512_load_si512(p);
      const __m512i w1 = _mm512_load_si512(p + 64);
#pragma GCC unroll 8
      for (int t = 0; t < kT; ++t) {
        int32_t x4;
        std::memcpy(&x4, tok[t].q + s * kActBlock + g * 4, 4);
        const __m512i xb = _mm512_set1_epi32(x4);
        dot0[t] = _mm512_dpbusd_epi32(dot0[t], w0, xb);
        dot1[t] = _mm512_dpbusd_epi32(dot1[t], w1, xb);
      }
    }
    const __m512 s0 = _mm512_load_ps(ws + s * kQ4KPanelRows), s1 = _mm512_load_ps(ws + s * kQ4KPanelRows + 16);
    const __m512 m0 = _mm512_load_ps(wm + s * kQ4KPanelRows), m1 = _mm512_load_ps(wm + s * kQ4KPanelRows + 16);
#pragma GCC unroll 8
    for (int t = 0; t < kT; ++t) {
      const __m512 dx = _mm512_set1_ps(tok[t].d[s]), dsum = _mm512_set1_ps(tok[t].dsum[s]);
      acc0[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot0[t]), _mm512_mul_ps(s0, dx), acc0[t]);
      acc1[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot1[t]), _mm512_mul_ps(s1, dx), acc1[t]);
      acc0[t] = _mm512_fnmadd_ps(m0, dsum, acc0[t]);
      acc1[t] = _mm512_fnmadd_ps(m1, dsum, acc1[t]);
    }
  }
  const __mmask16 k0 = n_valid_rows >= 16 ? __mmask16(0xffff) : __mmask16((1u << n_valid_rows) - 1);
  const __mmask16 k1 = n_valid_rows >= 32   ? __mmask16(0xffff)
                       : n_valid_rows <= 16 ? __mmask16(0)
                                            : __mmask16((1u << (n_valid_rows - 16)) - 1);
  for (int t = 0; t < kT; ++t) {
    _mm512_mask_storeu_ps(y + t * y_stride, k0, acc0[t]);
    _mm512_mask_storeu_ps(y + t * y_stride + 16, k1, acc1[t]);
  }
}

void Q4KPanelMatMul(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts,
                    int64_t n_tokens, float* y, int64_t y_stride, const PanelPrefetch& /*next*/) {
  const ActLayout layout(n_cols);
  const int64_t n_sub = n_cols / kActBlock;
  constexpr int kT = 4;
  int64_t t = 0;
  for (; t + kT <= n_tokens; t += kT)
    Q4KPanelTile<kT>(panel, n_sub, n_valid_rows, layout, acts.data + t * acts.row_stride, acts.row_stride,
                     y + t * y_stride, y_stride);
  const uint8_t* a = acts.data + t * acts.row_stride;
  float* yt = y + t * y_stride;
  switch (n_tokens - t) {
    case 0: break;
    case 1: Q4KPanelTile<1>(panel, n_sub, n_valid_rows, layout, a, acts.row_stride, yt, y_stride); break;
    case 2: Q4KPanelTile<2>(panel, n_sub, n_valid_rows, layout, a, acts.row_stride, yt, y_stride); break;
    default: Q4KPanelTile<3>(panel, n_sub, n_valid_rows, layout, a, acts.row_stride, yt, y_stride); break;
  }
}

constexpr ActPrep kQuantActs{ActRowBytes, PrepareActRow};
template <bool kQ5>
constexpr TypeKernels kQ4KKernels{kQuantActs,    4, Q4KRows<kQ5>,       kQuantActs,    kQ4KPanelRows,
                                  8,             Q4KPanelBytes, Q4KPackPanel<kQ5>, Q4KPanelMatMul};

}  // namespace

const TypeKernels* Avx512KQuantKernels(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_K: return &kQ4KKernels<false>;
    case GgmlType::kQ5_K: return &kQ4KKernels<true>;
    case GgmlType::kQ6_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ2_K:
    case GgmlType::kIQ4_XS: return Avx512Q6KKernels(type, /*repacked=*/false);
    default: return nullptr;
  }
}

}  // namespace ridge::kernels::internal
