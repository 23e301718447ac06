#include "ridge/server/openai_request.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>

#include "ridge/base/error.h"
#include "ridge/server/api_error.h"
#include "ridge/server/json_fields.h"
#include "ridge/server/tool_call_grammar.h"
#include "ridge/server/structured_output.h"

namespace ridge::server {
namespace {

using nlohmann::json;

constexpr double kMaxTemperature = 1000.0;
constexpr double kMaxRepetitionPenalty = 1000.0;
constexpr int64_t kMaxTopK = std::numeric_limits<int32_t>::max();

void RejectUnsupported(const JsonFields& f) {
  if (auto n = f.Integer("n", 0, kMaxTopK); n && *n != 1)
    ThrowInvalid("n", fmt::format("'n' must be 1: ridge returns one choice per request (got {})", *n));
  if (const json* bias = f.Find("logit_bias")) {
    if (!bias->is_object()) ThrowInvalid("logit_bias", "'logit_bias' must be an object");
    if (!bias->empty()) ThrowInvalid("logit_bias", "'logit_bias' is not supported");
  }
}

void ParseStop(const JsonFields& f, std::vector<std::string>& stop) {
  const json* v = f.Find("stop");
  if (!v) return;
  auto add = [&](const json& item, const std::string& path) {
    std::string s = StringValue(item, path);
    if (s.empty()) ThrowInvalid(path, fmt::format("'{}' must not be an empty string", path));
    if (s.size() > kMaxStopBytes)
      ThrowInvalid(path, fmt::format("'{}' is {} bytes long; at most {} are allowed", path, s.size(), kMaxStopBytes));
    stop.push_back(std::move(s));
  };
  if (v->is_string()) {
    add(*v, "stop");
  } else if (v->is_array()) {
    if (v->size() > static_cast<size_t>(kMaxStopStrings))
      ThrowInvalid("stop", fmt::format("'stop' has {} strings; at most {} are allowed", v->size(), kMaxStopStrings));
    for (size_t i = 0; i < v->size(); ++i) add((*v)[i], fmt::format("stop[{}]", i));
  } else {
    ThrowInvalid("stop", fmt::format("'stop' must be a string or an array of strings, got {}", JsonTypeName(*v)));
  }
}

// The request's output constraint (structured_output.h) and the field that set it.
void ParseConstraint(const json& body, std::string_view raw_body, GenerationFields& out) {
  StructuredOutput constraint = ParseStructuredOutput(body, raw_body);
  out.grammar = std::move(constraint.grammar);
  out.grammar_param = std::move(constraint.param);
}

void ParseGenerationFields(const JsonFields& f, GenerationFields& out) {
  RejectUnsupported(f);
  out.model = f.String("model").value_or("");
  out.stream = f.Bool("stream").value_or(false);
  if (auto options = f.Object("stream_options")) {
    if (!out.stream) ThrowInvalid("stream_options", "'stream_options' is only allowed when 'stream' is true");
    out.include_usage = options->Bool("include_usage").value_or(false);
  }
  out.max_tokens = f.Integer("max_tokens", 1, kMaxTokensLimit);
  ParseStop(f, out.stop);
  sampling::SamplingParams& s = out.sampling;
  s.temperature = static_cast<float>(f.Number("temperature", 0, kMaxTemperature).value_or(s.temperature));
  s.top_p = static_cast<float>(f.Number("top_p", 0, 1, /*min_exclusive=*/true).value_or(s.top_p));
  // vLLM spells "off" as -1, OpenAI-style samplers as 0.
  int64_t top_k = f.Integer("top_k", -1, kMaxTopK).value_or(0);
  s.top_k = static_cast<int32_t>(top_k < 0 ? 0 : top_k);
  s.min_p = static_cast<float>(f.Number("min_p", 0, 1).value_or(s.min_p));
  s.presence_penalty = static_cast<float>(f.Number("presence_penalty", -2, 2).value_or(s.presence_penalty));
  s.frequency_penalty = static_cast<float>(f.Number("frequency_penalty", -2, 2).value_or(s.frequency_penalty));
  s.repetition_penalty = static_cast<float>(
      f.Number("repetition_penalty", 0, kMaxRepetitionPenalty, /*min_exclusive=*/true).value_or(s.repetition_penalty));
  if (auto seed = f.Seed("seed")) {
    s.seed = *seed;
    out.seed_given = true;
  }
  out.ignore_eos = f.Bool("ignore_eos").value_or(false);
}

std::vector<int64_t> TokenArray(const json& array, const std::string& path) {
  if (array.empty()) ThrowInvalid(path, fmt::format("'{}' must not be empty", path));
  std::vector<int64_t> tokens;
  tokens.reserve(array.size());
  for (size_t i = 0; i < array.size(); ++i)
    tokens.push_back(IntegerValue(array[i], fmt::format("{}[{}]", path, i), 0, std::numeric_limits<int32_t>::max()));
  return tokens;
}

void ParsePrompt(const JsonFields& f, CompletionRequest& out) {
  const json* v = f.Find("prompt");
  if (!v) ThrowInvalid("prompt", "'prompt' is required");
  if (v->is_string()) {
    out.prompt_text = StringValue(*v, "prompt");
    return;
  }
  if (!v->is_array())
    ThrowInvalid("prompt", fmt::format("'prompt' must be a string, an array of token ids, or an array of one of "
                                       "those, got {}",
                                       JsonTypeName(*v)));
  if (v->empty()) ThrowInvalid("prompt", "'prompt' must not be an empty array");
  const json& first = (*v)[0];
  if (first.is_number()) {
    out.prompt_tokens = TokenArray(*v, "prompt");
    return;
  }
  if (v->size() != 1)
    ThrowInvalid("prompt", fmt::format("'prompt' holds {} prompts; ridge takes one prompt per request", v->size()));
  if (first.is_string()) {
    out.prompt_text = StringValue(first, "prompt[0]");
  } else if (first.is_array()) {
    out.prompt_tokens = TokenArray(first, "prompt[0]");
  } else {
    ThrowInvalid("prompt[0]", fmt::format("'prompt[0]' must be a string or an array of token ids, got {}",
                                          JsonTypeName(first)));
  }
}

std::string MessageContent(const json& content, const std::string& path) {
  if (content.is_string()) return StringValue(content, path);
  if (!content.is_array())
    ThrowInvalid(path, fmt::format("'{}' must be a string or an array of text parts, got {}", path,
                                   JsonTypeName(content)));
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string part_path = fmt::format("{}[{}]", path, i);
    JsonFields part(content[i], part_path);
    auto type = part.String("type");
    if (!type) ThrowInvalid(part_path + ".type", fmt::format("'{}.type' is required", part_path));
    if (*type != "text")
      ThrowInvalid(part_path + ".type", fmt::format("content part type '{}' is not supported; only 'text'", *type));
    auto part_text = part.String("text");
    if (!part_text) ThrowInvalid(part_path + ".text", fmt::format("'{}.text' is required", part_path));
    if (i > 0) text += "\n";
    text += *part_text;
  }
  return text;
}

// An assistant turn's tool_calls: [{"id", "type": "function", "function": {"name", "arguments": "<JSON>"}}].
std::vector<ChatToolCall> ParseMessageToolCalls(const json& calls, const std::string& path) {
  if (!calls.is_array())
    ThrowInvalid(path, fmt::format("'{}' must be an array, got {}", path, JsonTypeName(calls)));
  std::vector<ChatToolCall> out;
  for (size_t i = 0; i < calls.size(); ++i) {
    JsonFields c(calls[i], fmt::format("{}[{}]", path, i));
    ChatToolCall call;
    auto id = c.String("id");
    if (!id) ThrowInvalid(c.Path("id"), fmt::format("'{}' is required", c.Path("id")));
    call.id = *id;
    if (auto type = c.String("type"); type && *type != "function")
      ThrowInvalid(c.Path("type"), fmt::format("'{}' is '{}'; only 'function' calls exist", c.Path("type"), *type));
    auto fn = c.Object("function");
    if (!fn) ThrowInvalid(c.Path("function"), fmt::format("'{}' is required", c.Path("function")));
    auto name = fn->String("name");
    if (!name || name->empty()) ThrowInvalid(fn->Path("name"), fmt::format("'{}' is required", fn->Path("name")));
    call.name = *name;
    auto arguments = fn->String("arguments");
    if (!arguments)
      ThrowInvalid(fn->Path("arguments"), fmt::format("'{}' is required (a JSON object as a string)",
                                                      fn->Path("arguments")));
    call.arguments = nlohmann::ordered_json::parse(*arguments, nullptr, /*allow_exceptions=*/false);
    if (!call.arguments.is_object())
      ThrowInvalid(fn->Path("arguments"),
                   fmt::format("'{}' must be a JSON object written as a string", fn->Path("arguments")));
    out.push_back(std::move(call));
  }
  return out;
}

std::vector<ChatMessage> ParseMessages(const JsonFields& f) {
  const json* v = f.Find("messages");
  if (!v) ThrowInvalid("messages", "'messages' is required");
  if (!v->is_array()) ThrowInvalid("messages", fmt::format("'messages' must be an array, got {}", JsonTypeName(*v)));
  if (v->empty()) ThrowInvalid("messages", "'messages' must hold at least one message");
  if (v->size() > kMaxMessages)
    ThrowInvalid("messages", fmt::format("'messages' holds {} messages; at most {} are allowed", v->size(),
                                         kMaxMessages));
  std::vector<ChatMessage> messages;
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string path = fmt::format("messages[{}]", i);
    JsonFields m((*v)[i], path);
    ChatMessage message;
    auto role = m.String("role");
    if (!role) ThrowInvalid(m.Path("role"), fmt::format("'{}' is required", m.Path("role")));
    if (*role == "developer") *role = "system";
    if (*role != "system" && *role != "user" && *role != "assistant" && *role != "tool")
      ThrowInvalid(m.Path("role"),
                   fmt::format("'{}' is '{}'; ridge supports system, developer, user, assistant and tool",
                               m.Path("role"), *role));
    message.role = *role;
    if (const json* calls = m.Find("tool_calls")) {
      if (message.role != "assistant")
        ThrowInvalid(m.Path("tool_calls"), fmt::format("'{}' is only allowed in assistant messages",
                                                       m.Path("tool_calls")));
      message.tool_calls = ParseMessageToolCalls(*calls, m.Path("tool_calls"));
    }
    if (message.role == "tool") {
      auto id = m.String("tool_call_id");
      if (!id) ThrowInvalid(m.Path("tool_call_id"), fmt::format("'{}' is required", m.Path("tool_call_id")));
      message.tool_call_id = *id;
      message.name = m.String("name").value_or("");
    }
    const json* content = m.Find("content");
    if (!content) {
      // Only an assistant turn may come without content (it called tools).
      if (message.role != "assistant")
        ThrowInvalid(m.Path("content"), fmt::format("'{}' is required", m.Path("content")));
      message.content_null = true;
    } else {
      message.content = MessageContent(*content, m.Path("content"));
    }
    messages.push_back(std::move(message));
  }
  // A tool result without a name takes the name of the call it answers.
  for (ChatMessage& m : messages) {
    if (m.role != "tool" || !m.name.empty()) continue;
    for (const ChatMessage& earlier : messages)
      for (const ChatToolCall& call : earlier.tool_calls)
        if (call.id == m.tool_call_id) m.name = call.name;
  }
  return messages;
}

