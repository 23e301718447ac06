#pragma once
// A compiled grammar: a context-free grammar over BYTES. Every terminal is a
// set of bytes; a character class over Unicode code points is compiled into
// alternatives of UTF-8 byte sequences (see utf8_ranges.h), so the automaton
// (matcher.h) never decodes UTF-8 and a token that ends inside a character is
// simply a prefix like any other.
//
// Layout, as llama.cpp's llama_grammar: one flat array of elements; each
// alternative of a rule is a run of elements ended by kEnd. A position is an
// index into `elements`.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace ridge::grammar {

// 256-bit set of byte values.
struct ByteSet {
  std::array<uint64_t, 4> words{};

  bool Has(uint8_t byte) const { return (words[byte >> 6] >> (byte & 63)) & 1; }
  void AddRange(uint8_t first, uint8_t last) {
    for (int b = first; b <= last; ++b) words[b >> 6] |= uint64_t{1} << (b & 63);
  }
  bool Empty() const { return (words[0] | words[1] | words[2] | words[3]) == 0; }
  bool operator==(const ByteSet&) const = default;
  auto operator<=>(const ByteSet&) const = default;
};

struct Element {
  enum class Kind : uint8_t {
    kBytes,  // one byte from byte_sets[id]
    kRule,   // the rule `id`
    kEnd,    // end of the alternative
  };
  Kind kind = Kind::kEnd;
  int32_t id = 0;

  bool operator==(const Element&) const = default;
};

struct Grammar {
  std::vector<Element> elements;                        // every alternative, each ended by kEnd
  std::vector<std::vector<int32_t>> rule_alternatives;  // [rule] start positions of its alternatives
  std::vector<std::string> rule_names;                  // [rule] as written, or generated ("value/3")
  // [rule] made by the builder for a group, repetition or character class
  // rather than named by the grammar's author. The token-mask cache keys its
  // entries by the stack from the innermost named rule up (token_masker.h).
  std::vector<uint8_t> rule_generated;
  std::vector<int32_t> position_rule;                   // [position] the rule whose alternative holds it
  std::vector<ByteSet> byte_sets;                       // distinct terminals
  int32_t root = 0;

  const ByteSet& Bytes(int32_t position) const { return byte_sets[elements[position].id]; }
  bool IsEnd(int32_t position) const { return elements[position].kind == Element::Kind::kEnd; }
};

}  // namespace ridge::grammar
