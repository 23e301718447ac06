#pragma once
// Random weight rows of any type MatMul takes, for the kernel tests.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "ridge/base/half.h"
#include "ridge/gguf/dequantize.h"

namespace ridge::kernels {

// K-quants have no quantizer in ridge: random bytes are valid blocks, with
// the f16 super-block scales set to sensible values.
inline void RandomKQuantRow(GgmlType type, int64_t n_cols, float scale, std::mt19937& rng, uint8_t* dst) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> unit(0.5f, 1.5f);
  const int64_t n_bytes = RowBytes(type, n_cols);
  for (int64_t i = 0; i < n_bytes; ++i) dst[i] = static_cast<uint8_t>(byte(rng));
  for (int64_t b = 0; b < n_cols / kQK_K; ++b) {
    if (type == GgmlType::kQ4_K) {
      auto* block = dst + b * static_cast<int64_t>(sizeof(BlockQ4_K));
      const uint16_t d = F32ToF16(scale * unit(rng) / 60.0f), dmin = F32ToF16(scale * unit(rng) / 60.0f);
      std::memcpy(block, &d, 2);
      std::memcpy(block + 2, &dmin, 2);
    } else {
      auto* block = dst + b * static_cast<int64_t>(sizeof(BlockQ6_K));
      const uint16_t d = F32ToF16(scale * unit(rng) / 2000.0f);
      std::memcpy(block + 208, &d, 2);
    }
  }
}

// One row of n_cols random weights of `type` (roughly N(0, scale²)) into dst.
inline void RandomWeightRow(GgmlType type, int64_t n_cols, float scale, std::mt19937& rng, uint8_t* dst) {
  if (!CanQuantizeTo(type)) return RandomKQuantRow(type, n_cols, scale, rng, dst);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(n_cols));
  for (auto& v : row) v = normal(rng) * scale;
  QuantizeRow(type, row.data(), dst, n_cols);
}

}  // namespace ridge::kernels
