#pragma once
// Python's str methods that chat templates call, on UTF-8 text. Case
// conversions change ASCII letters only.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ridge::jinja {

// str.strip/lstrip/rstrip: `chars` absent strips whitespace.
std::string PyStrip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right);
// str.split(sep=None, maxsplit=-1).
std::vector<std::string> PySplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit);
std::string PyReplace(std::string_view s, std::string_view old, std::string_view replacement, int64_t count);
std::string AsciiUpper(std::string_view s);
std::string AsciiLower(std::string_view s);
std::string PyCapitalize(std::string_view s);  // first letter upper, the rest lower
std::string PyTitle(std::string_view s);       // each word's first letter upper, the rest lower
bool IsPyWhitespace(uint32_t cp);

}  // namespace ridge::jinja
