#pragma once
// Random weight rows of any type MatMul takes, for the kernel tests.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "ridge/base/half.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/kernels/kernel_types.h"

namespace ridge::kernels {

// One row of n_cols random weights of `type` (roughly N(0, scale²)) into dst.
inline void RandomWeightRow(GgmlType type, int64_t n_cols, float scale, std::mt19937& rng, uint8_t* dst) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(n_cols));
  for (auto& v : row) v = normal(rng) * scale;
  QuantizeRow(type, row.data(), dst, n_cols);
}

// One row of a 256-block type (or MXFP4) as random bytes (every code and
// sub-block scale pattern, including those the quantizers never write) with
// its f16 super-block scales (MXFP4: E8M0 exponents) set so that weights are
// roughly of size `scale`.
inline void RandomKQuantBytesRow(GgmlType type, int64_t n_cols, float scale, std::mt19937& rng, uint8_t* dst) {
  struct F16Field {
    int offset;
    float per_unit;  // the field's value is scale · per_unit
  };
  std::vector<F16Field> fields;
  switch (type) {
    case GgmlType::kQ2_K: fields = {{80, 1.0f / 20}, {82, 1.0f / 20}}; break;  // sc ≤ 15, q ≤ 3
    case GgmlType::kQ3_K: fields = {{108, 1.0f / 60}}; break;                  // |sc| ≤ 32, |q| ≤ 4
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K: fields = {{0, 1.0f / 60}, {2, 1.0f / 60}}; break;  // sc, m ≤ 63
    case GgmlType::kQ6_K: fields = {{208, 1.0f / 2000}}; break;               // |sc| ≤ 128, |q| ≤ 32
    case GgmlType::kIQ4_XS: fields = {{0, 1.0f / 2000}}; break;               // |ls − 32| ≤ 32, |level| ≤ 127
    default: fields = {};
  }
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> unit(0.5f, 1.5f);
  const int64_t n_bytes = RowBytes(type, n_cols);
  const int64_t block_bytes = TraitsOf(type).block_bytes;
  for (int64_t i = 0; i < n_bytes; ++i) dst[i] = static_cast<uint8_t>(byte(rng));
  if (type == GgmlType::kMXFP4) {  // |level| <= 12: exponents around scale / 8, a factor 4 either way
    const int e_mid = 128 + static_cast<int>(std::lround(std::log2(scale / 8.0f)));
    std::uniform_int_distribution<int> exponent(e_mid - 2, e_mid + 2);
    for (int64_t b = 0; b < n_cols / kQK_MXFP4; ++b) dst[b * block_bytes] = static_cast<uint8_t>(exponent(rng));
    return;
  }
  for (int64_t b = 0; b < n_cols / kQK_K; ++b) {
    for (const F16Field& f : fields) {
      const uint16_t h = F32ToF16(scale * f.per_unit * unit(rng));
      std::memcpy(dst + b * block_bytes + f.offset, &h, 2);
    }
  }
}

// A random matrix [n_rows, n_cols] of `type` and the view MatMul takes of it.
struct Weights {
  std::vector<uint8_t> bytes;
  WeightMatrix matrix;
};

inline Weights RandomWeights(GgmlType type, int64_t n_rows, int64_t n_cols, std::mt19937& rng) {
  Weights w;
  const int64_t row_bytes = RowBytes(type, n_cols);
  w.bytes.resize(static_cast<size_t>(row_bytes * n_rows));
  for (int64_t r = 0; r < n_rows; ++r) RandomWeightRow(type, n_cols, 0.05f, rng, w.bytes.data() + r * row_bytes);
  w.matrix = {type, w.bytes.data(), n_rows, n_cols, row_bytes};
  return w;
}

}  // namespace ridge::kernels
