// Q8_0 panels on Intel AMX tiles (tdpbssd): prefill and large batches.
//
// The AVX-512 Q8_0 kernels (matmul_quant_avx512.cc) do everything else: the
// rows path, the activation preparation, packing file-layout rows into
// panels, and panels of fewer than kAmxMinTokens tokens (where the weights'
// stream from memory, not the products, sets the pace).
//
// One AMX product per 32-element block: A = 16 tokens' 32 activation bytes
// (the prepared rows themselves, stride row_stride), B = 16 panel rows' 32
// weights in the VNNI layout the panel already has ([8 groups][16 rows][4],
// stride 128), C = 16 × 16 exact int32 block sums. The panel stores w + 128
// for vpdpbusd; a tile flips each block back to signed bytes (1 KiB, 16
// vector xors, ~8 % of its vector work) right before its product. The block
// sums then take the AVX-512 kernels' float steps exactly,
//   acc = fma(float(Σ_block w·x), d_w · d_x, acc)   (acc = 0 before block 0),
// so a token's outputs are the same bits whichever path or ISA target takes
// its call (batch invariance, matmul_isa.h).
//
// A tile is 32 tokens × the panel's 32 rows, its accumulators 4 KiB on the
// stack (y itself, rows n_rows floats apart, put every token's accumulators
// in the same few L1 sets: 2× slower than AVX-512). Per block it takes 4
// products and 64 rows of 16 outputs × 3 vector operations (convert, scale,
// FMA): the vector work, not the tile unit, bounds it.
#include <immintrin.h>

#include <algorithm>

#include "ridge/kernels/amx_tile_config.h"
#include "ridge/kernels/matmul_isa.h"
#include "ridge/kernels/weight_panels.h"

