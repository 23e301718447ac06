// Q8_0 and Q4_0 MatMul inner kernels for AVX-512 with VNNI (vpdpbusd).
//
// Activations are quantized once per call to 8-bit blocks of 32 with one
// float scale each (like ggml's Q8_0). vpdpbusd multiplies unsigned by signed
// bytes, so the weights are made unsigned and the offset is taken back out
// with the block's "bias" −k·Σx:
//   Q8_0: (w ^ 0x80) = w + 128  →  Σ (w+128)·x − 128·Σx = Σ w·x   (panels)
//         |w| times x with w's sign needs no offset             (rows)
//   Q4_0: nibble q = w + 8      →  Σ q·x − 8·Σx         = Σ w·x   (both)
// Both paths compute every output with the same float steps (see RowsTile),
// so a token's results are the same bits whichever path its call takes.
#include "ridge/kernels/simd_avx512.h"

#include <algorithm>
#include <cstring>

#include "ridge/kernels/matmul_isa.h"
#include "ridge/kernels/weight_panels.h"

namespace ridge::kernels::internal {
namespace {

constexpr int kBlock = 32;  // elements per Q8_0 / Q4_0 block

int64_t Align64(int64_t n) { return (n + 63) & ~int64_t{63}; }

// Layout of one prepared activation row of n_cols (a multiple of 32):
//   q          int8  [n_cols]
//   d          float [n_blocks]   scale of each block
//   block_bias int32 [n_blocks]   −k·Σ of the block (k = 8 for Q4_0, 128 for Q8_0)
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

template <bool kQ4>
void PrepareActRow(const float* x, int64_t n_cols, uint8_t* dst) {
  const ActLayout layout(n_cols);
  auto* q = reinterpret_cast<int8_t*>(dst);
  auto* d = reinterpret_cast<float*>(dst + layout.d_off);
  auto* block_bias = reinterpret_cast<int32_t*>(dst + layout.block_bias_off);
  constexpr int32_t kBlockFactor = kQ4 ? -8 : -128;
  for (int64_t b = 0; b < layout.n_blocks; ++b) {
    __m256i lane_sums;
    d[b] = avx512::QuantizeBlock32(x + b * kBlock, q + b * kBlock, &lane_sums);
    block_bias[b] = kBlockFactor * avx512::HorizontalSumI32(lane_sums);
  }
}

// Rows path: kRowsPerTile rows × kT tokens, weights streamed in place, in
// the same arithmetic as the panel path (batch invariance: a token's outputs
// must not depend on how many tokens share the call). Per (row, token) that
// is one float chain over the blocks,
//   acc = fma(float(Σ_block w·x), d_w · d_x, acc),
// whose integer block sums are exact, so only the float steps need to match.
// Each row's block dot product is taken in 8 int32 lanes (vpdpbusd), then the
// 8 rows' lanes are reduced so that lane i holds row i's exact block sum; the
// 8 rows' chains then run in the lanes of one register, and a tile stores 8
// consecutive outputs per token at once.
//
// The tile also prefetches, into L2, the tile kPrefetchTiles ahead, one slice
// per block: 8 rows of ~50-180 cache lines are 8 short streams that the
// hardware prefetcher follows too late, and a decode step would otherwise
// wait on memory for about as long as it computes (measured: 9.5 → 22 GB/s
// from DRAM on one Zen 4 core).
constexpr int kPrefetchTiles = 2;
constexpr int kRowsPerTile = 8;

// Rows path: the 32 weights of a block as unsigned bytes in one masked
// broadcast. Q8_0: w itself (used as |w| with x taking w's sign). Q4_0: the
// 16 packed bytes twice, low nibbles (elements 0..15) and high nibbles in
// place (16..31, i.e. 16 × their value: avx512::SumLanesOf8<4> divides it back out).
template <bool kQ4>
__m256i RowBlockBytes(const uint8_t* block) {
  if constexpr (kQ4) {
    const __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 2)));
    return _mm256_and_si256(both, _mm256_setr_m128i(_mm_set1_epi8(0x0f), _mm_set1_epi8(static_cast<char>(0xf0))));
  } else {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 2));
  }
}

