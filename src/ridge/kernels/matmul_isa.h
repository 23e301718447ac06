#pragma once
// The contract between the ISA-independent MatMul driver (matmul.cc) and the
// per-ISA inner kernels (matmul_*_avx2.cc, matmul_*_avx512.cc).
//
// This header holds only plain data and function pointers: the ISA files must
// not instantiate templates or inline functions shared with ordinary files
// (the linker could keep an AVX-512 copy for everybody). Threading, scratch
// memory and the choice of path live in the driver.
//
// Two paths per weight type:
//   rows:   decode and small batches. Streams weight rows in place from the
//           mapped file, each row once per group of up to max_row_tokens tokens.
//   panels: prefill. Copies panel_rows rows into a scratch panel in a layout
//           the inner kernel wants (rows interleaved in SIMD lanes, blocks
//           unpacked, scales as floats), then multiplies the panel by every
//           token, so each weight byte is reused from cache n_tokens times.
//
// Batch invariance, the contract every kernel keeps: the output for (row r,
// token t) is the same bits whatever the other tokens of the call are, how
// many there are and which path the driver takes — the same activation
// preparation and the same float operations in the same order. A sequence's
// logits then do not depend on what shares its engine step (batch size,
// chunk boundaries, prefix-cache hits, recompute after preemption).
#include <cstdint>
#include <utility>

#include "ridge/gguf/ggml_type.h"

