#pragma once
// Tokens → statements (ast.h). Throws TemplateError with the line for a
// syntax error: an unknown tag, a missing end tag, an unexpected token.
// Nesting deeper than kMaxParseDepth is refused (a template is user data).
#include <vector>

#include "ridge/jinja/ast.h"
#include "ridge/jinja/lexer.h"

namespace ridge::jinja {

inline constexpr int kMaxParseDepth = 200;

Body Parse(const std::vector<Token>& tokens);

}  // namespace ridge::jinja
