#pragma once
// GGUF metadata values. Strings are copied out of the file (metadata is small
// next to tensors, and the values outlive parsing safely); arrays of numbers
// keep their element type.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace ridge {

enum class GgufValueType : uint32_t {
  kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5,
  kFloat32 = 6, kBool = 7, kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};
const char* GgufValueTypeName(GgufValueType type);

struct GgufArray;

// One metadata value. Integers of every width are kept with their exact type.
struct GgufValue {
  GgufValueType type = GgufValueType::kUint32;
  std::variant<uint64_t, int64_t, double, bool, std::string, std::vector<GgufValue>> data;
  GgufValueType array_elem_type = GgufValueType::kUint32;  // for kArray

  // Conversions; nullopt if the value has another kind (an unsigned value that
  // does not fit int64 is nullopt for AsInt).
  std::optional<int64_t> AsInt() const;
  std::optional<double> AsFloat() const;  // any numeric type
  std::optional<bool> AsBool() const;
  const std::string* AsString() const;
  const std::vector<GgufValue>* AsArray() const;

  static GgufValue Uint(GgufValueType t, uint64_t v);
  static GgufValue Int(GgufValueType t, int64_t v);
  static GgufValue Float(GgufValueType t, double v);
  static GgufValue Bool(bool v);
  static GgufValue String(std::string v);
  static GgufValue Array(GgufValueType elem_type, std::vector<GgufValue> elems);

  // Same type, element type and value (floats compare as stored, in double).
  friend bool operator==(const GgufValue& a, const GgufValue& b) = default;
};

}  // namespace ridge
