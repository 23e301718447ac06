#pragma once
// llama.cpp's GBNF grammar format (grammars/README.md there), so existing
// grammars work unchanged:
//   root  ::= item ("," item)*      # rules; `root` is the start symbol
//   item  ::= "lit\n" | [a-z0-9_] | [^"\\] | . | (group) | name
//   count ::= x* | x+ | x? | x{2} | x{2,} | x{2,5} | x{,5}
// Literals take the escapes \n \r \t \\ \" \[ \] \xHH \uHHHH \UHHHHHHHH (code
// points, written as UTF-8); a character class and `.` match one whole code
// point. Newlines end a rule except inside parentheses, after `::=` or `|`,
// and before a line starting with `|`.
// Not supported (refused by name): token references <[id]> / <|name|>, and
// left-recursive rules.
#include <memory>
#include <string_view>

#include "ridge/grammar/grammar.h"

namespace ridge::grammar {

// Throws ridge::Error "grammar line L col C: <what>".
std::shared_ptr<const Grammar> ParseGbnf(std::string_view text);

}  // namespace ridge::grammar
