#pragma once
// Regular expressions (the ECMAScript subset people write in JSON Schema's
// `pattern` and in the `regex` request field) → GBNF.
//
// Supported: literals and escapes (\n \t \r \f \v \0 \cX \xHH \uHHHH \u{H…}
// and identity escapes such as \. \/), `.` (any code point but \n \r \u2028
// \u2029), classes [a-z] [^…] with \d \w \s \D \W \S inside or outside them,
// groups (capturing, named, `(?:`), alternation, the quantifiers * + ? {m}
// {m,} {m,n} (lazy forms too: they match the same strings), and the anchors ^
// and $ at the start and end of a top-level alternative.
// Refused with a ridge::Error naming the construct and its offset:
// backreferences (\1, \k<name>), lookahead and lookbehind, \b \B, \p{…},
// inline flags, anchors elsewhere, repetition counts above kMaxRegexRepeat
// (each count becomes grammar text), and patterns whose grammar text would
// pass kMaxRegexGbnfBytes.
#include <cstdint>
#include <string>
#include <string_view>

#include "ridge/grammar/gbnf_writer.h"

namespace ridge::grammar {

inline constexpr int64_t kMaxRegexRepeat = 1000;
inline constexpr int64_t kMaxRegexGbnfBytes = int64_t{1} << 20;

struct RegexGbnfOptions {
  // JSON Schema's `pattern` semantics: the regex may match anywhere in the
  // string unless anchored (^ / $). Otherwise (the `regex` request field)
  // the whole text must match and ^ / $ at the ends change nothing.
  bool search = false;
  // The text is the inside of a JSON string: characters that JSON must
  // escape (" \ and controls) are matched as their escapes as Python's
  // json.dumps writes them (\" \\ \n \t \r \b \f \u00XX), and only so.
  bool json_string_content = false;
};

// Adds the rules the regex needs to `rules` (names start with `name_hint`)
// and returns a GBNF expression for it. Errors read "<what> at offset N of
// regex '<pattern>'".
std::string RegexToGbnfExpression(std::string_view pattern, const RegexGbnfOptions& options, GbnfRules* rules,
                                  std::string_view name_hint);

// A whole grammar (root rule "root") whose language is the strings the regex
// matches entirely.
std::string RegexToGbnf(std::string_view pattern);

}  // namespace ridge::grammar
