#pragma once
// Reference (scalar) conversion of one row of any supported type to float,
// and of float to the types ridge can write. These are the ground truth the
// SIMD kernels are tested against.
#include <cstdint>
#include <string>

#include "ridge/gguf/ggml_type.h"

namespace ridge {

// src holds RowBytes(type, n) bytes; dst receives n floats.
// RIDGE_CHECKs that the type can be dequantized and n fits its blocks.
void DequantizeRow(GgmlType type, const void* src, float* dst, int64_t n);

// Writes RowBytes(type, n) bytes. Supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1,
// Q5_0, Q5_1, IQ4_NL, MXFP4, and Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_XS
// (quantize_kquants.h). Codes and scales follow ggml's reference quantizers
// (Q*_0: scale from the block's absolute maximum; Q*_1: scale and minimum from
// its range; IQ4_NL: the best of a few candidate scales, as llama-quantize
// without an importance matrix; MXFP4: the exponent of the block's absolute
// maximum and the nearest level, as ggml's reference; the K-quants search
// their scales as ggml does).
void QuantizeRow(GgmlType type, const float* src, void* dst, int64_t n);
bool CanQuantizeTo(GgmlType type);
// "F32, F16, Q4_0, ..." : the types QuantizeRow writes, for messages.
std::string QuantizableTypeNames();

}  // namespace ridge
