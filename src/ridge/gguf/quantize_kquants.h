#pragma once
// Reference quantizers of the 256-element super-block types (Q2_K, Q3_K,
// Q4_K, Q5_K, Q6_K, IQ4_XS), behind QuantizeRow (dequantize.h). Each writes
// n_blocks blocks of its type from n_blocks · 256 floats.
#include <cstdint>

namespace ridge::kquants {

void QuantizeQ2_K(const float* x, uint8_t* dst, int64_t n_blocks);
void QuantizeQ3_K(const float* x, uint8_t* dst, int64_t n_blocks);
void QuantizeQ4_K(const float* x, uint8_t* dst, int64_t n_blocks);
void QuantizeQ5_K(const float* x, uint8_t* dst, int64_t n_blocks);
void QuantizeQ6_K(const float* x, uint8_t* dst, int64_t n_blocks);
void QuantizeIQ4_XS(const float* x, uint8_t* dst, int64_t n_blocks);

}  // namespace ridge::kquants
