#pragma once
// Python strings count and index code points; ours are UTF-8 bytes.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ridge::jinja {

// Byte offset where each code point starts, plus s.size() at the end.
std::vector<size_t> CodePointOffsets(std::string_view s);
// The code point at s[i..], advancing i (invalid bytes are taken one at a time).
uint32_t DecodeCodePoint(std::string_view s, size_t& i);
void AppendUtf8(std::string& out, uint32_t cp);

}  // namespace ridge::jinja
