#pragma once
// UTF-8 well-formedness by the Unicode standard's table 3-7 (no overlongs, no
// surrogates, nothing above U+10FFFF), for the tokenizers and the streaming
// detokenizer.
#include <cstdint>
#include <string>
#include <string_view>

namespace ridge::utf8 {

enum class SeqKind {
  kValid,       // n_bytes form one well-formed character
  kIncomplete,  // all of the input (n_bytes) is a proper prefix of a well-formed character
  kInvalid,     // n_bytes (>= 1) form a maximal ill-formed subpart: one U+FFFD replaces them
};
struct SeqInfo {
  SeqKind kind;
  int n_bytes;
};

// Classifies the character that starts `s` (s must not be empty).
SeqInfo Classify(std::string_view s);

bool IsValid(std::string_view s);

// Appends the UTF-8 encoding of a code point (must be <= 0x10FFFF).
void AppendCodepoint(uint32_t codepoint, std::string* out);

inline constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Moves the well-formed prefix of `*bytes` to `*out`, each ill-formed subpart
// becoming U+FFFD. A trailing incomplete sequence stays in `*bytes` unless
// `final`, when it too becomes U+FFFD (and `*bytes` ends empty).
void DrainValid(std::string* bytes, bool final, std::string* out);

}  // namespace ridge::utf8