// Rows r .. r + 8 (rows past r_end read row r_end - 1 and are not stored).
template <bool kQ4, int kT>
void RowsTile(const MatView& w, const ActLayout& layout, const ActView& acts, int64_t r, int64_t r_end, float* y,
              int64_t y_stride) {
  constexpr int64_t kBlockBytes = kQ4 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0);
  constexpr int kPrefetchLines = (kRowsPerTile * kBlockBytes + 63) / 64;
  const int n_valid = static_cast<int>(r_end - r < kRowsPerTile ? r_end - r : kRowsPerTile);
  const uint8_t* base = w.data + r * w.row_bytes;
  const uint8_t* ahead = base + kPrefetchTiles * kRowsPerTile * w.row_bytes;
  // Byte offset of each row from `base` (its block 0), for the scale gather.
  int64_t row_offsets[kRowsPerTile];  // byte offset of each row from `base`
  for (int i = 0; i < kRowsPerTile; ++i) row_offsets[i] = (i < n_valid ? i : n_valid - 1) * w.row_bytes;
  const int8_t* xq[kT];
  const int32_t* xbias[kT];
  const float* xd[kT];
  for (int t = 0; t < kT; ++t) {
    const uint8_t* a = acts.data + t * acts.row_stride;
    xq[t] = reinterpret_cast<const int8_t*>(a);
    xbias[t] = reinterpret_cast<const int32_t*>(a + layout.block_bias_off);
    xd[t] = reinterpret_cast<const float*>(a + layout.d_off);
  }
  __m256 acc[kT];
  for (int t = 0; t < kT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < layout.n_blocks; ++b) {
#pragma GCC unroll 8
    for (int p = 0; p < kPrefetchLines; ++p)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + b * kRowsPerTile * kBlockBytes + p * 64), _MM_HINT_T1);
    const __m256 dw = avx512::ScalesOf8(base + b * kBlockBytes, row_offsets);
    const uint8_t* blocks = base + b * kBlockBytes;
    __m256i wv[kRowsPerTile];
#pragma GCC unroll 8
    for (int i = 0; i < kRowsPerTile; ++i) wv[i] = RowBlockBytes<kQ4>(blocks + row_offsets[i]);
#pragma GCC unroll 4
    for (int t = 0; t < kT; ++t) {
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[t] + b * kBlock));
      __m256i dot[kRowsPerTile];
#pragma GCC unroll 8
      for (int i = 0; i < kRowsPerTile; ++i) {
        if constexpr (kQ4) {  // nibbles q = w + 8: Σ q·x, the block's −8·Σx added after the sum
          dot[i] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), wv[i], xv);
        } else {  // |w| unsigned (−128 reads as 128) times x with w's sign: no offset
          dot[i] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(wv[i]), _mm256_sign_epi8(xv, wv[i]));
        }
      }
      __m256i sums = avx512::SumLanesOf8<kQ4 ? 4 : 0>(dot);
      if constexpr (kQ4) sums = _mm256_add_epi32(sums, _mm256_set1_epi32(xbias[t][b]));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(dw, _mm256_set1_ps(xd[t][b])), acc[t]);
    }
  }
  const __mmask8 valid = static_cast<__mmask8>((1u << n_valid) - 1);
  for (int t = 0; t < kT; ++t) _mm256_mask_storeu_ps(y + t * y_stride + r, valid, acc[t]);
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
// A panel holds 32 rows in the layout of weight_panels.h (two zmm of 16 rows
// per 4-element group, f16 scales). Weights repacked at load are already
// panels; file-layout weights are packed into one per task (PackPanel).
constexpr int64_t kPanelRows = panels::kRows;
static_assert(panels::kQ8_0.file_block_bytes == sizeof(BlockQ8_0));
static_assert(panels::kQ4_0.file_block_bytes == sizeof(BlockQ4_0));

template <bool kQ4>
constexpr int64_t kPanelBlockBytes = kQ4 ? panels::kQ4_0.block_bytes() : panels::kQ8_0.block_bytes();
template <bool kQ4>
constexpr int64_t kPanelQuantBytes = kQ4 ? panels::kQ4_0.quant_bytes : panels::kQ8_0.quant_bytes;