namespace ridge::kernels::internal {
namespace {

constexpr int64_t kBlock = panels::kBlockElems;
constexpr int64_t kPanelRows = panels::kRows;
constexpr int64_t kPanelBlockBytes = panels::kQ8_0.block_bytes();  // 1088
constexpr int64_t kPanelQuantBytes = panels::kQ8_0.quant_bytes;    // 1024: [8 groups][32 rows][4]
constexpr int64_t kGroupBytes = kPanelRows * 4;                    // 128: one group of the 32 rows
constexpr int64_t kTileTokens = 32;                                // two A tiles of 16 tokens
// Below this many tokens the AVX-512 panel kernels run (measured on an
// Intel Xeon with AMX, docs/benchmarks.md: at 16 tokens and fewer a panel's
// weights come from memory and the tiles only add the flip and the round
// trip of C through memory).
constexpr int64_t kAmxMinTokens = 32;

// The prepared activation row of matmul_quant_avx512.cc (its ActLayout):
// int8 q[n_cols], then float d[n_blocks] at the next multiple of 64.
int64_t ActScalesOffset(int64_t n_cols) { return (n_cols + 63) & ~int64_t{63}; }

// Tile registers (the intrinsics take them as literals): C[q][h] (tokens
// 16q.., rows 16h.. of the tile) are tmm0 = C00, tmm1 = C01, tmm2 = C10,
// tmm3 = C11; A[q] (16 tokens' activations) tmm4, tmm5; B[h] (16 rows'
// weights) tmm6, tmm7.

// Tiles for n0 (1..16) tokens in A0 and n1 (0..16) in A1.
void ConfigureTiles(int n0, int n1) {
  AmxTileConfig c;
  auto set = [&](int tile, int rows, int colsb) {
    c.rows[tile] = static_cast<uint8_t>(rows);
    c.colsb[tile] = static_cast<uint16_t>(rows > 0 ? colsb : 0);
  };
  set(0, n0, 64);  // C00, C01
  set(1, n0, 64);
  set(2, n1, 64);  // C10, C11
  set(3, n1, 64);
  set(4, n0, kBlock);  // A0, A1
  set(5, n1, kBlock);
  set(6, kBlock / 4, 64);  // B0, B1
  set(7, kBlock / 4, 64);
  _tile_loadconfig(&c);
}

// One token tile's C after one block: [q][h][16 tokens][16 rows].
struct alignas(64) BlockSums {
  int32_t c[2][2][16][16];
};

// Block b's quants as signed bytes (the panel stores w + 128), 1 KiB.
void FlipBlock(const uint8_t* panel_block, int8_t* dst) {
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
#pragma GCC unroll 16
  for (int64_t i = 0; i < kPanelQuantBytes; i += 64)
    _mm512_store_si512(dst + i, _mm512_xor_si512(_mm512_loadu_si512(panel_block + i), flip));
}

// The products of one block for the tile's tokens: A from the prepared
// activations at the block, B from its signed quants.
void TileProducts(const uint8_t* acts, int64_t act_stride, const int8_t* signed_block, bool second, BlockSums* out) {
  _tile_loadd(6, signed_block, kGroupBytes);       // B0
  _tile_loadd(7, signed_block + 64, kGroupBytes);  // B1
  _tile_loadd(4, acts, act_stride);                // A0
  _tile_zero(0);
  _tile_zero(1);
  _tile_dpbssd(0, 4, 6);
  _tile_dpbssd(1, 4, 7);
  _tile_stored(0, out->c[0][0], 64);
  _tile_stored(1, out->c[0][1], 64);
  if (second) {
    _tile_loadd(5, acts + 16 * act_stride, act_stride);  // A1
    _tile_zero(2);
    _tile_zero(3);
    _tile_dpbssd(2, 5, 6);
    _tile_dpbssd(3, 5, 7);
    _tile_stored(2, out->c[1][0], 64);
    _tile_stored(3, out->c[1][1], 64);
  }
}

// acc[i] = fma(float(C), d_w · d_x, acc[i]) for the tile's tokens i, block b
// (first: acc starts at 0).
void ScaleBlock(const BlockSums& sums, const uint8_t* panel_block, const uint8_t* acts, int64_t act_stride,
                int64_t d_off, int64_t b, int n_tokens, bool first, float (*acc)[kPanelRows]) {
  // The zero-masked forms of the conversions: g++ 12 warns that the plain
  // ones' _mm512_undefined_ps may be used uninitialized (GCC bug 105593).
  constexpr __mmask16 kAll = 0xffff;
  const uint8_t* scales = panel_block + kPanelQuantBytes;
  const __m512 dw0 = _mm512_maskz_cvtph_ps(kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales)));
  const __m512 dw1 = _mm512_maskz_cvtph_ps(kAll, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(scales + 32)));
  for (int i = 0; i < n_tokens; ++i) {
    const int q = i / 16, row = i % 16;
    const __m512 dx = _mm512_set1_ps(reinterpret_cast<const float*>(acts + i * act_stride + d_off)[b]);
    const __m512 acc0 = first ? _mm512_setzero_ps() : _mm512_load_ps(acc[i]);
    const __m512 acc1 = first ? _mm512_setzero_ps() : _mm512_load_ps(acc[i] + 16);
    const __m512 s0 = _mm512_maskz_cvtepi32_ps(kAll, _mm512_load_si512(sums.c[q][0][row]));
    const __m512 s1 = _mm512_maskz_cvtepi32_ps(kAll, _mm512_load_si512(sums.c[q][1][row]));
    _mm512_store_ps(acc[i], _mm512_fmadd_ps(s0, _mm512_mul_ps(dw0, dx), acc0));
    _mm512_store_ps(acc[i] + 16, _mm512_fmadd_ps(s1, _mm512_mul_ps(dw1, dx), acc1));
  }
}

