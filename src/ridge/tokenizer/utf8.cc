#include "ridge/tokenizer/utf8.h"

#include "ridge/base/error.h"

namespace ridge::utf8 {

SeqInfo Classify(std::string_view s) {
  RIDGE_CHECK(!s.empty());
  const auto b0 = static_cast<uint8_t>(s[0]);
  if (b0 < 0x80) return {SeqKind::kValid, 1};
  int length = 0;
  uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    if (b0 == 0xE0) lo = 0xA0;  // no overlongs
    if (b0 == 0xED) hi = 0x9F;  // no surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    if (b0 == 0xF0) lo = 0x90;  // no overlongs
    if (b0 == 0xF4) hi = 0x8F;  // nothing above U+10FFFF
  } else {
    return {SeqKind::kInvalid, 1};  // 0x80..0xC1, 0xF5..0xFF never start a character
  }
  for (int i = 1; i < length; ++i) {
    if (static_cast<size_t>(i) >= s.size()) return {SeqKind::kIncomplete, i};
    const auto b = static_cast<uint8_t>(s[i]);
    const uint8_t min = i == 1 ? lo : 0x80;
    const uint8_t max = i == 1 ? hi : 0xBF;
    if (b < min || b > max) return {SeqKind::kInvalid, i};
  }
  return {SeqKind::kValid, length};
}

bool IsValid(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const SeqInfo info = Classify(s.substr(i));
    if (info.kind != SeqKind::kValid) return false;
    i += static_cast<size_t>(info.n_bytes);
  }
  return true;
}

void AppendCodepoint(uint32_t cp, std::string* out) {
  RIDGE_CHECK(cp <= 0x10FFFF);
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

void DrainValid(std::string* bytes, bool final, std::string* out) {
  const std::string_view s = *bytes;
  size_t i = 0;
  while (i < s.size()) {
    const SeqInfo info = Classify(s.substr(i));
    if (info.kind == SeqKind::kIncomplete && !final) break;
    if (info.kind == SeqKind::kValid) {
      out->append(s.substr(i, static_cast<size_t>(info.n_bytes)));
    } else {
      out->append(kReplacement);
    }
    i += static_cast<size_t>(info.n_bytes);
  }
  bytes->erase(0, i);
}

}  // namespace ridge::utf8
