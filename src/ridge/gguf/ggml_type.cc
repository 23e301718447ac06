#include "ridge/gguf/ggml_type.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "ridge/base/error.h"

namespace ridge {
namespace {

struct TypeEntry {
  GgmlType type;
  GgmlTypeTraits traits;
};

// Block sizes as in ggml.c's type_traits table.
constexpr std::array<TypeEntry, 23> kTypes{{
    {GgmlType::kF32, {"F32", 1, 4, true}},
    {GgmlType::kF16, {"F16", 1, 2, true}},
    {GgmlType::kQ4_0, {"Q4_0", kQK4_0, sizeof(BlockQ4_0), true}},
    {GgmlType::kQ4_1, {"Q4_1", kQK4_1, sizeof(BlockQ4_1), true}},
    {GgmlType::kQ5_0, {"Q5_0", kQK5_0, sizeof(BlockQ5_0), true}},
    {GgmlType::kQ5_1, {"Q5_1", kQK5_1, sizeof(BlockQ5_1), true}},
    {GgmlType::kQ8_0, {"Q8_0", kQK8_0, sizeof(BlockQ8_0), true}},
    {GgmlType::kQ8_1, {"Q8_1", 32, 36, false}},     // fp16 d, fp16 s, 32 × int8
    {GgmlType::kQ2_K, {"Q2_K", kQK_K, sizeof(BlockQ2_K), true}},
    {GgmlType::kQ3_K, {"Q3_K", kQK_K, sizeof(BlockQ3_K), true}},
    {GgmlType::kQ4_K, {"Q4_K", kQK_K, sizeof(BlockQ4_K), true}},
    {GgmlType::kQ5_K, {"Q5_K", kQK_K, sizeof(BlockQ5_K), true}},
    {GgmlType::kQ6_K, {"Q6_K", kQK_K, sizeof(BlockQ6_K), true}},
    {GgmlType::kQ8_K, {"Q8_K", kQK_K, 292, false}},  // f32 d + 256 × int8 + 16 × int16
    {GgmlType::kIQ4_NL, {"IQ4_NL", kQK4_NL, sizeof(BlockIQ4_NL), true}},
    {GgmlType::kIQ4_XS, {"IQ4_XS", kQK_K, sizeof(BlockIQ4_XS), true}},
    {GgmlType::kI8, {"I8", 1, 1, false}},
    {GgmlType::kI16, {"I16", 1, 2, false}},
    {GgmlType::kI32, {"I32", 1, 4, false}},
    {GgmlType::kI64, {"I64", 1, 8, false}},
    {GgmlType::kF64, {"F64", 1, 8, false}},
    {GgmlType::kBF16, {"BF16", 1, 2, true}},
    {GgmlType::kMXFP4, {"MXFP4", kQK_MXFP4, sizeof(BlockMXFP4), true}},
}};

}  // namespace

std::optional<GgmlTypeTraits> FindGgmlType(uint32_t raw_type) {
  for (const auto& e : kTypes)
    if (static_cast<uint32_t>(e.type) == raw_type) return e.traits;
  return std::nullopt;
}

const GgmlTypeTraits& TraitsOf(GgmlType type) {
  for (const auto& e : kTypes)
    if (e.type == type) return e.traits;
  CheckFailed("known GgmlType", __FILE__, __LINE__);
}

const char* GgmlTypeName(GgmlType type) { return TraitsOf(type).name; }

std::optional<GgmlType> ParseGgmlType(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  for (const auto& e : kTypes)
    if (upper == e.traits.name) return e.type;
  return std::nullopt;
}

int64_t RowBytes(GgmlType type, int64_t n) {
  const GgmlTypeTraits& t = TraitsOf(type);
  RIDGE_CHECK(n >= 0 && n % t.block_elems == 0);
  return n / t.block_elems * t.block_bytes;
}

}  // namespace ridge
