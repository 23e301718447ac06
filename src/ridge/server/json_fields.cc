#include "ridge/server/json_fields.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>

#include "ridge/server/api_error.h"
#include "ridge/tokenizer/utf8.h"

namespace ridge::server {
namespace {

// Error messages quote what came, shortened and with invalid UTF-8 replaced.
std::string Shown(const nlohmann::json& value) {
  std::string text = DumpJson(value);
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  std::string clean;
  utf8::DrainValid(&text, /*final=*/true, &clean);
  return clean;
}

}  // namespace

int JsonNestingDepth(std::string_view text, int limit) {
  int depth = 0;
  int deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // skip the escaped character
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') {
      if (depth > 0) --depth;
    }
  }
  return deepest;
}

nlohmann::json ParseJsonObject(std::string_view body) {
  if (body.empty()) ThrowInvalid("", "the request body is empty; expected a JSON object");
  if (JsonNestingDepth(body, kMaxJsonDepth) > kMaxJsonDepth)
    ThrowInvalid("", fmt::format("the request body nests arrays/objects deeper than {} levels", kMaxJsonDepth));
  nlohmann::json value;
  try {
    value = nlohmann::json::parse(body.begin(), body.end());
  } catch (const nlohmann::json::exception& e) {
    // nlohmann's message may quote the offending (invalid UTF-8) bytes: clean it.
    std::string raw = e.what(), clean;
    utf8::DrainValid(&raw, /*final=*/true, &clean);
    ThrowInvalid("", "the request body is not valid JSON: " + clean, "invalid_json");
  }
  if (!value.is_object())
    ThrowInvalid("", fmt::format("the request body must be a JSON object, got {}", JsonTypeName(value)));
  return value;
}

std::string JsonTypeName(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "an integer";
    case nlohmann::json::value_t::number_float: return "a number";
    default: return "an unsupported value";
  }
}

JsonFields::JsonFields(const nlohmann::json& object, std::string path) : object_(object), path_(std::move(path)) {
  if (!object_.is_object())
    ThrowInvalid(path_, fmt::format("'{}' must be an object, got {}", path_.empty() ? "body" : path_,
                                    JsonTypeName(object_)));
}

const nlohmann::json* JsonFields::Find(std::string_view key) const {
  auto it = object_.find(key);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

std::string JsonFields::Path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

std::optional<bool> JsonFields::Bool(std::string_view key) const {
  const nlohmann::json* v = Find(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean())
    ThrowInvalid(Path(key), fmt::format("'{}' must be a boolean, got {} ({})", Path(key), JsonTypeName(*v), Shown(*v)));
  return v->get<bool>();
}

std::string StringValue(const nlohmann::json& value, const std::string& path) {
  if (!value.is_string())
    ThrowInvalid(path, fmt::format("'{}' must be a string, got {} ({})", path, JsonTypeName(value), Shown(value)));
  const std::string& s = value.get_ref<const std::string&>();
  if (!utf8::IsValid(s)) ThrowInvalid(path, fmt::format("'{}' is not valid UTF-8", path));
  return s;
}

std::optional<std::string> JsonFields::String(std::string_view key) const {
  const nlohmann::json* v = Find(key);
  if (!v) return std::nullopt;
  return StringValue(*v, Path(key));
}

std::optional<double> JsonFields::Number(std::string_view key, double min, double max, bool min_exclusive) const {
  const nlohmann::json* v = Find(key);
  if (!v) return std::nullopt;
  const std::string path = Path(key);
  if (!v->is_number())
    ThrowInvalid(path, fmt::format("'{}' must be a number, got {} ({})", path, JsonTypeName(*v), Shown(*v)));
  const double x = v->get<double>();
  const bool below = min_exclusive ? !(x > min) : !(x >= min);
  if (!std::isfinite(x) || below || x > max)
    ThrowInvalid(path, fmt::format("'{}' must be in {}{}, {}], got {}", path, min_exclusive ? "(" : "[", min, max,
                                   Shown(*v)));
  return x;
}

int64_t IntegerValue(const nlohmann::json& value, const std::string& path, int64_t min, int64_t max) {
  auto out_of_range = [&] {
    ThrowInvalid(path, fmt::format("'{}' must be an integer in [{}, {}], got {}", path, min, max, Shown(value)));
  };
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(max) || static_cast<int64_t>(u) < min) out_of_range();
    return static_cast<int64_t>(u);
  }
  if (value.is_number_integer()) {
    const int64_t i = value.get<int64_t>();
    if (i < min || i > max) out_of_range();
    return i;
  }
  if (value.is_number_float()) {
    const double x = value.get<double>();
    // 2^63 is the first double past int64; integral floats inside the range are accepted.
    if (!std::isfinite(x) || x != std::floor(x))
      ThrowInvalid(path, fmt::format("'{}' must be an integer, got {}", path, Shown(value)));
    if (x < static_cast<double>(min) || x > static_cast<double>(max) || std::fabs(x) >= 9.2233720368547758e18)
      out_of_range();
    return static_cast<int64_t>(x);
  }
  ThrowInvalid(path, fmt::format("'{}' must be an integer, got {} ({})", path, JsonTypeName(value), Shown(value)));
}

std::optional<int64_t> JsonFields::Integer(std::string_view key, int64_t min, int64_t max) const {
  const nlohmann::json* v = Find(key);
  if (!v) return std::nullopt;
  return IntegerValue(*v, Path(key), min, max);
}

std::optional<uint64_t> JsonFields::Seed(std::string_view key) const {
  const nlohmann::json* v = Find(key);
  if (!v) return std::nullopt;
  return static_cast<uint64_t>(IntegerValue(*v, Path(key), std::numeric_limits<int64_t>::min(),
                                            std::numeric_limits<int64_t>::max()));
}

std::optional<JsonFields> JsonFields::Object(std::string_view key) const {
  const nlohmann::json* v = Find(key);
  if (!v) return std::nullopt;
  return JsonFields(*v, Path(key));
}

}  // namespace ridge::server
