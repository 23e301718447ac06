#pragma once
// Code-point ranges as UTF-8 byte-range sequences: the set of encodings of
// [first, last] is a union of sequences like [E1-EC][80-BF][80-BF], each
// byte position independent of the others (the construction of Russ Cox's
// utf8-ranges / Rust's regex-syntax Utf8Sequences). Surrogates (U+D800-DFFF)
// have no UTF-8 encoding and are left out.
#include <cstdint>
#include <string>
#include <vector>

namespace ridge::grammar {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

struct CodePointRange {
  uint32_t first = 0;
  uint32_t last = 0;  // inclusive
};

struct Utf8Sequence {
  int n_bytes = 0;
  uint8_t first[4] = {};  // [n_bytes] lowest byte at each position
  uint8_t last[4] = {};   // [n_bytes] highest byte at each position
};

// The encodings of every code point in [first, last] (first <= last <= kMaxCodePoint).
std::vector<Utf8Sequence> Utf8Sequences(uint32_t first, uint32_t last);

// Sorted, merged ranges; with `negate`, their complement within [0, kMaxCodePoint].
std::vector<CodePointRange> NormalizeRanges(std::vector<CodePointRange> ranges, bool negate);

// (A code point's own UTF-8 encoding: ridge::utf8::AppendCodepoint, tokenizer/utf8.h.)

}  // namespace ridge::grammar
