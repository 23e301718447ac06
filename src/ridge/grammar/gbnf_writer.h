#pragma once
// Building blocks for writing GBNF text (llama.cpp's grammar format), shared
// by the JSON Schema and regex front ends. Everything here returns GBNF
// *expressions* (what may stand on the right of `::=`); GbnfRules collects
// named rules and prints the whole grammar.
//
// Code points are written as escapes (\xHH, \uHHHH, \UHHHHHHHH) whenever they
// are not printable ASCII, so the text stays 7-bit and unambiguous.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ridge::grammar {

// A set of Unicode code points as sorted, disjoint, non-adjacent closed ranges.
class CodePointSet {
 public:
  static constexpr uint32_t kMaxCodePoint = 0x10FFFF;

  CodePointSet() = default;
  static CodePointSet Of(uint32_t cp) { return Range(cp, cp); }
  static CodePointSet Range(uint32_t lo, uint32_t hi);
  static CodePointSet All() { return Range(0, kMaxCodePoint); }

  void Add(uint32_t lo, uint32_t hi);
  void Add(const CodePointSet& other);
  CodePointSet Complement() const;
  CodePointSet Intersect(const CodePointSet& other) const;
  CodePointSet Minus(const CodePointSet& other) const { return Intersect(other.Complement()); }
  bool Contains(uint32_t cp) const;
  bool empty() const { return ranges_.empty(); }
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return ranges_; }

 private:
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;
};

// "..." matching exactly these bytes, read as UTF-8 (invalid UTF-8 bytes are
// written as \xHH and so stand for the code point of that value).
std::string GbnfLiteral(std::string_view utf8);

// [...] or [^...], whichever is shorter; the set must not be empty.
std::string GbnfCharClass(const CodePointSet& set);

// `item` repeated between min_count and max_count times (max_count < 0:
// unbounded), written without GBNF's {m,n} so that every matcher accepts it:
// a bounded tail nests, (x (x x?)?)?, which keeps the grammar unambiguous.
// `separator` (an expression, or empty) goes between consecutive items.
std::string GbnfRepeat(const std::string& item, int64_t min_count, int64_t max_count,
                       const std::string& separator = "");

// Wraps an expression in parentheses unless it is already one atom.
std::string GbnfGroup(const std::string& expression);

// Named rules of one grammar, printed in the order they were first defined.
class GbnfRules {
 public:
  // A name free in this grammar, derived from `hint` (other characters than
  // letters, digits and '-' become '-'; a suffix makes it unique).
  std::string FreshName(std::string_view hint);
  // Defines (or, for a name reserved by FreshName, fills in) a rule.
  void Define(const std::string& name, std::string expression);
  bool Has(const std::string& name) const { return bodies_.count(name) != 0; }
  // `name ::= body` lines, "root" first.
  std::string Text() const;

 private:
  std::vector<std::string> order_;
  std::map<std::string, std::string> bodies_;
  std::map<std::string, int64_t> next_suffix_;  // FreshName's next suffix to try, by base
};

}  // namespace ridge::grammar
