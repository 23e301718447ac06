#pragma once
// Weight panels: the layout Q8_0 and Q4_0 matrices take in memory once they
// are repacked at load (kernels::RepackInPlace), and the layout the AVX-512
// panel kernels read. Rows are taken 32 at a time (a panel); panel p holds
// rows [32p, 32p + 32) in exactly the bytes those rows take in the file, so a
// repacked matrix occupies the same memory and a slice of whole panels (Q/K/V
// of a fused tensor, one expert of a stack) is still a matrix. Per block b of
// 32 columns, one after the other:
//   Q8_0 (1088 bytes): u8  [8 groups g][32 rows j][4]  w[j][32b + 4g + i] + 128
//                      f16 [32 rows]                    the rows' block scales
//   Q4_0 ( 576 bytes): u8  [4 groups g][32 rows j][4]  file byte 4g + i of row j's block:
//                                                       low nibble element 4g + i, high 16 + 4g + i
//                      f16 [32 rows]
// so one 64-byte load gives a vpdpbusd operand for 16 rows (Q4_0: two, the low
// and the high nibbles), and one vcvtph2ps 16 rows' scales. The bytes are a
// permutation of the file's (Q8_0: each quant + 128), so unpacking gives the
// file's bytes back exactly.
//
// Plain constants only: included by the ISA files.
#include <cstdint>

namespace ridge::kernels::panels {

constexpr int64_t kRows = 32;          // rows of a panel
constexpr int64_t kBlockElems = 32;    // Q8_0 / Q4_0 elements per block
constexpr int64_t kQ8_0QuantBytes = 8 * kRows * 4;   // per block of a panel, then the scales
constexpr int64_t kQ4_0QuantBytes = 4 * kRows * 4;
constexpr int64_t kScaleBytes = kRows * 2;
constexpr int64_t kQ8_0BlockBytes = kQ8_0QuantBytes + kScaleBytes;  // = 32 rows × sizeof(BlockQ8_0)
constexpr int64_t kQ4_0BlockBytes = kQ4_0QuantBytes + kScaleBytes;  // = 32 rows × sizeof(BlockQ4_0)

}  // namespace ridge::kernels::panels
