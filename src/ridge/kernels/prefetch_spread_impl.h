#pragma once
// Software prefetches spread over a tile's steps, shared by the panel tiles
// of the ISA files (matmul_q4k_panels_avx512.cc, matmul_q6k_avx512.cc,
// matmul_iq4xs_avx512.cc, matmul_iq4xs_avx2.cc and the decoded-stretch tiles
// of both ISAs).
//
// Include only from *_avx2.cc and *_avx512.cc. It sits in an anonymous
// namespace, so each ISA file compiles its own copy (matmul_isa.h: no inline
// code shared with ordinary files).
#include <xmmintrin.h>

#include <cstdint>

namespace ridge::kernels::internal {
namespace {

// Prefetches lines [step·n_lines / n_steps, (step + 1)·n_lines / n_steps) of
// the n_lines 64-byte lines from `lines`, with hint kHint (_MM_HINT_T0 into
// L1, _MM_HINT_T1 into L2). A tile that calls it at each of its n_steps
// steps brings every line in once, a few a step, rather than in one burst:
// a burst of 105 lines before a Q6_K tile of 8 tokens stalled on the
// prefetches themselves (a fifth of the samples on the burst's loop, `perf`,
// Zen 5; see DecodedMatMul). The loop is kept rolled: unrolled, the
// prefetches of Q6_K's one-token tile streamed a third as fast (Tile1,
// matmul_q6k_avx512.cc).
template <int kHint>
inline __attribute__((always_inline)) void PrefetchLinesOfStep(const uint8_t* lines, int64_t n_lines, int64_t step,
                                                               int64_t n_steps) {
#pragma GCC unroll 1
  for (int64_t l = step * n_lines / n_steps; l < (step + 1) * n_lines / n_steps; ++l)
    _mm_prefetch(reinterpret_cast<const char*>(lines + 64 * l), static_cast<_mm_hint>(kHint));
}

// The 64-byte lines of an n_bytes stretch that tile k of n_tiles prefetches:
// [first, first + n), the tiles' ranges in order and covering the stretch's
// whole lines.
struct LineRange {
  int64_t first, n;
};
inline LineRange TileLines(int64_t n_bytes, int64_t k, int64_t n_tiles) {
  const int64_t first = k * n_bytes / n_tiles / 64, end = (k + 1) * n_bytes / n_tiles / 64;
  return {first, end - first};
}

}  // namespace
}  // namespace ridge::kernels::internal
