#pragma once
// The OpenAI request bodies ridge serves, as typed values, and the pure
// functions that read them from JSON. Parsing checks every field's type and
// range (ApiError 400 naming the field) and rejects what ridge does not
// implement (n != 1, logit_bias, ...) instead of silently ignoring
// it. Unknown fields are ignored, as OpenAI's own clients send extras.
// Nothing here needs the model: limits that depend on it (context length,
// vocabulary size) are checked by the handlers.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ridge/grammar/grammar.h"
#include "ridge/sampling/sampling_params.h"

namespace ridge::server {

// Bounds the parser enforces on its own.
inline constexpr int kMaxStopStrings = 16;
inline constexpr size_t kMaxStopBytes = 256;
inline constexpr int64_t kMaxTokensLimit = int64_t{1} << 31;
inline constexpr size_t kMaxMessages = 4096;

// A call an assistant turn made, as the client sends it back.
struct ChatToolCall {
  std::string id;
  std::string name;
  // The object the call's "arguments" string holds, keys in the client's order (templates want it parsed).
  nlohmann::ordered_json arguments;
};

struct ChatMessage {
  ChatMessage() = default;
  ChatMessage(std::string role, std::string content) : role(std::move(role)), content(std::move(content)) {}

  std::string role;  // "system", "user", "assistant" or "tool" ("developer" is read as "system")
  std::string content;
  bool content_null = false;            // an assistant turn that only called tools
  std::vector<ChatToolCall> tool_calls;  // assistant turns
  std::string tool_call_id;             // tool turns: the call this result answers
  std::string name;                     // tool turns: the function's name, when given
};

// OpenAI's tool_choice.
enum class ToolChoice {
  kNone,      // the model is told about the tools but its reply is not parsed for calls
  kAuto,      // the model decides; calls it writes are parsed out of the reply
  kRequired,  // the reply must be one or more calls
  kNamed,     // the reply must be a call of `tool_choice_name`
};

// Fields shared by /v1/completions and /v1/chat/completions.
struct GenerationFields {
  std::string model;                   // "" when absent
  bool stream = false;
  bool include_usage = false;          // stream_options.include_usage
  std::optional<int64_t> max_tokens;   // >= 1
  std::vector<std::string> stop;       // each non-empty
  sampling::SamplingParams sampling;   // seed set only when seed_given
  bool seed_given = false;
  bool ignore_eos = false;             // vLLM's extension (benchmarks ask for exact output lengths)
  // What `grammar` (GBNF), `response_format` or `regex` constrain the output
  // to (structured_output.h: at most one of them); null: free text.
  std::shared_ptr<const grammar::Grammar> grammar;
  // The field that set `grammar` (one of those, or `tool_choice` for a forced
  // call), which errors of following it name; "" without one.
  std::string grammar_param;
};

struct CompletionRequest : GenerationFields {
  // Exactly one of these: text (possibly empty) or token ids.
  std::optional<std::string> prompt_text;
  std::vector<int64_t> prompt_tokens;  // range-checked against the vocabulary by the handler
  bool echo = false;
  // Special-token texts in the prompt ("<|im_start|>", "</s>") become those
  // tokens, as in llama.cpp and Hugging Face tokenizers; false: literal text.
  bool parse_special = true;
  // OpenAI's legacy `logprobs`: nullopt = none; k = the chosen token plus k alternatives.
  std::optional<int32_t> logprobs;
};

inline constexpr size_t kMaxTools = 128;

struct ChatRequest : GenerationFields {
  std::vector<ChatMessage> messages;  // at least one
  bool add_generation_prompt = true;  // vLLM's extension; true as in OpenAI
  // [{"type": "function", "function": {"name", "description"?, "parameters"?}}], checked; empty: no tools.
  // Keys in the client's order when parsed from the body's text (the model sees them as sent).
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  ToolChoice tool_choice = ToolChoice::kNone;  // kAuto by default when tools are given
  std::string tool_choice_name;               // kNamed: one of the tools
  bool parallel_tool_calls = true;            // false: at most one call per reply
};

struct TokenizeRequest {
  std::string model;
  // Exactly one of: text, or messages (rendered through the chat template).
  std::optional<std::string> prompt;
  std::vector<ChatMessage> messages;
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();  // rendered with messages, as in a chat request
  bool add_special_tokens = true;     // BOS as the vocabulary asks (text only)
  bool parse_special = true;          // special-token texts become those tokens (text only)
  bool add_generation_prompt = true;  // messages only
};

struct DetokenizeRequest {
  std::string model;
  std::vector<int64_t> tokens;
};

// `raw_body` is the body's text, read again for the order of a JSON schema's
// properties (structured_output.h); empty: body.dump(), whose keys are sorted.
CompletionRequest ParseCompletionRequest(const nlohmann::json& body, std::string_view raw_body = {});
ChatRequest ParseChatRequest(const nlohmann::json& body, std::string_view raw_body = {});
// With raw_body, `tools` also keep the key order the client wrote (a chat
// template prints them as JSON, and the model should see them as sent).
TokenizeRequest ParseTokenizeRequest(const nlohmann::json& body, std::string_view raw_body = {});
DetokenizeRequest ParseDetokenizeRequest(const nlohmann::json& body);

}  // namespace ridge::server
