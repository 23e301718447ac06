#pragma once
// Template source → tokens, with Jinja2's whitespace control applied as
// transformers configures it: trim_blocks (the newline after a block or
// comment tag is dropped), lstrip_blocks (spaces and tabs from the start of a
// line up to a block or comment tag are dropped), `{%-`/`-%}` strip all
// whitespace on that side, `{%+`/`+%}` keep it; line endings become "\n" and
// one trailing newline of the source is dropped (keep_trailing_newline off).
#include <string>
#include <string_view>
#include <vector>

namespace ridge::jinja {

enum class TokenType {
  kText,        // literal output
  kVarBegin,    // {{
  kVarEnd,      // }}
  kBlockBegin,  // {%
  kBlockEnd,    // %}
  kName,
  kString,      // text holds the decoded value
  kInt,
  kFloat,
  kOperator,    // + - * / // % ** ~ == != < <= > >= = . , : | ( ) [ ] { }
  kEnd,
};

struct Token {
  TokenType type;
  std::string text;
  int line;
};

struct LexOptions {
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

// Throws TemplateError (with the line) for an unclosed tag, comment or string.
std::vector<Token> Lex(std::string_view source, const LexOptions& options);

}  // namespace ridge::jinja
