#pragma once
// The OpenAI streaming protocol as a benchmark client speaks it: the request
// body for /v1/completions or /v1/chat/completions, and what one SSE event's
// data means (a text piece, the usage summary, an error, or the end).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ridge::bench {

enum class ApiKind { kCompletions, kChatCompletions };

// "/v1/chat/completions" (any path ending in "/chat/completions") → chat;
// any other path ending in "/completions" → completions. Throws ridge::Error
// otherwise.
ApiKind ApiKindForEndpoint(const std::string& endpoint);

struct CompletionRequest {
  std::string model;        // omitted from the body when empty
  std::string prompt;
  int64_t max_tokens = 16;
  bool ignore_eos = true;   // vLLM's extension: generate exactly max_tokens
};

// A streaming request with temperature 0 and stream_options.include_usage,
// as vLLM's benchmark sends it; chat puts the prompt in one user message.
std::string BuildRequestBody(ApiKind kind, const CompletionRequest& request);

// What one event's data carried.
struct StreamChunk {
  bool done = false;                        // the "[DONE]" sentinel
  bool has_choice = false;                  // choices[0] was present
  std::string text;                         // choices[0].text, or .delta.content for chat
  std::optional<std::string> finish_reason;  // choices[0].finish_reason when not null
  std::optional<int64_t> prompt_tokens;     // usage.prompt_tokens
  std::optional<int64_t> completion_tokens;  // usage.completion_tokens
  std::optional<std::string> error;         // an {"error": …} object's message
};

// Throws ridge::Error when the data is neither "[DONE]" nor a JSON object,
// or a known field has the wrong type.
StreamChunk ParseStreamChunk(ApiKind kind, std::string_view data);

// The message of an OpenAI-style error body ({"error": {"message": …}}), or
// the body itself (shortened) when it is not one.
std::string ErrorMessageFromBody(const std::string& body);

}  // namespace ridge::bench
