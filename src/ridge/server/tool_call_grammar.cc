#include "ridge/server/tool_call_grammar.h"

#include <fmt/format.h>

#include <string>

#include "ridge/server/api_error.h"
#include "ridge/server/structured_output.h"

namespace ridge::server {
namespace {

using ojson = nlohmann::ordered_json;

// A function's arguments schema: its `parameters`; without them, OpenAI's
// "empty parameter list" (the empty object).
ojson ParametersSchema(const ojson& tool) {
  const ojson& fn = tool.at("function");
  if (fn.contains("parameters") && !fn["parameters"].is_null()) return fn["parameters"];
  return ojson{{"type", "object"}, {"properties", ojson::object()}, {"additionalProperties", false}};
}

// Local references ("#", "#/$defs/x") re-pointed into `prefix`, where the
// schema now lives inside a larger document.
void RebaseRefs(ojson& schema, const std::string& prefix) {
  if (schema.is_object()) {
    for (auto& [key, value] : schema.items()) {
      if (key == "$ref" && value.is_string() && value.get<std::string>().starts_with("#"))
        value = prefix + value.get<std::string>().substr(1);
      else
        RebaseRefs(value, prefix);
    }
  } else if (schema.is_array()) {
    for (ojson& item : schema) RebaseRefs(item, prefix);
  }
}

// Which tool's parameters a converter error is about (the first that fails alone).
std::string FailingParametersParam(const ChatRequest& r) {
  for (size_t i = 0; i < r.tools.size(); ++i) {
    const ojson& fn = r.tools[i]["function"];
    if (r.tool_choice == ToolChoice::kNamed && fn["name"] != r.tool_choice_name) continue;
    try {
      CompileJsonSchemaGrammar(ParametersSchema(r.tools[i]).dump(), "");
    } catch (const ApiError&) {
      return fmt::format("tools[{}].function.parameters", i);
    }
  }
  return "tools";
}

}  // namespace

ojson ForcedToolCallSchema(const ChatRequest& r) {
  if (r.tool_choice == ToolChoice::kNamed) {
    for (const ojson& tool : r.tools)
      if (tool["function"]["name"] == r.tool_choice_name) return ParametersSchema(tool);
    return nullptr;  // (the parser has checked the name is among the tools)
  }
  if (r.tool_choice != ToolChoice::kRequired) return nullptr;
  ojson defs = ojson::object(), calls = ojson::array();
  for (size_t i = 0; i < r.tools.size(); ++i) {
    const std::string def = fmt::format("tool{}", i);
    ojson parameters = ParametersSchema(r.tools[i]);
    RebaseRefs(parameters, "#/$defs/" + def);
    defs[def] = std::move(parameters);
    calls.push_back({{"type", "object"},
                     {"properties",
                      {{"name", {{"const", r.tools[i]["function"]["name"]}}},
                       {"parameters", {{"$ref", "#/$defs/" + def}}}}},
                     {"required", {"name", "parameters"}},
                     {"additionalProperties", false}});
  }
  ojson schema{{"type", "array"}, {"items", {{"anyOf", std::move(calls)}}}, {"minItems", 1}};
  if (!r.parallel_tool_calls) schema["maxItems"] = 1;
  schema["$defs"] = std::move(defs);
  return schema;
}

std::shared_ptr<const grammar::Grammar> ForcedToolCallGrammar(const ChatRequest& r) {
  const ojson schema = ForcedToolCallSchema(r);
  if (schema.is_null()) return nullptr;
  try {
    return CompileJsonSchemaGrammar(schema.dump(), "tools");
  } catch (const ApiError& e) {
    ThrowInvalid(FailingParametersParam(r), e.what());
  }
}

}  // namespace ridge::server