// OpenAI's function names: letters, digits, '_' and '-', at most 64.
bool ValidFunctionName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  return true;
}

// The checked `tools` array; `names` receives the functions' names.
nlohmann::ordered_json ParseToolList(const JsonFields& f, std::vector<std::string>& names) {
  if (const json* v = f.Find("functions"); v && !(v->is_array() && v->empty()))
    ThrowInvalid("functions", "'functions' (the deprecated form) is not supported; use 'tools'");
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  if (const json* v = f.Find("tools")) {
    if (!v->is_array()) ThrowInvalid("tools", fmt::format("'tools' must be an array, got {}", JsonTypeName(*v)));
    if (v->size() > kMaxTools)
      ThrowInvalid("tools", fmt::format("'tools' holds {} tools; at most {} are allowed", v->size(), kMaxTools));
    for (size_t i = 0; i < v->size(); ++i) {
      JsonFields t((*v)[i], fmt::format("tools[{}]", i));
      auto type = t.String("type");
      if (!type || *type != "function")
        ThrowInvalid(t.Path("type"), fmt::format("'{}' must be 'function'", t.Path("type")));
      auto fn = t.Object("function");
      if (!fn) ThrowInvalid(t.Path("function"), fmt::format("'{}' is required", t.Path("function")));
      auto name = fn->String("name");
      if (!name || !ValidFunctionName(*name))
        ThrowInvalid(fn->Path("name"), fmt::format("'{}' must be 1 to 64 letters, digits, '_' or '-'",
                                                   fn->Path("name")));
      if (std::find(names.begin(), names.end(), *name) != names.end())
        ThrowInvalid(fn->Path("name"), fmt::format("'{}': two tools are named '{}'", fn->Path("name"), *name));
      names.push_back(*name);
      fn->String("description");
      fn->Bool("strict");
      fn->Object("parameters");  // an object when given (a JSON Schema)
      tools.push_back(nlohmann::ordered_json((*v)[i]));
    }
  }
  return tools;
}

