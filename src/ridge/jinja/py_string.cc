#include "ridge/jinja/py_string.h"

#include <cctype>

#include "ridge/jinja/utf8.h"

namespace ridge::jinja {

bool IsPyWhitespace(uint32_t cp) {
  return cp == ' ' || (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x1f) || cp == 0x85 || cp == 0xa0 ||
         cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f ||
         cp == 0x205f || cp == 0x3000;
}

std::string PyStrip(std::string_view s, const std::optional<std::string>& chars, bool left, bool right) {
  std::vector<uint32_t> set;
  if (chars)
    for (size_t i = 0; i < chars->size();) set.push_back(DecodeCodePoint(*chars, i));
  auto strip_it = [&](uint32_t cp) {
    if (!chars) return IsPyWhitespace(cp);
    for (uint32_t c : set)
      if (c == cp) return true;
    return false;
  };
  const std::vector<size_t> off = CodePointOffsets(s);
  size_t b = 0, e = off.size() - 1;  // code point indexes [b, e)
  auto cp_at = [&](size_t k) {
    size_t i = off[k];
    return DecodeCodePoint(s, i);
  };
  if (left)
    while (b < e && strip_it(cp_at(b))) ++b;
  if (right)
    while (e > b && strip_it(cp_at(e - 1))) --e;
  return std::string(s.substr(off[b], off[e] - off[b]));
}

std::vector<std::string> PySplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> parts;
  if (sep) {
    size_t start = 0;
    while (maxsplit < 0 || static_cast<int64_t>(parts.size()) < maxsplit) {
      const size_t at = s.find(*sep, start);
      if (at == std::string_view::npos) break;
      parts.emplace_back(s.substr(start, at - start));
      start = at + sep->size();
    }
    parts.emplace_back(s.substr(start));
    return parts;
  }
  size_t i = 0;
  auto skip_space = [&] {
    while (i < s.size()) {
      size_t j = i;
      if (!IsPyWhitespace(DecodeCodePoint(s, j))) break;
      i = j;
    }
  };
  skip_space();
  while (i < s.size()) {
    if (maxsplit >= 0 && static_cast<int64_t>(parts.size()) == maxsplit) {
      std::string rest(s.substr(i));
      parts.push_back(PyStrip(rest, std::nullopt, false, true));
      return parts;
    }
    const size_t start = i;
    while (i < s.size()) {
      size_t j = i;
      if (IsPyWhitespace(DecodeCodePoint(s, j))) break;
      i = j;
    }
    parts.emplace_back(s.substr(start, i - start));
    skip_space();
  }
  return parts;
}

std::string PyReplace(std::string_view s, std::string_view old, std::string_view replacement, int64_t count) {
  std::string out;
  if (old.empty()) {  // Python inserts the replacement between every code point
    const std::vector<size_t> off = CodePointOffsets(s);
    int64_t done = 0;
    for (size_t k = 0; k + 1 < off.size(); ++k) {
      if (count < 0 || done < count) {
        out += replacement;
        ++done;
      }
      out += s.substr(off[k], off[k + 1] - off[k]);
    }
    if (count < 0 || done < count) out += replacement;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t at = s.find(old, start);
    if (at == std::string_view::npos) break;
    out += s.substr(start, at - start);
    out += replacement;
    start = at + old.size();
    ++done;
  }
  out += s.substr(start);
  return out;
}

std::string AsciiUpper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string PyCapitalize(std::string_view s) {
  std::string out = AsciiLower(s);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

std::string PyTitle(std::string_view s) {
  std::string out(s);
  bool previous_cased = false;
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (std::isalpha(u)) {
      c = static_cast<char>(previous_cased ? std::tolower(u) : std::toupper(u));
      previous_cased = true;
    } else {
      previous_cased = u >= 0x80 && previous_cased;
    }
  }
  return out;
}

}  // namespace ridge::jinja