template <bool kQ4>
int64_t PanelBytes(int64_t n_cols) {
  return n_cols / kBlock * kPanelBlockBytes<kQ4>;
}

// Packs rows [r_begin, r_begin + 32) of the file-layout matrix w (rows past
// w.n_rows: zero quants, the last row's scales; their outputs are never stored).
template <bool kQ4>
void PackPanel(const MatView& w, int64_t r_begin, uint8_t* panel) {
  const int64_t n_blocks = w.n_cols / kBlock;
  constexpr int64_t kFileBlockBytes = kQ4 ? sizeof(BlockQ4_0) : sizeof(BlockQ8_0);
  avx512::PackPanelQuants<kQ4 ? 4 : 8>(w.data, w.n_rows, w.row_bytes, r_begin, n_blocks, kFileBlockBytes, 2,
                                       kQ4 ? 0 : 0x80, kPanelBlockBytes<kQ4>, panel);
  // The f16 scales, 8 rows at a time (a scalar copy per (row, block) was as
  // costly as the rest of the packing at batch 16).
  for (int64_t j0 = 0; j0 < kPanelRows; j0 += 8) {
    const int64_t first = std::min(r_begin + j0, w.n_rows - 1);
    const int64_t n_valid = std::max<int64_t>(1, std::min<int64_t>(8, w.n_rows - first));
    int64_t row_offsets[8];
    for (int i = 0; i < 8; ++i) row_offsets[i] = (i < n_valid ? i : n_valid - 1) * w.row_bytes;
    const uint8_t* base = w.data + first * w.row_bytes;
    for (int64_t b = 0; b < n_blocks; ++b)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(panel + b * kPanelBlockBytes<kQ4> + kPanelQuantBytes<kQ4> + j0 * 2),
                       avx512::HalvesOf8(base + b * kFileBlockBytes, row_offsets));
  }
}

// The next panel, prefetched into L1 by the tiles of this one in pieces
// (PrefetchSlice, matmul_isa.h). On a Zen 5, the model alternated in one
// process, runs of a repacked panel against 32 slices of it (what repacked
// panels took before): Q8_0 4-6 tokens 1.22-1.34 × in minutes when the host's
// memory read ~54 GB/s (0.98-1.02 × at ~83 GB/s), 8 tokens 0.98-1.08 ×
// (0.96-1.02 ×), 16 tokens 1.03-1.08 ×; Q4_0 8 tokens 1.08-1.32 ×; 32-64 and
// 98 tokens level. The file's rows taken as runs: 0.97 × (Q8_0, 8 tokens).
// Into L1 rather than L2, slices of rows: 8 tokens 1.05-1.21 × (Q8_0) and
// 1.16-1.22 × (Q4_0), 5 tokens 1.06 ×, 16 tokens 1.02-1.07 ×, 64 1.01-1.02 ×
// (prefill's one-panel tasks prefetch no next panel). Zen 4 and Intel cores
// (32 KiB of L1 on Zen 4) not measured. PrefetchNextPanel issues block b's
// share (PanelTileQ8OnePass's is a stream a few blocks ahead, reaching into
// the next panel over its last blocks).
inline __attribute__((always_inline)) void PrefetchNextPanel(const TilePrefetch& pf, int64_t b) {
  for (int i = 0; i < pf.n; ++i)
    for (int l = 0; l < pf.lines; ++l)
      _mm_prefetch(reinterpret_cast<const char*>(pf.pieces[i] + b * pf.step + 64 * l), _MM_HINT_T0);
}