// The body's "tools", keys in the order written (the body already passed ParseJsonObject).
nlohmann::ordered_json ToolsInClientOrder(std::string_view raw_body) {
  return nlohmann::ordered_json::parse(raw_body.begin(), raw_body.end()).at("tools");
}

void ParseTools(const JsonFields& f, ChatRequest& out) {
  std::vector<std::string> names;
  out.tools = ParseToolList(f, names);
  out.tool_choice = out.tools.empty() ? ToolChoice::kNone : ToolChoice::kAuto;
  if (const json* choice = f.Find("tool_choice")) {
    if (choice->is_string()) {
      const std::string mode = StringValue(*choice, "tool_choice");
      if (mode == "none") {
        out.tool_choice = ToolChoice::kNone;
      } else if (mode == "auto") {
        out.tool_choice = ToolChoice::kAuto;
      } else if (mode == "required") {
        out.tool_choice = ToolChoice::kRequired;
      } else {
        ThrowInvalid("tool_choice",
                     fmt::format("'tool_choice' is '{}'; it must be 'none', 'auto', 'required' or "
                                 "{{\"type\": \"function\", \"function\": {{\"name\": ...}}}}",
                                 mode));
      }
    } else {
      JsonFields c(*choice, "tool_choice");
      auto fn = c.Object("function");
      auto name = fn ? fn->String("name") : std::nullopt;
      if (!name) ThrowInvalid("tool_choice.function.name", "'tool_choice.function.name' is required");
      if (std::find(names.begin(), names.end(), *name) == names.end())
        ThrowInvalid("tool_choice.function.name",
                     fmt::format("'tool_choice' names '{}', which is not among 'tools'", *name));
      out.tool_choice = ToolChoice::kNamed;
      out.tool_choice_name = *name;
    }
    if (out.tools.empty() && out.tool_choice != ToolChoice::kNone)
      ThrowInvalid("tool_choice", "'tool_choice' needs 'tools'");
  }
  out.parallel_tool_calls = f.Bool("parallel_tool_calls").value_or(true);
}

}  // namespace

