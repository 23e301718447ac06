#pragma once
// Tensor element types with GGUF's numbering and exact block layouts.
// A row of n elements of a block type occupies (n / block_elems) * block_bytes
// bytes; n must be a multiple of block_elems.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace ridge {

enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ4_NL = 20,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kBF16 = 30,
  kMXFP4 = 39,
};

struct GgmlTypeTraits {
  const char* name;    // "F32", "Q4_K", ... as llama.cpp prints them
  int64_t block_elems;  // elements per block (1 for plain types)
  int64_t block_bytes;  // bytes per block
  bool can_dequantize;  // a reference dequantizer exists (DequantizeRow)
};

// nullopt for numbers GGUF does not define (or that ridge does not know).
std::optional<GgmlTypeTraits> FindGgmlType(uint32_t raw_type);
// For a known type; RIDGE_CHECKs that it is known.
const GgmlTypeTraits& TraitsOf(GgmlType type);
const char* GgmlTypeName(GgmlType type);
// "F32", "q8_0", ... case-insensitive; nullopt if unknown.
std::optional<GgmlType> ParseGgmlType(const std::string& name);

// Bytes of a row of n elements; RIDGE_CHECKs n is a multiple of the block.
int64_t RowBytes(GgmlType type, int64_t n);

// Block layouts (little-endian, packed, as in ggml).
constexpr int kQK4_0 = 32;
struct BlockQ4_0 { uint16_t d; uint8_t qs[kQK4_0 / 2]; };          // 18 bytes
constexpr int kQK4_1 = 32;
struct BlockQ4_1 { uint16_t d; uint16_t m; uint8_t qs[kQK4_1 / 2]; };  // 20 bytes
constexpr int kQK5_0 = 32;
struct BlockQ5_0 { uint16_t d; uint8_t qh[4]; uint8_t qs[kQK5_0 / 2]; };  // 22 bytes
constexpr int kQK5_1 = 32;
struct BlockQ5_1 { uint16_t d; uint16_t m; uint8_t qh[4]; uint8_t qs[kQK5_1 / 2]; };  // 24 bytes
constexpr int kQK8_0 = 32;
struct BlockQ8_0 { uint16_t d; int8_t qs[kQK8_0]; };  // 34 bytes
constexpr int kQK_K = 256;
constexpr int kKScaleBytes = 12;
struct BlockQ4_K { uint16_t d; uint16_t dmin; uint8_t scales[kKScaleBytes]; uint8_t qs[kQK_K / 2]; };  // 144
struct BlockQ5_K { uint16_t d; uint16_t dmin; uint8_t scales[kKScaleBytes]; uint8_t qh[kQK_K / 8]; uint8_t qs[kQK_K / 2]; };  // 176
struct BlockQ6_K { uint8_t ql[kQK_K / 2]; uint8_t qh[kQK_K / 4]; int8_t scales[kQK_K / 16]; uint16_t d; };  // 210
struct BlockQ2_K { uint8_t scales[kQK_K / 16]; uint8_t qs[kQK_K / 4]; uint16_t d; uint16_t dmin; };  // 84
struct BlockQ3_K { uint8_t hmask[kQK_K / 8]; uint8_t qs[kQK_K / 4]; uint8_t scales[kKScaleBytes]; uint16_t d; };  // 110
// Non-linear 4-bit: codes index a fixed table of 16 int8 levels (kIq4NlLevels).
constexpr int kQK4_NL = 32;
// IQ4_NL / IQ4_XS: element = d · kIq4NlLevels[code] (ggml's kvalues_iq4nl).
inline constexpr int8_t kIq4NlLevels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};
struct BlockIQ4_NL { uint16_t d; uint8_t qs[kQK4_NL / 2]; };  // 18 bytes
// IQ4_XS: IQ4_NL codes in 8 sub-blocks of 32, each with a 6-bit scale (low 4
// bits in scales_l, high 2 in scales_h) minus 32, times the f16 d.
struct BlockIQ4_XS { uint16_t d; uint16_t scales_h; uint8_t scales_l[kQK_K / 64]; uint8_t qs[kQK_K / 2]; };  // 136
// MXFP4 (OCP microscaling, gpt-oss's expert weights): 32 E2M1 codes sharing
// one E8M0 exponent e. Element = 2^(e − 128) · kMxfp4Levels[code]: the levels
// are the E2M1 values doubled (ggml's kvalues_mxfp4), so the scale is halved
// (ggml_e8m0_to_fp32_half). Codes are packed as IQ4_NL's: low nibble of qs[j]
// is element j, high nibble element j + 16.
constexpr int kQK_MXFP4 = 32;
inline constexpr int8_t kMxfp4Levels[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
struct BlockMXFP4 { uint8_t e; uint8_t qs[kQK_MXFP4 / 2]; };  // 17 bytes

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockMXFP4) == 17);

}  // namespace ridge
