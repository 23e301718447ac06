#pragma once
// The GBNF rules JSON is made of, defined on demand in one GbnfRules: the
// JSON Schema converter and json_object mode share them.
//
// Conventions every rule here keeps (json_schema_to_gbnf.cc relies on them):
//  - a value rule matches the value alone: no whitespace before or after it;
//    containers put `ws` after `{`, `[`, `:`, `,` and after each member;
//  - `ws` is bounded: nothing, one space, or one newline followed by at most
//    kMaxIndent spaces or tabs. Pretty-printed JSON (indent up to 20 columns)
//    fits; a model cannot pad forever between two tokens;
//  - strings take any character JSON allows, raw or escaped, except that a
//    \u escape never names a surrogate (so one escape is one character and
//    minLength / maxLength count exactly);
//  - numbers have at most 16 integer digits, 16 fraction digits and a 2-digit
//    exponent (bounded, so a model cannot write digits forever).
#include <map>
#include <string>
#include <vector>

#include "ridge/grammar/gbnf_writer.h"

namespace ridge::grammar {

inline constexpr int kMaxIndent = 20;

class JsonPrimitives {
 public:
  explicit JsonPrimitives(GbnfRules* rules) : rules_(rules) {}

  // Each returns the name of a rule, defining it the first time.
  std::string Ws();
  std::string Char();     // one character of a JSON string's inside
  std::string String();   // "..." with any content
  std::string Integer();  // -?(0|[1-9][0-9]{0,15})
  std::string Number();
  std::string Boolean();
  std::string Null();
  std::string Value();  // any JSON value
  std::string Object();  // any JSON object
  std::string Array();   // any JSON array
  // A quoted string in one of the supported formats (date, time, date-time,
  // uuid, email); "" for another name.
  std::string Format(const std::string& format);
  // A quoted key written without escapes that is none of `keys` (the
  // declared property names, so that an additional property never repeats
  // one of them).
  std::string KeyNotIn(const std::vector<std::string>& keys, const std::string& name_hint);

 private:
  // The rule for `what`, named after it (or a free variant of the name),
  // defined by calling `body` the first time (bodies may refer to rules).
  template <typename F>
  std::string Lazy(const std::string& what, F body);

  GbnfRules* rules_;
  std::map<std::string, std::string> names_;  // what -> rule name
};

}  // namespace ridge::grammar
