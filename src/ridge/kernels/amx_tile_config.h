#pragma once
// The 64-byte operand of LDTILECFG (_tile_loadconfig), palette 1: the rows
// and bytes a row of each of the 8 tile registers. A plain struct, for the
// *_amx.cc files only (they alone are compiled with AMX), the kernels' and
// the probe's.
#include <cstdint>

namespace ridge::kernels {

struct alignas(64) AmxTileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes a row, tiles 0-7 (8-15 reserved: 0)
  uint8_t rows[16] = {};
};
static_assert(sizeof(AmxTileConfig) == 64);

}  // namespace ridge::kernels
