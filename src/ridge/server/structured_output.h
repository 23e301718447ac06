#pragma once
// The request fields that constrain what a generation may say, compiled to
// one grammar (ridge/grammar) for the engine:
//   response_format {"type": "text"}                      nothing (as absent)
//   response_format {"type": "json_object"}               any JSON object
//   response_format {"type": "json_schema", "json_schema": {"name", "schema", "strict", "description"}}
//                                                         JSON valid against `schema`
//                                                         (json_schema_to_gbnf.h; `strict` true or false
//                                                         alike: the schema is always enforced)
//   grammar "…"                                           a GBNF grammar's language (llama.cpp's format)
//   regex "…"                                             text matching the regex whole (regex_to_gbnf.h)
// At most one of them per request. Every problem is an ApiError 400 naming
// the field, with the converter's message (the schema's JSON pointer and the
// keyword, or the regex offset): nothing that fails here reaches the engine.
//
// Compiled grammars are cached by their source text, so a client that sends
// the same schema or grammar with every request compiles it once.
#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <string_view>

#include "ridge/grammar/grammar.h"

namespace ridge::server {

// A request's output constraint, and the field that set it.
struct StructuredOutput {
  std::shared_ptr<const grammar::Grammar> grammar;  // null: the request sets none
  std::string param;                                // "grammar", "response_format" or "regex"; "" with none
};

// `body` is the parsed request; `raw_body` its text, parsed again here (only
// when a schema is present) to keep the schema's property order, which
// nlohmann::json's sorted objects lose (empty: the sorted order).
StructuredOutput ParseStructuredOutput(const nlohmann::json& body, std::string_view raw_body);

// A JSON Schema's text compiled (through the same cache); a schema the
// converter refuses is a 400 naming `param`.
std::shared_ptr<const grammar::Grammar> CompileJsonSchemaGrammar(const std::string& schema_text,
                                                                 const std::string& param);

}  // namespace ridge::server