CompletionRequest ParseCompletionRequest(const nlohmann::json& body, std::string_view raw_body) {
  JsonFields f(body, "");
  CompletionRequest out;
  ParseGenerationFields(f, out);
  ParseConstraint(body, raw_body, out);
  ParsePrompt(f, out);
  out.echo = f.Bool("echo").value_or(false);
  out.parse_special = f.Bool("parse_special").value_or(true);
  if (auto logprobs = f.Integer("logprobs", 0, sampling::kMaxTopLogprobs)) {
    out.logprobs = static_cast<int32_t>(*logprobs);
    out.sampling.logprobs = true;
    out.sampling.top_logprobs = out.logprobs.value();
  }
  if (auto best_of = f.Integer("best_of", 0, kMaxTopK); best_of && *best_of != 1)
    ThrowInvalid("best_of", fmt::format("'best_of' must be 1 (got {})", *best_of));
  if (auto suffix = f.String("suffix"); suffix && !suffix->empty())
    ThrowInvalid("suffix", "'suffix' is not supported");
  if (out.echo && out.logprobs)
    ThrowInvalid("logprobs", "'logprobs' together with 'echo' (prompt log-probabilities) is not supported");
  return out;
}

ChatRequest ParseChatRequest(const nlohmann::json& body, std::string_view raw_body) {
  JsonFields f(body, "");
  ChatRequest out;
  ParseGenerationFields(f, out);
  ParseConstraint(body, raw_body, out);
  // The newer name wins when both are given.
  if (auto n = f.Integer("max_completion_tokens", 1, kMaxTokensLimit)) out.max_tokens = n;
  ParseTools(f, out);
  if (!raw_body.empty() && !out.tools.empty()) out.tools = ToolsInClientOrder(raw_body);
  if (out.tool_choice == ToolChoice::kRequired || out.tool_choice == ToolChoice::kNamed) {
    if (out.grammar)
      ThrowInvalid("tool_choice", "a 'tool_choice' that forces a call excludes 'response_format', 'grammar' and "
                                  "'regex': the call's arguments follow the function's parameters");
    out.grammar = ForcedToolCallGrammar(out);
    out.grammar_param = "tool_choice";
  }
  out.messages = ParseMessages(f);
  out.add_generation_prompt = f.Bool("add_generation_prompt").value_or(true);
  const bool logprobs = f.Bool("logprobs").value_or(false);
  const int64_t top = f.Integer("top_logprobs", 0, sampling::kMaxTopLogprobs).value_or(0);
  if (top > 0 && !logprobs) ThrowInvalid("top_logprobs", "'top_logprobs' needs 'logprobs' set to true");
  out.sampling.logprobs = logprobs;
  out.sampling.top_logprobs = static_cast<int32_t>(top);
  return out;
}