namespace ridge::kernels::internal {

// Weight bytes a call keeps in L2 while several tiles of tokens pass over
// them (with the tiles' activations: ≤ 6 × 22 KiB for a 5632-column row):
// the driver caps a rows-path task at this much of a matrix, and the float
// kernels convert or stream their rows in blocks of this size.
constexpr int64_t kL2BlockBytes = 192 << 10;

// A weight matrix in place: row r starts at data + r * row_bytes.
struct MatView {
  const uint8_t* data;
  int64_t n_rows;
  int64_t n_cols;
  int64_t row_bytes;
};

// Activations prepared for one weight type (e.g. quantized to 8-bit blocks):
// token t's prepared row starts at data + t * row_stride.
struct ActView {
  const uint8_t* data;
  int64_t row_stride;
};

// How a path wants its activations: row_bytes(n_cols) bytes per token (a
// multiple of 64) written by prepare(); row_bytes == nullptr means the kernels
// read the float activations directly (then ActView points at x).
struct ActPrep {
  int64_t (*row_bytes)(int64_t n_cols);
  void (*prepare)(const float* x, int64_t n_cols, uint8_t* dst);
};

// Tiles of at most max_tile tokens over n_tokens, as even as they go:
// n_tiles = ⌈n_tokens / max_tile⌉, the first n_big of them base + 1 tokens,
// the rest base (8 tokens in tiles of up to 6: 4 + 4, not 6 + 2). A short
// last tile reads the whole panel again for a few products and issues its
// share of the next panel's prefetches in a fraction of a full tile's time.
// Both functions are defined in matmul.cc, an ordinary file (not inline: an
// ISA file's copy could be the one the linker keeps).
struct TokenTiles {
  int64_t n_tiles, base, n_big;
  int64_t TileSize(int64_t k) const;  // tokens in tile k
};
TokenTiles EvenTokenTiles(int64_t n_tokens, int64_t max_tile);

// Calls tile.template operator()<kT>(t, k) for each tile k of
// EvenTokenTiles(n_tokens, kMaxTile), whose kT tokens start at token t: the
// tile's size a template argument, so each size compiles to its own
// register-blocked tile. No SIMD here, and each caller's tile a lambda of its
// own file: every instantiation is that file's alone.
template <int kMaxTile, typename Tile>
void ForTokenTiles(int64_t n_tokens, Tile&& tile) {
  const TokenTiles tiles = EvenTokenTiles(n_tokens, kMaxTile);
  for (int64_t t = 0, k = 0; k < tiles.n_tiles; t += tiles.TileSize(k), ++k) {
    const int64_t size = tiles.TileSize(k);
    // Sizes 1 .. kMaxTile - 1 by their own test, kMaxTile otherwise.
    [&]<int... kI>(std::integer_sequence<int, kI...>) {
      ((size == kI + 1 || kI + 1 == kMaxTile ? (tile.template operator()<kI + 1>(t, k), true) : false) || ...);
    }
    (std::make_integer_sequence<int, kMaxTile>{});
  }
}

// Weight rows a panel kernel may prefetch while it computes: n_rows rows
// from first (n_rows == 0: none), contiguous; a repacked panel may come as
// one row of all its bytes.
struct PanelPrefetch {
  const uint8_t* first;
  int64_t n_rows;
  int64_t row_bytes;
  // > 0: the panel itself streams from memory (weights repacked at load):
  // prefetch this many bytes ahead of the block being multiplied.
  int64_t stream_ahead_bytes = 0;
};

// What one tile of a small batch prefetches of the next panel while it
// multiplies this one: n pieces, `lines` lines from piece + b·step at block b,
// and (ahead > 0) the panel's own stream that far ahead of each block.
struct TilePrefetch {
  static constexpr int kMaxPieces = 32;
  const uint8_t* pieces[kMaxPieces];
  int n = 0;
  int lines = 0;      // lines of each piece a block
  int64_t step = 0;   // bytes of a piece per block
  int64_t ahead = 0;  // > 0: prefetch the panel's own stream this far ahead of each block
};

// The pieces of `next` that tile k of n_tiles of a panel of n_blocks blocks
// prefetches, spread over its blocks: every n_tiles-th. A piece is one of
// next's rows, or, where next has fewer rows than there are tiles, an equal
// part of one: the file's rows a panel is packed from (--mmap) are prefetched
// a slice of each row at a time, a panel repacked at load comes as one row of
// bytes, so each tile brings a run of it in order. The first tile (k = 0)
// also takes next.stream_ahead_bytes, bringing the weights for the others.
TilePrefetch PrefetchSlice(const PanelPrefetch& next, int64_t n_blocks, int64_t k, int64_t n_tiles);

// A panel's rows in quarters of 8 (AVX2's int32 lanes) × every token in
// tiles of up to 4 (EvenTokenTiles), the tokens' tile outside so that its
// activations stay in L1 while the quarters pass; tile k prefetches its
// slice of next (PrefetchSlice). run(q, t, size, pf): quarter q, tokens
// [t, t + size). No SIMD here, and each caller's run a lambda of its own file:
// every instantiation is that file's alone.
template <typename Run>
void ForEachQuarterTile(int64_t n_valid_rows, int64_t n_tokens, int64_t n_blocks, const PanelPrefetch& next, Run run) {
  const int n_quarters = static_cast<int>((n_valid_rows + 7) / 8);
  const TokenTiles tiles = EvenTokenTiles(n_tokens, 4);
  const int64_t n_tiles = n_quarters * tiles.n_tiles;
  int64_t k = 0;
  for (int64_t i = 0, t = 0; i < tiles.n_tiles; ++i) {
    const int64_t size = tiles.TileSize(i);
    for (int q = 0; q < n_quarters; ++q, ++k) run(q, t, size, PrefetchSlice(next, n_blocks, k, n_tiles));
    t += size;
  }
}

struct TypeKernels {
  // y[t * y_stride + r] for r in [r_begin, r_end), t in [0, n_tokens);
  // 1 <= n_tokens <= max_row_tokens.
  ActPrep row_acts;
  int max_row_tokens;
  void (*rows)(const MatView& w, const ActView& acts, int64_t n_tokens, int64_t r_begin, int64_t r_end, float* y,
               int64_t y_stride);