// Every block of the panel for tokens [0, n0 + n1) of acts, into y. A
// software pipeline: step b flips block b + 1, multiplies block b on the
// tiles and scales block b − 1 on the vector units, so that none waits for
// the stores of the one before it.
void TokenTile(const uint8_t* panel, int64_t n_blocks, const uint8_t* acts, int64_t act_stride, int64_t d_off, int n0,
               int n1, __mmask16 m0, __mmask16 m1, float* y, int64_t y_stride) {
  alignas(64) int8_t flipped[2][kPanelQuantBytes];
  BlockSums sums[2];
  alignas(64) float acc[kTileTokens][kPanelRows];
  const int n_tokens = n0 + n1;
  FlipBlock(panel, flipped[0]);
  for (int64_t b = 0; b <= n_blocks; ++b) {
    if (b + 1 < n_blocks) FlipBlock(panel + (b + 1) * kPanelBlockBytes, flipped[(b + 1) & 1]);
    if (b < n_blocks) TileProducts(acts + b * kBlock, act_stride, flipped[b & 1], n1 > 0, &sums[b & 1]);
    if (b > 0)
      ScaleBlock(sums[(b - 1) & 1], panel + (b - 1) * kPanelBlockBytes, acts, act_stride, d_off, b - 1, n_tokens,
                 b == 1, acc);
  }
  for (int i = 0; i < n_tokens; ++i) {
    _mm512_mask_storeu_ps(y + i * y_stride, m0, _mm512_load_ps(acc[i]));
    _mm512_mask_storeu_ps(y + i * y_stride + 16, m1, _mm512_load_ps(acc[i] + 16));
  }
}

void AmxPanel(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts, int64_t n_tokens,
              float* y, int64_t y_stride) {
  const int64_t n_blocks = n_cols / kBlock;
  const int64_t d_off = ActScalesOffset(n_cols);
  const __mmask16 m0 = n_valid_rows >= 16 ? __mmask16(0xffff) : __mmask16((1u << n_valid_rows) - 1);
  const __mmask16 m1 = n_valid_rows >= 32   ? __mmask16(0xffff)
                       : n_valid_rows <= 16 ? __mmask16(0)
                                            : __mmask16((1u << (n_valid_rows - 16)) - 1);
  int configured = -1;  // tokens the tiles are configured for
  for (int64_t t = 0; t < n_tokens; t += kTileTokens) {
    const int nt = static_cast<int>(std::min(kTileTokens, n_tokens - t));
    const int n0 = std::min(nt, 16), n1 = nt - n0;
    if (nt != configured) {
      ConfigureTiles(n0, n1);
      configured = nt;
    }
    TokenTile(panel, n_blocks, acts.data + t * acts.row_stride, acts.row_stride, d_off, n0, n1, m0, m1,
              y + t * y_stride, y_stride);
  }
  _tile_release();
}

const TypeKernels& Avx512Q8() { return *Avx512QuantKernels(GgmlType::kQ8_0); }

void PanelMatMul(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts, int64_t n_tokens,
                 float* y, int64_t y_stride, const PanelPrefetch& next) {
  if (n_tokens < kAmxMinTokens)
    return Avx512Q8().panel_matmul(panel, n_cols, n_valid_rows, acts, n_tokens, y, y_stride, next);
  AmxPanel(panel, n_cols, n_valid_rows, acts, n_tokens, y, y_stride);
}

void PanelRun(const uint8_t* first, int64_t n_panels, int64_t n_cols, const ActView& acts, int64_t n_tokens,
              float* y, int64_t y_stride, int64_t stream_ahead) {
  if (n_tokens < kAmxMinTokens)
    return Avx512Q8().panel_run(first, n_panels, n_cols, acts, n_tokens, y, y_stride, stream_ahead);
  const int64_t panel_bytes = n_cols / kBlock * kPanelBlockBytes;
  for (int64_t i = 0; i < n_panels; ++i)
    AmxPanel(first + i * panel_bytes, n_cols, kPanelRows, acts, n_tokens, y + i * kPanelRows, y_stride);
}

TypeKernels MakeQ8Kernels() {
  TypeKernels k = Avx512Q8();
  k.panel_matmul = PanelMatMul;
  k.panel_run = PanelRun;
  return k;
}

}  // namespace

const TypeKernels* AmxQuantKernels(GgmlType type) {
  static const TypeKernels q8 = MakeQ8Kernels();
  return type == GgmlType::kQ8_0 ? &q8 : nullptr;
}

}  // namespace ridge::kernels::internal