// 32 panel rows × kT tokens, of kP panels at once. Integer accumulators per
// block start at the block's bias and take one vpdpbusd per 4-element group
// (activation bytes broadcast); then one convert and one FMA scale them into
// floats, in the rows kernel's order. kP > 1 (weights repacked at load, a
// few tokens): the panels lie far apart in memory, so a thread reads kP
// streams at once (see PanelRun), and their accumulators are kP times as
// many independent chains for the vpdpbusd latency.
template <bool kQ4, int kT, int kP = 1>
void PanelTile(const uint8_t* const panel[kP], int64_t n_blocks, int64_t n_valid_rows, const ActLayout& layout,
               const uint8_t* acts, int64_t act_stride, float* const y[kP], int64_t y_stride, const TilePrefetch& pf) {
  static_assert(kP == 1 || kT * kP <= 6, "accumulators of kT tokens × kP panels must fit the 32 zmm");
  const int8_t* xq[kT];
  const float* xd[kT];
  const int32_t* xbias[kT];
  for (int t = 0; t < kT; ++t) {
    const uint8_t* a = acts + t * act_stride;
    xq[t] = reinterpret_cast<const int8_t*>(a);
    xd[t] = reinterpret_cast<const float*>(a + layout.d_off);
    xbias[t] = reinterpret_cast<const int32_t*>(a + layout.block_bias_off);
  }
  __m512 acc0[kP][kT], acc1[kP][kT];
  for (int q = 0; q < kP; ++q)
    for (int t = 0; t < kT; ++t) acc0[q][t] = acc1[q][t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* p[kP];
    for (int q = 0; q < kP; ++q) p[q] = panel[q] + b * kPanelBlockBytes<kQ4>;
    PrefetchNextPanel(pf, b);
    if (pf.ahead > 0) {
#pragma GCC unroll 4
      for (int q = 0; q < kP; ++q) {
#pragma GCC unroll 17
        for (int64_t line = 0; line < kPanelBlockBytes<kQ4>; line += 64)
          _mm_prefetch(reinterpret_cast<const char*>(p[q] + pf.ahead + line), _MM_HINT_T1);
      }
    }
    __m512i dot0[kP][kT], dot1[kP][kT];
    for (int q = 0; q < kP; ++q)
      for (int t = 0; t < kT; ++t) dot0[q][t] = dot1[q][t] = _mm512_set1_epi32(xbias[t][b]);
    auto group = [&](int q, __m512i w0, __m512i w1, int element) {
      avx512::PanelGroupDots<kT>(w0, w1, xq, b * kBlock + element, dot0[q], dot1[q]);
    };
    if constexpr (kQ4) {
      const __m512i low4 = _mm512_set1_epi8(0x0f);
#pragma GCC unroll 4
      for (int g = 0; g < 4; ++g) {
#pragma GCC unroll 4
        for (int q = 0; q < kP; ++q) {
          const __m512i w0 = _mm512_loadu_si512(p[q] + g * kPanelRows * 4);
          const __m512i w1 = _mm512_loadu_si512(p[q] + g * kPanelRows * 4 + 64);
          group(q, _mm512_and_si512(w0, low4), _mm512_and_si512(w1, low4), 4 * g);
          group(q, _mm512_and_si512(_mm512_srli_epi16(w0, 4), low4),
                _mm512_and_si512(_mm512_srli_epi16(w1, 4), low4), 16 + 4 * g);
        }
      }
    } else {
#pragma GCC unroll 8
      for (int g = 0; g < 8; ++g) {
#pragma GCC unroll 4
        for (int q = 0; q < kP; ++q)
          group(q, _mm512_loadu_si512(p[q] + g * kPanelRows * 4), _mm512_loadu_si512(p[q] + g * kPanelRows * 4 + 64),
                4 * g);
      }
    }
#pragma GCC unroll 4
    for (int q = 0; q < kP; ++q) {
      const uint8_t* scales = p[q] + kPanelQuantBytes<kQ4>;
      const __m512 s0 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales)));
      const __m512 s1 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + 32)));
      avx512::PanelScaleBlock<kT>(s0, s1, xd, b, dot0[q], dot1[q], acc0[q], acc1[q]);
    }
  }
  for (int q = 0; q < kP; ++q) avx512::StorePanelTile<kT>(acc0[q], acc1[q], n_valid_rows, y[q], y_stride);
}