  // Optional (panel_matmul == nullptr when the type has no panel path here).
  // The driver takes it from panel_min_tokens tokens on.
  ActPrep panel_acts;
  int64_t panel_rows;
  int64_t panel_min_tokens;
  int64_t (*panel_bytes)(int64_t n_cols);
  // Packs rows [r_begin, r_begin + panel_rows) (rows past w.n_rows as zeros)
  // into panel (64-byte aligned, panel_bytes(n_cols) bytes).
  void (*pack_panel)(const MatView& w, int64_t r_begin, uint8_t* panel);
  // y[t * y_stride + j] for j < n_valid_rows, t in [0, n_tokens): panel · token t.
  // It may prefetch `next` (the rows of the panel this thread packs next) so
  // that their memory reads overlap its arithmetic.
  void (*panel_matmul)(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts,
                       int64_t n_tokens, float* y, int64_t y_stride, const PanelPrefetch& next);
  // Optional, weights repacked at load: panels [0, n_panels) consecutive
  // from first (whole panels of n_cols), panel i into rows [i·panel_rows,
  // (i + 1)·panel_rows) of y, every token, streamed from memory in the order
  // the kernel chooses; where it reads one stream it may prefetch it
  // stream_ahead bytes ahead (nullptr: the driver calls panel_matmul panel
  // by panel, with next.stream_ahead_bytes set).
  void (*panel_run)(const uint8_t* first, int64_t n_panels, int64_t n_cols, const ActView& acts, int64_t n_tokens,
                    float* y, int64_t y_stride, int64_t stream_ahead) = nullptr;
};

// A type with the rows path only (its kernels take f32 activations when
// row_acts prepares none).
constexpr TypeKernels RowsOnlyKernels(ActPrep row_acts, int max_row_tokens, decltype(TypeKernels::rows) rows) {
  return TypeKernels{row_acts, max_row_tokens, rows, ActPrep{nullptr, nullptr}, 0, 0, nullptr, nullptr, nullptr};
}

// Each returns nullptr for a type it does not handle; the driver then falls
// back to the scalar reference. Call only when the CPU supports that ISA.
const TypeKernels* Avx512QuantKernels(GgmlType type);  // Q8_0, Q4_0 (rows and panels on both ISAs)
const TypeKernels* Avx512FloatKernels(GgmlType type);  // F32, F16, BF16
const TypeKernels* Avx2QuantKernels(GgmlType type);
const TypeKernels* Avx2FloatKernels(GgmlType type);

// Q8_0 on the amx target: the AVX-512 kernels with a panel path on AMX
// tiles for prefill (matmul_q8_amx.cc; nullptr for every other type).
const TypeKernels* AmxQuantKernels(GgmlType type);

// The kernels whose panel path reads panels in the layout of weight_panels.h, so
// that weights repacked at load (kernels::RepackInPlace) are multiplied without
// packing (nullptr: none for the type).
const TypeKernels* Avx512WeightPanelKernels(GgmlType type);     // Q8_0, Q4_0
const TypeKernels* Avx512Q32WeightPanelKernels(GgmlType type);  // Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4
const TypeKernels* Avx2WeightPanelKernels(GgmlType type);        // Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4
// Q4_K, Q5_K (weight_panels.h), Q6_K, Q3_K, Q2_K, IQ4_XS:
const TypeKernels* Avx2KQuantWeightPanelKernels(GgmlType type);
const TypeKernels* Avx512KQuantWeightPanelKernels(GgmlType type);  // the same types and layouts
// The active ISA's (repack.cc).
const TypeKernels* ActiveWeightPanelKernels(GgmlType type);

// The other 32-element block types (Q4_1, Q5_0, Q5_1, IQ4_NL, MXFP4): rows and
// panels on AVX-512; on AVX2 the rows path (their panels are
// Avx2QuantKernels', with these rows).
const TypeKernels* Avx512Q32Kernels(GgmlType type);
const TypeKernels* Avx2Q32Kernels(GgmlType type);

// K-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS): the rows path and per-call panels.
const TypeKernels* Avx512KQuantKernels(GgmlType type);
// Q6_K, Q3_K, Q2_K and IQ4_XS on AVX-512, weights in the file's layout or repacked (weight_panels.h, q6k, q3k, q2k,
// iq4xs).
const TypeKernels* Avx512Q6KKernels(GgmlType type, bool repacked);
const TypeKernels* Avx2KQuantKernels(GgmlType type);
// The same on AVX2 (the same layouts, packed by AVX2 code on both ISAs).
const TypeKernels* Avx2Q6KKernels(GgmlType type, bool repacked);
// IQ4_XS's part of the two above (matmul_iq4xs_avx2.cc, matmul_iq4xs_avx512.cc).
const TypeKernels* Avx2IQ4XSKernels(bool repacked);
const TypeKernels* Avx512IQ4XSKernels(bool repacked);
// The AVX2 K-quant kernels' activation preparation (shared with the Q4_K weight panels).
ActPrep Avx2KQuantActPrep();

}  // namespace ridge::kernels::internal
