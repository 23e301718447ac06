#pragma once
// GBNF grammars the grammar tests share (written for these tests in
// llama.cpp's style; json is close to llama.cpp's grammars/json.gbnf).
#include <string_view>

namespace ridge::grammar::testing {

inline constexpr std::string_view kJsonGbnf = R"gbnf(# any JSON value
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt/] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9]{1,16})? ws

# Optional space: at most one newline and up to 20 spaces or tabs
ws ::= | " " | "\n" [ \t]{0,20}
)gbnf";

inline constexpr std::string_view kArithmeticGbnf = R"gbnf(root ::= expr
expr ::= term (("+" | "-") term)*
term ::= factor (("*" | "/") factor)*
factor ::= number | "(" expr ")" | "-" factor
number ::= [0-9]+
)gbnf";

inline constexpr std::string_view kListGbnf = R"gbnf(root ::= item+
item ::= "- " [^\n]+ "\n"
)gbnf";

}  // namespace ridge::grammar::testing
