#pragma once
// Typed, range-checked reads of request fields. Every failure is an ApiError
// 400 that names the field by its path ("stream_options.include_usage",
// "messages[2].content") and says what was expected and what came.
// A field that is absent or JSON null reads as "not given" (nullopt).
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ridge::server {

// Parses a request body as one JSON object. Rejects bodies that are not JSON
// (including invalid UTF-8 in strings), nest deeper than kMaxJsonDepth, or
// are not an object at the top.
inline constexpr int kMaxJsonDepth = 64;
nlohmann::json ParseJsonObject(std::string_view body);

// Deepest nesting of arrays/objects in `text`, ignoring brackets inside
// strings (exposed for tests). Stops counting early once past `limit`.
int JsonNestingDepth(std::string_view text, int limit);

// "a number", "a string", ...: how a JSON value's type is named in messages.
std::string JsonTypeName(const nlohmann::json& value);

class JsonFields {
 public:
  // `object` must outlive this view. `path` prefixes field names in messages
  // ("" at the top level, "stream_options" for a nested object).
  JsonFields(const nlohmann::json& object, std::string path);

  // The field's value, or nullptr when absent or null.
  const nlohmann::json* Find(std::string_view key) const;
  std::string Path(std::string_view key) const;

  std::optional<bool> Bool(std::string_view key) const;
  // A string that must be valid UTF-8 (nlohmann already checks input; this
  // also guards JSON built in code).
  std::optional<std::string> String(std::string_view key) const;
  // A finite number in [min, max] (or (min, max] with min_exclusive).
  std::optional<double> Number(std::string_view key, double min, double max, bool min_exclusive = false) const;
  // An integer in [min, max]; an integral float (16.0) is accepted, as
  // OpenAI's and vLLM's validators do.
  std::optional<int64_t> Integer(std::string_view key, int64_t min, int64_t max) const;
  // A seed: a signed 64-bit integer, as OpenAI's API defines it (2^63 and
  // above are refused, as the error message says), taken mod 2^64.
  std::optional<uint64_t> Seed(std::string_view key) const;
  // A nested object (ApiError if present and not an object).
  std::optional<JsonFields> Object(std::string_view key) const;

 private:
  const nlohmann::json& object_;
  std::string path_;
};

// Checks a value read elsewhere (array elements): an integer in [min, max].
int64_t IntegerValue(const nlohmann::json& value, const std::string& path, int64_t min, int64_t max);
// A string value that is valid UTF-8.
std::string StringValue(const nlohmann::json& value, const std::string& path);

}  // namespace ridge::server