// How far ahead of its reads PanelTileQ8OnePass prefetches (into L1). On a
// Zen 5, the model alternated in one process, 8 blocks (8.5 KiB) against one
// panel ahead (69 KiB at 2048 columns, what PrefetchSlice gives tiles that
// share a panel): 8 tokens 1.06 ×, 7 tokens 1.09 × when the host's memory
// read ~84 GB/s, 1.02 × and 1.01-1.02 × at ~54 GB/s; serving (8 sequences
// a step) 1.02-1.06 × output tokens/s. Against 8 blocks: 5 / 6 / 7 / 10
// blocks 0.95 / 0.98 / 0.99 / 1.00 × at ~84 GB/s, 1.02 / 1.02 / 1.01 / 0.99
// × at ~54. Zen 4 and Intel not measured.
constexpr int64_t kOnePassAheadBlocks = 8;

// 32 rows of a Q8_0 panel × kT = 7-8 tokens in one pass: each block's weights
// are read once for every token (two tiles of 4 read the panel twice, the
// second time from L2, and their stream from memory stalls while the second
// passes). Both halves' integer sums of kT tokens take 16 zmm; the second
// half's float accumulators live in memory (a load and a store per block and
// token, from L1), and the activations are read through one pointer a token
// (PanelTile's pointer arrays for d and the bias would spill here). The same
// integer sums and float steps as PanelTile, so the same bits.
// Weights repacked at load only (PanelRun). On a Zen 5, the whole model
// alternated in one process against two tiles: 8 tokens 1.06-1.08 ×, 7 tokens
// 1.04-1.07 ×, whether the host's memory read ~54 or ~83 GB/s; from L2 (one
// thread, 8 panels) 866 against 785 Gop/s. Q4_0 ran 0.96-0.97 × this way (at
// 8 tokens its tiles are compute bound, not waiting on memory), and the
// file's rows packed as they go (--mmap) 0.96-0.975 ×: both keep the tiles.
// `pf`: a stream kOnePassAheadBlocks ahead of the tile's reads (PanelRun).
template <int kT>
void PanelTileQ8OnePass(const uint8_t* panel, int64_t n_blocks, const ActLayout& layout, const uint8_t* acts,
                        int64_t act_stride, float* y, int64_t y_stride, const TilePrefetch& pf) {
  const uint8_t* rows[kT];  // token t's prepared activations
  for (int t = 0; t < kT; ++t) rows[t] = acts + t * act_stride;
  const int64_t d_off = layout.d_off, bias_off = layout.block_bias_off;
  __m512 acc0[kT];
  alignas(64) float acc1[kT][16];
  for (int t = 0; t < kT; ++t) {
    acc0[t] = _mm512_setzero_ps();
    _mm512_store_ps(acc1[t], _mm512_setzero_ps());
  }
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* p = panel + b * kPanelBlockBytes<false>;
    PrefetchNextPanel(pf, b);
    if (pf.ahead > 0) {
#pragma GCC unroll 17
      for (int64_t line = 0; line < kPanelBlockBytes<false>; line += 64)
        _mm_prefetch(reinterpret_cast<const char*>(p + pf.ahead + line), _MM_HINT_T1);
    }
    __m512i dot0[kT], dot1[kT];
    for (int t = 0; t < kT; ++t) {
      int32_t bias;
      std::memcpy(&bias, rows[t] + bias_off + 4 * b, 4);
      dot0[t] = dot1[t] = _mm512_set1_epi32(bias);
    }
#pragma GCC unroll 8
    for (int g = 0; g < 8; ++g) {
      const __m512i w0 = _mm512_loadu_si512(p + g * kPanelRows * 4);
      const __m512i w1 = _mm512_loadu_si512(p + g * kPanelRows * 4 + 64);
#pragma GCC unroll 8
      for (int t = 0; t < kT; ++t) {
        int32_t x4;
        std::memcpy(&x4, rows[t] + b * kBlock + 4 * g, 4);
        const __m512i xb = _mm512_set1_epi32(x4);
        dot0[t] = _mm512_dpbusd_epi32(dot0[t], w0, xb);
        dot1[t] = _mm512_dpbusd_epi32(dot1[t], w1, xb);
      }
    }
    const uint8_t* scales = p + kPanelQuantBytes<false>;
    const __m512 s0 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales)));
    const __m512 s1 = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + 32)));
