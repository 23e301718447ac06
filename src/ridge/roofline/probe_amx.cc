// The amx target's probe loops: the AVX-512 ones, but the int8 peak is the
// AMX tile unit's (tdpbssd), the one the Q8_0 prefill kernels run on
// (matmul_q8_amx.cc). BF16 stays the AVX-512 dot's: no ridge kernel uses
// AMX BF16 (`ridge cpu` says so).
#include <immintrin.h>

#include "ridge/kernels/amx_tile_config.h"
#include "ridge/roofline/probe_kernels.h"

namespace ridge::probe {
namespace {

constexpr int kTileChains = 6;  // C tiles 0-5; A is tile 6, B tile 7

// 6 chains of 16 × 16 int32 accumulators, each round one full 16 × 64 by
// 64 × 16 int8 product per chain (2 ops per product). Every element of a
// chain gains 64 a round; the sum of one element of every chain is scaled to
// the 4 × kProbeChains per round of probe_kernels.h.
double Int8Tiles(int64_t iterations, float one) {
  kernels::AmxTileConfig config;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = 16;
    config.colsb[t] = 64;
  }
  _tile_loadconfig(&config);
  alignas(64) int8_t ones[16 * 64];
  for (int8_t& v : ones) v = static_cast<int8_t>(one);
  _tile_loadd(6, ones, 64);
  _tile_loadd(7, ones, 64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  _tile_zero(5);
  for (int64_t i = 0; i < iterations; ++i) {
    _tile_dpbssd(0, 6, 7);
    _tile_dpbssd(1, 6, 7);
    _tile_dpbssd(2, 6, 7);
    _tile_dpbssd(3, 6, 7);
    _tile_dpbssd(4, 6, 7);
    _tile_dpbssd(5, 6, 7);
  }
  alignas(64) int32_t c[kTileChains][16 * 16];
  _tile_stored(0, c[0], 64);
  _tile_stored(1, c[1], 64);
  _tile_stored(2, c[2], 64);
  _tile_stored(3, c[3], 64);
  _tile_stored(4, c[4], 64);
  _tile_stored(5, c[5], 64);
  _tile_release();
  double sum = 0;
  for (int t = 0; t < kTileChains; ++t) sum += static_cast<double>(c[t][0]);
  return sum * (4.0 * kProbeChains) / (64.0 * kTileChains);
}

}  // namespace

IsaKernels AmxProbeKernels() {
  IsaKernels k = Avx512ProbeKernels();
  k.int8_dot = {"amx tdpbssd", kTileChains * 16.0 * 16 * 64 * 2, Int8Tiles};
  return k;
}

}  // namespace ridge::probe
