#include "ridge/gguf/gguf_value.h"

#include <limits>

#include "ridge/base/error.h"

namespace ridge {

const char* GgufValueTypeName(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8: return "uint8";
    case GgufValueType::kInt8: return "int8";
    case GgufValueType::kUint16: return "uint16";
    case GgufValueType::kInt16: return "int16";
    case GgufValueType::kUint32: return "uint32";
    case GgufValueType::kInt32: return "int32";
    case GgufValueType::kFloat32: return "float32";
    case GgufValueType::kBool: return "bool";
    case GgufValueType::kString: return "string";
    case GgufValueType::kArray: return "array";
    case GgufValueType::kUint64: return "uint64";
    case GgufValueType::kInt64: return "int64";
    case GgufValueType::kFloat64: return "float64";
  }
  return "unknown";
}

std::optional<int64_t> GgufValue::AsInt() const {
  if (const auto* u = std::get_if<uint64_t>(&data)) {
    if (*u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(*u);
  }
  if (const auto* i = std::get_if<int64_t>(&data)) return *i;
  return std::nullopt;
}

std::optional<double> GgufValue::AsFloat() const {
  if (const auto* u = std::get_if<uint64_t>(&data)) return static_cast<double>(*u);
  if (const auto* i = std::get_if<int64_t>(&data)) return static_cast<double>(*i);
  if (const auto* f = std::get_if<double>(&data)) return *f;
  return std::nullopt;
}

std::optional<bool> GgufValue::AsBool() const {
  if (const auto* b = std::get_if<bool>(&data)) return *b;
  return std::nullopt;
}

const std::string* GgufValue::AsString() const { return std::get_if<std::string>(&data); }

const std::vector<GgufValue>* GgufValue::AsArray() const { return std::get_if<std::vector<GgufValue>>(&data); }

GgufValue GgufValue::Uint(GgufValueType t, uint64_t v) {
  RIDGE_CHECK(t == GgufValueType::kUint8 || t == GgufValueType::kUint16 || t == GgufValueType::kUint32 ||
              t == GgufValueType::kUint64);
  GgufValue value;
  value.type = t;
  value.data = v;
  return value;
}

GgufValue GgufValue::Int(GgufValueType t, int64_t v) {
  RIDGE_CHECK(t == GgufValueType::kInt8 || t == GgufValueType::kInt16 || t == GgufValueType::kInt32 ||
              t == GgufValueType::kInt64);
  GgufValue value;
  value.type = t;
  value.data = v;
  return value;
}

GgufValue GgufValue::Float(GgufValueType t, double v) {
  RIDGE_CHECK(t == GgufValueType::kFloat32 || t == GgufValueType::kFloat64);
  GgufValue value;
  value.type = t;
  value.data = v;
  return value;
}

GgufValue GgufValue::Bool(bool v) {
  GgufValue value;
  value.type = GgufValueType::kBool;
  value.data = v;
  return value;
}

GgufValue GgufValue::String(std::string v) {
  GgufValue value;
  value.type = GgufValueType::kString;
  value.data = std::move(v);
  return value;
}

GgufValue GgufValue::Array(GgufValueType elem_type, std::vector<GgufValue> elems) {
  for (const auto& e : elems) RIDGE_CHECK(e.type == elem_type);
  GgufValue value;
  value.type = GgufValueType::kArray;
  value.array_elem_type = elem_type;
  value.data = std::move(elems);
  return value;
}

}  // namespace ridge