#pragma GCC unroll 8
    for (int t = 0; t < kT; ++t) {  // PanelScaleBlock's steps
      float d;
      std::memcpy(&d, rows[t] + d_off + 4 * b, 4);
      const __m512 dx = _mm512_set1_ps(d);
      acc0[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot0[t]), _mm512_mul_ps(s0, dx), acc0[t]);
      const __m512 a1 = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot1[t]), _mm512_mul_ps(s1, dx), _mm512_load_ps(acc1[t]));
      _mm512_store_ps(acc1[t], a1);
    }
  }
  __m512 acc1_regs[kT];
  for (int t = 0; t < kT; ++t) acc1_regs[t] = _mm512_load_ps(acc1[t]);
  avx512::StorePanelTile<kT>(acc0, acc1_regs, kPanelRows, y, y_stride);
}

// Panel × every token, in tiles of up to 6 tokens (EvenTokenTiles: 8 tokens
// as 4 + 4 decoded Q8_0 3 % faster in the model than 6 + 2, 7 as 4 + 3 10 %
// faster than 6 + 1; Zen 5, docs/benchmarks.md). Each tile prefetches a part
// of the next panel.
template <bool kQ4>
void PanelMatMul(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts, int64_t n_tokens,
                 float* y, int64_t y_stride, const PanelPrefetch& next) {
  const ActLayout layout(n_cols);
  const int64_t n_tiles = EvenTokenTiles(n_tokens, 6).n_tiles;
  const uint8_t* const panels[1] = {panel};
  const int64_t n = layout.n_blocks, s = acts.row_stride;
  ForTokenTiles<6>(n_tokens, [&]<int kT>(int64_t t, int64_t k) {
    float* const yt[1] = {y + t * y_stride};
    PanelTile<kQ4, kT>(panels, n, n_valid_rows, layout, acts.data + t * s, s, yt, y_stride,
                       PrefetchSlice(next, n, k, n_tiles));
  });
}

// kP panels of a run, panel i of stream q being run panel q·per_stream + i:
// kP streams far apart in memory, each walked forward.
template <bool kQ4, int kT, int kP>
void PanelStreams(const uint8_t* first, int64_t panel_bytes, int64_t per_stream, int64_t n_cols, const ActView& acts,
                  float* y, int64_t y_stride) {
  const ActLayout layout(n_cols);
  const TilePrefetch pf{};  // none: see PanelRun
  for (int64_t i = 0; i < per_stream; ++i) {
    const uint8_t* panels[kP];
    float* ys[kP];
    for (int q = 0; q < kP; ++q) {
      panels[q] = first + (q * per_stream + i) * panel_bytes;
      ys[q] = y + (q * per_stream + i) * kPanelRows;
    }
    PanelTile<kQ4, kT, kP>(panels, layout.n_blocks, kPanelRows, layout, acts.data, acts.row_stride, ys, y_stride, pf);
  }
}

