#include "ridge/server/structured_output.h"

#include <fmt/format.h>

#include <string>

#include "ridge/base/error.h"
#include "ridge/grammar/gbnf.h"
#include "ridge/grammar/grammar_cache.h"
#include "ridge/grammar/json_schema_to_gbnf.h"
#include "ridge/grammar/regex_to_gbnf.h"
#include "ridge/server/api_error.h"
#include "ridge/server/json_fields.h"

namespace ridge::server {
namespace {

using nlohmann::json;

// Grammars by "kind\0source": a client that sends the same schema with
// every request compiles it once, and its requests share one token-mask cache.
grammar::GrammarCache& Cache() {
  static grammar::GrammarCache cache(64);
  return cache;
}

// Converts with `to_gbnf` and parses the GBNF; a ridge::Error from either is
// the client's: a 400 naming `param`.
template <typename ToGbnf>
std::shared_ptr<const grammar::Grammar> Compile(const std::string& kind, const std::string& source,
                                                const std::string& param, ToGbnf to_gbnf) {
  try {
    return Cache().GetOrCompile(kind + '\0' + source, [&] { return grammar::ParseGbnf(to_gbnf()); });
  } catch (const ApiError&) {
    throw;
  } catch (const Error& e) {
    ThrowInvalid(param, fmt::format("'{}': {}", param, e.what()));
  }
}

// The schema's text with its properties in the order the client wrote them
// (or sorted, without the body's text).
std::string OrderedSchemaText(const json& schema, std::string_view raw_body) {
  if (raw_body.empty()) return schema.dump();
  const auto ordered = nlohmann::ordered_json::parse(raw_body);  // parsed once already: cannot fail
  return ordered["response_format"]["json_schema"]["schema"].dump();
}

std::shared_ptr<const grammar::Grammar> ResponseFormat(const json& format, std::string_view raw_body) {
  if (!format.is_object())
    ThrowInvalid("response_format", fmt::format("'response_format' must be an object, got {}", JsonTypeName(format)));
  JsonFields rf(format, "response_format");
  const std::string type = rf.String("type").value_or("");
  if (type.empty()) ThrowInvalid("response_format.type", "'response_format.type' is required");
  if (type == "text") return nullptr;
  if (type == "json_object") return Compile("json_object", "", "response_format", [] { return grammar::JsonObjectGbnf(); });
  if (type != "json_schema")
    ThrowInvalid("response_format.type",
                 fmt::format("response_format type '{}' is not supported; use 'text', 'json_object' or 'json_schema'",
                             type));
  auto spec = rf.Object("json_schema");
  if (!spec) ThrowInvalid("response_format.json_schema", "'response_format.json_schema' is required");
  spec->String("name");  // checked for its type only: the name changes nothing here
  spec->String("description");
  spec->Bool("strict");
  const json* schema = spec->Find("schema");
  const std::string param = "response_format.json_schema.schema";
  if (!schema) ThrowInvalid(param, fmt::format("'{}' is required", param));
  if (!schema->is_object() && !schema->is_boolean())
    ThrowInvalid(param, fmt::format("'{}' must be an object, got {}", param, JsonTypeName(*schema)));
  return CompileJsonSchemaGrammar(OrderedSchemaText(*schema, raw_body), param);
}

}  // namespace

std::shared_ptr<const grammar::Grammar> CompileJsonSchemaGrammar(const std::string& schema_text,
                                                                 const std::string& param) {
  return Compile("json_schema", schema_text, param, [&] { return grammar::JsonSchemaToGbnf(schema_text); });
}

StructuredOutput ParseStructuredOutput(const json& body, std::string_view raw_body) {
  JsonFields f(body, "");
  std::shared_ptr<const grammar::Grammar> result;
  const char* source = nullptr;
  if (auto gbnf = f.String("grammar")) {
    try {
      result = grammar::ParseGbnfCached(*gbnf);
    } catch (const Error& e) {
      ThrowInvalid("grammar", fmt::format("'grammar' is not valid GBNF: {}", e.what()));
    }
    source = "grammar";
  }
  if (const json* format = f.Find("response_format")) {
    auto constrained = ResponseFormat(*format, raw_body);
    if (constrained && source)
      ThrowInvalid("response_format", fmt::format("'response_format' and '{}' exclude each other", source));
    if (constrained) result = std::move(constrained), source = "response_format";
  }
  if (auto regex = f.String("regex")) {
    if (source) ThrowInvalid("regex", fmt::format("'regex' and '{}' exclude each other", source));
    result = Compile("regex", *regex, "regex", [&] { return grammar::RegexToGbnf(*regex); });
    source = "regex";
  }
  return {std::move(result), source ? source : ""};
}

}  // namespace ridge::server
