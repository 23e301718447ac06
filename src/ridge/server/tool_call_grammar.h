#pragma once
// Forced tool calls (tool_choice "required" or a named function) as a
// grammar the reply must follow, as vLLM forces them, whatever format the
// model's template teaches:
//   named     the reply is the function's arguments: JSON valid against its
//             `parameters` (the empty object when it has none, as OpenAI
//             reads a function without parameters); the call's name is the
//             one chosen;
//   required  the reply is a JSON array of calls
//             [{"name": <one of the tools>, "parameters": <its arguments>}, ...],
//             one or more (exactly one when parallel_tool_calls is false),
//             read by ToolCallParser as ToolCallFormat::kJson.
// A function's schema that the converter cannot take is a 400 naming
// tools[i].function.parameters.
#include <memory>

#include <nlohmann/json.hpp>

#include "ridge/grammar/grammar.h"
#include "ridge/server/openai_request.h"

namespace ridge::server {

// The JSON Schema of a forced reply; null when tool_choice forces nothing.
nlohmann::ordered_json ForcedToolCallSchema(const ChatRequest& request);

// ForcedToolCallSchema compiled (cached by its text); null when nothing is forced.
std::shared_ptr<const grammar::Grammar> ForcedToolCallGrammar(const ChatRequest& request);

}  // namespace ridge::server
