#pragma once
// Builds a Grammar rule by rule (the GBNF parser and, through it, the schema
// and regex converters) and checks it before use:
//   - every referenced rule is defined, the root exists;
//   - no rule is left-recursive (the automaton expands rules eagerly, so a
//     rule reaching itself without consuming a byte would never stop);
//   - every rule can produce some finite string (otherwise a sequence could
//     enter it and never be allowed to end).
// Failures are ridge::Error "grammar line L col C: ..." at the rule concerned.
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/grammar/grammar.h"
#include "ridge/grammar/utf8_ranges.h"

namespace ridge::grammar {

// Elements after expanding repetitions: "x{100000}" nested a few times would
// otherwise exhaust memory.
constexpr int64_t kMaxElements = int64_t{1} << 22;

struct SourcePos {
  int line = 1;  // 1-based
  int col = 1;   // 1-based, in bytes
};

template <typename... Args>
[[noreturn]] void FailAt(SourcePos pos, fmt::format_string<Args...> format, Args&&... args) {
  Fail("grammar line {} col {}: {}", pos.line, pos.col, fmt::format(format, std::forward<Args>(args)...));
}

class GrammarBuilder {
 public:
  using Alternative = std::vector<Element>;  // without the closing kEnd

  // The rule written `name`, created undefined at its first mention.
  int32_t RuleNamed(std::string_view name, SourcePos mention);
  // A fresh rule for a group, repetition or character class, named after
  // `base_name` ("value_3").
  int32_t NewRule(std::string_view base_name, SourcePos pos);
  // Gives `rule` its alternatives. Throws if it already has them.
  void Define(int32_t rule, std::vector<Alternative> alternatives, SourcePos pos);

  Element Bytes(const ByteSet& set);
  // One code point from `ranges` (normalized, non-empty), as UTF-8: a kBytes
  // element when every code point is ASCII, else a rule of byte sequences
  // (shared by identical classes).
  Element CodePoints(const std::vector<CodePointRange>& ranges, SourcePos pos);

  int64_t n_elements() const { return n_elements_; }

  // Checks the rules and lays them out. Throws ridge::Error.
  std::shared_ptr<const Grammar> Build(std::string_view root_name);

 private:
  struct Rule {
    std::string name;
    std::vector<Alternative> alternatives;
    bool defined = false;
    bool generated = false;
    SourcePos pos;  // definition, or first mention while undefined
  };
  void CheckDefined() const;
  void CheckProductive() const;
  void CheckLeftRecursion() const;
  std::vector<bool> NullableRules() const;

  std::vector<Rule> rules_;
  std::map<std::string, int32_t, std::less<>> rule_ids_;
  std::map<std::string, int32_t> name_counts_;                // generated names per base
  std::vector<ByteSet> byte_sets_;
  std::map<ByteSet, int32_t> byte_set_ids_;
  std::map<std::vector<std::pair<uint32_t, uint32_t>>, int32_t> class_rules_;
  int64_t n_elements_ = 0;
};

}  // namespace ridge::grammar