TokenizeRequest ParseTokenizeRequest(const nlohmann::json& body, std::string_view raw_body) {
  JsonFields f(body, "");
  TokenizeRequest out;
  out.model = f.String("model").value_or("");
  out.prompt = f.String("prompt");
  const bool has_messages = f.Find("messages") != nullptr;
  if (out.prompt && has_messages) ThrowInvalid("prompt", "give either 'prompt' or 'messages', not both");
  if (!out.prompt && !has_messages) ThrowInvalid("prompt", "'prompt' (or 'messages') is required");
  if (has_messages) out.messages = ParseMessages(f);
  std::vector<std::string> names;
  out.tools = ParseToolList(f, names);
  if (out.prompt && !out.tools.empty()) ThrowInvalid("tools", "'tools' go with 'messages', not 'prompt'");
  if (!raw_body.empty() && !out.tools.empty()) out.tools = ToolsInClientOrder(raw_body);
  out.add_special_tokens = f.Bool("add_special_tokens").value_or(true);
  out.parse_special = f.Bool("parse_special").value_or(true);
  out.add_generation_prompt = f.Bool("add_generation_prompt").value_or(true);
  return out;
}

DetokenizeRequest ParseDetokenizeRequest(const nlohmann::json& body) {
  JsonFields f(body, "");
  DetokenizeRequest out;
  out.model = f.String("model").value_or("");
  const json* tokens = f.Find("tokens");
  if (!tokens) ThrowInvalid("tokens", "'tokens' is required");
  if (!tokens->is_array())
    ThrowInvalid("tokens", fmt::format("'tokens' must be an array of token ids, got {}", JsonTypeName(*tokens)));
  for (size_t i = 0; i < tokens->size(); ++i)
    out.tokens.push_back(
        IntegerValue((*tokens)[i], fmt::format("tokens[{}]", i), 0, std::numeric_limits<int32_t>::max()));
  return out;
}

}  // namespace ridge::server
