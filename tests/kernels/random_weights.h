#pragma once
// Random weight rows of any type MatMul takes, for the kernel tests.
#include <cstdint>
#include <random>
#include <vector>

#include "ridge/gguf/dequantize.h"

namespace ridge::kernels {

// One row of n_cols random weights of `type` (roughly N(0, scale²)) into dst.
inline void RandomWeightRow(GgmlType type, int64_t n_cols, float scale, std::mt19937& rng, uint8_t* dst) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(n_cols));
  for (auto& v : row) v = normal(rng) * scale;
  QuantizeRow(type, row.data(), dst, n_cols);
}

}  // namespace ridge::kernels
