#pragma once
// The JSON ridge answers with, in OpenAI's shapes: completion and chat
// responses, their streaming chunks (Server-Sent Events ending in
// "data: [DONE]"), usage, and log-probabilities in each endpoint's format:
//   completions: {"tokens", "token_logprobs", "top_logprobs": [{text: lp}], "text_offset"}
//   chat:        {"content": [{"token", "logprob", "bytes", "top_logprobs": [...]}]}
#include <nlohmann/json.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ridge/metrics/request_trace.h"
#include "ridge/sampling/sampler.h"
#include "ridge/server/tool_call_parser.h"
#include "ridge/tokenizer/tokenizer.h"

namespace ridge::server {

enum class ApiKind { kCompletion, kChat };

struct ResponseHeader {
  std::string id;       // "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
};

// A fresh id with the endpoint's prefix (unique within the process, and
// random across restarts).
std::string NewResponseId(ApiKind kind);

// "stop" or "length" (what OpenAI knows); "abort"/"error" otherwise.
const char* FinishReasonText(FinishKind kind);

// A token's text for logprobs: its bytes when they are valid UTF-8, else
// "bytes:\xNN..." (vLLM's spelling), so distinct byte tokens stay distinct.
std::string TokenText(const Tokenizer& tokenizer, int32_t token);

// Log-probabilities of `tokens` in the endpoint's format. For completions,
// `*text_offset` is the offset of the first token and is advanced past the
// last; top_logprobs lists the alternatives and the chosen token.
nlohmann::json LogprobsJson(ApiKind kind, const Tokenizer& tokenizer, std::span<const sampling::SampledToken> tokens,
                            int64_t* text_offset);

// With `speculation` (the server speculates), an extra object
// "speculative_decoding": {draft_tokens, accepted_tokens, emitted_tokens}.
nlohmann::json UsageJson(int64_t prompt_tokens, int64_t completion_tokens,
                         const SpecDecodeCounts* speculation = nullptr);

// A reply's tool calls, as OpenAI writes them in a message:
// [{"id", "type": "function", "function": {"name", "arguments": "<JSON text>"}}].
nlohmann::json ToolCallsJson(std::span<const ToolCall> calls);
// The chat deltas that stream one call, as OpenAI streams them: first
// {"tool_calls": [{"index", "id", "type", "function": {"name", "arguments": ""}}]},
// then {"tool_calls": [{"index", "function": {"arguments": "<JSON text>"}}]}.
std::vector<nlohmann::json> ToolCallDeltas(int index, const ToolCall& call);

// Streaming chunks. `finish` kNone means "not finished" (null finish_reason).
// with_usage_field: stream_options.include_usage was set, so every chunk
// carries "usage": null, as OpenAI's do. called_tools: the reply made tool
// calls, so a kStop finish reads "tool_calls".
nlohmann::json CompletionChunk(const ResponseHeader& h, std::string_view text, nlohmann::json logprobs,
                               FinishKind finish, bool with_usage_field);
nlohmann::json ChatChunk(const ResponseHeader& h, nlohmann::json delta, nlohmann::json logprobs, FinishKind finish,
                         bool with_usage_field, bool called_tools = false);
// The last chunk before [DONE] when include_usage: no choices, only usage.
nlohmann::json UsageChunk(ApiKind kind, const ResponseHeader& h, nlohmann::json usage);

// Whole (non-streaming) responses.
nlohmann::json CompletionResponse(const ResponseHeader& h, std::string_view text, nlohmann::json logprobs,
                                  FinishKind finish, nlohmann::json usage);
// With calls: "content" is null when the reply had no text besides them, and a
// kStop finish reads "tool_calls".
nlohmann::json ChatResponse(const ResponseHeader& h, std::string_view text, nlohmann::json logprobs,
                            FinishKind finish, nlohmann::json usage, std::span<const ToolCall> calls = {});

// "data: <json>\n\n", and the stream's end.
std::string SseEvent(const nlohmann::json& value);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace ridge::server