// Panels [0, n_panels) of weights repacked at load (whole panels, consecutive
// from first), rows [32i, 32i + 32) of y for panel i, every token. Measured
// on Zen 4 (docs/benchmarks.md, "Issue 15/17: small-token kernels and Q8_0
// panel decode"):
// - 1-3 tokens take two streams, the run's halves walked side by side (one
//   tile of kP = 2 panels), prefetched by the hardware only: one stream a
//   thread with a software prefetch 4-128 KiB ahead decoded Q8_0 10-25 %
//   slower than its rows kernel, and a prefetch here cost 30 % again;
// - 4 tokens and more (as much arithmetic as memory time) take one stream,
//   panel by panel: without a prefetch they lost 30-40 %, and two streams
//   with the tokens in two tiles lost more (Q8_0's 7-8 tokens now pass
//   over each panel once: PanelTileQ8OnePass). The run's first panel is
//   prefetched stream_ahead bytes ahead by its first tile, each later panel
//   by the tiles of the one before it, a run of it each (PrefetchSlice): a
//   panel's first tile alone bringing it in left the others to wait on
//   memory in turn (on an Intel Xeon with AVX-512, BM_Batched/Q8_0_memory/8
//   ran at half of _cache/8 that way; docs/benchmarks.md, 2026-12-04).
template <bool kQ4>
void PanelRun(const uint8_t* first, int64_t n_panels, int64_t n_cols, const ActView& acts, int64_t n_tokens,
              float* y, int64_t y_stride, int64_t stream_ahead) {
  const int64_t panel_bytes = n_cols / kBlock * kPanelBlockBytes<kQ4>;
  constexpr int kStreams = 2;
  const int64_t per_stream = n_tokens <= 3 ? n_panels / kStreams : 0;
  if (per_stream > 0) {
    switch (n_tokens) {
      case 1: PanelStreams<kQ4, 1, kStreams>(first, panel_bytes, per_stream, n_cols, acts, y, y_stride); break;
      case 2: PanelStreams<kQ4, 2, kStreams>(first, panel_bytes, per_stream, n_cols, acts, y, y_stride); break;
      default: PanelStreams<kQ4, 3, kStreams>(first, panel_bytes, per_stream, n_cols, acts, y, y_stride); break;
    }
  }
  const ActLayout layout(n_cols);
  for (int64_t i = per_stream * kStreams; i < n_panels; ++i) {
    // The next panel as one row of bytes, cut among the tiles (PrefetchSlice).
    const uint8_t* panel = first + i * panel_bytes;
    const bool more = i + 1 < n_panels;
    const PanelPrefetch next{panel + panel_bytes, more ? 1 : 0, panel_bytes,
                             i == per_stream * kStreams ? stream_ahead : 0};
    float* yp = y + i * kPanelRows;
    if constexpr (!kQ4) {
      if (n_tokens == 7 || n_tokens == 8) {
        // The one pass reads each line once, so its prefetch is a stream a
        // fixed distance ahead of its reads (into the next panel over the
        // last blocks; past a run's end, 8 blocks of nothing it needs).
        const PanelPrefetch ahead{panel + kOnePassAheadBlocks * kPanelBlockBytes<false>, 1, panel_bytes,
                                  next.stream_ahead_bytes};
        const TilePrefetch pf = PrefetchSlice(ahead, layout.n_blocks, 0, 1);
        const int64_t s = acts.row_stride;
        if (n_tokens == 7) PanelTileQ8OnePass<7>(panel, layout.n_blocks, layout, acts.data, s, yp, y_stride, pf);
        if (n_tokens == 8) PanelTileQ8OnePass<8>(panel, layout.n_blocks, layout, acts.data, s, yp, y_stride, pf);
        continue;
      }
    }
    PanelMatMul<kQ4>(panel, n_cols, kPanelRows, acts, n_tokens, yp, y_stride, next);
  }
}

constexpr int64_t kPanelMinTokens = 8;
constexpr TypeKernels kQ8_0Kernels{{ActRowBytes, PrepareActRow<false>}, 4, Rows<false>,
                                   {ActRowBytes, PrepareActRow<false>}, kPanelRows, kPanelMinTokens,
                                   PanelBytes<false>, PackPanel<false>, PanelMatMul<false>, PanelRun<false>};
constexpr TypeKernels kQ4_0Kernels{{ActRowBytes, PrepareActRow<true>}, 4, Rows<true>,
                                   {ActRowBytes, PrepareActRow<true>}, kPanelRows, kPanelMinTokens,
                                   PanelBytes<true>, PackPanel<true>, PanelMatMul<true>, PanelRun<true>};

}  // namespace

const TypeKernels* Avx512QuantKernels(GgmlType type) {
  switch (type) {
    case GgmlType::kQ8_0: return &kQ8_0Kernels;
    case GgmlType::kQ4_0: return &kQ4_0Kernels;
    default: return nullptr;
  }
}

const TypeKernels* Avx512WeightPanelKernels(GgmlType type) { return Avx512QuantKernels(type); }

}  // namespace ridge::kernels::internal
