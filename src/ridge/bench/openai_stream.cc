#include "ridge/bench/openai_stream.h"

#include <nlohmann/json.hpp>

#include "ridge/base/error.h"

namespace ridge::bench {
namespace {

using nlohmann::json;

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::optional<int64_t> OptionalCount(const json& object, const char* key, const char* where) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) Fail("stream chunk: {}.{} is not an integer", where, key);
  return it->get<int64_t>();
}

std::string ErrorText(const json& error) {
  if (error.is_string()) return error.get<std::string>();
  if (error.is_object()) {
    const auto message = error.find("message");
    if (message != error.end() && message->is_string()) return message->get<std::string>();
  }
  return error.dump();
}

}  // namespace

ApiKind ApiKindForEndpoint(const std::string& endpoint) {
  if (EndsWith(endpoint, "/chat/completions")) return ApiKind::kChatCompletions;
  if (EndsWith(endpoint, "/completions")) return ApiKind::kCompletions;
  Fail("--endpoint '{}': expected a path ending in /completions or /chat/completions", endpoint);
}

std::string BuildRequestBody(ApiKind kind, const CompletionRequest& request) {
  json body;
  if (!request.model.empty()) body["model"] = request.model;
  if (kind == ApiKind::kChatCompletions) {
    body["messages"] = json::array({json{{"role", "user"}, {"content", request.prompt}}});
  } else {
    body["prompt"] = request.prompt;
  }
  body["max_tokens"] = request.max_tokens;
  body["temperature"] = 0.0;
  body["stream"] = true;
  body["stream_options"] = json{{"include_usage", true}};
  if (request.ignore_eos) body["ignore_eos"] = true;
  return body.dump();
}

StreamChunk ParseStreamChunk(ApiKind kind, std::string_view data) {
  StreamChunk chunk;
  std::string_view trimmed = data;
  while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\n' || trimmed.back() == '\r'))
    trimmed.remove_suffix(1);
  if (trimmed == "[DONE]") {
    chunk.done = true;
    return chunk;
  }
  const json j = json::parse(data.begin(), data.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) Fail("stream chunk is not JSON: '{}'", std::string(data.substr(0, 200)));
  if (!j.is_object()) Fail("stream chunk is not a JSON object: '{}'", std::string(data.substr(0, 200)));
  if (const auto error = j.find("error"); error != j.end() && !error->is_null()) chunk.error = ErrorText(*error);
  if (const auto choices = j.find("choices"); choices != j.end() && !choices->is_null()) {
    if (!choices->is_array()) Fail("stream chunk: 'choices' is not an array");
    if (!choices->empty()) {
      const json& choice = choices->front();
      if (!choice.is_object()) Fail("stream chunk: choices[0] is not an object");
      chunk.has_choice = true;
      const json* holder = &choice;
      const char* text_key = "text";
      if (kind == ApiKind::kChatCompletions) {
        const auto delta = choice.find("delta");
        holder = (delta != choice.end() && delta->is_object()) ? &*delta : nullptr;
        text_key = "content";
      }
      if (holder != nullptr) {
        const auto text = holder->find(text_key);
        if (text != holder->end() && !text->is_null()) {
          if (!text->is_string()) Fail("stream chunk: choices[0] {} is not a string", text_key);
          chunk.text = text->get<std::string>();
        }
      }
      const auto finish = choice.find("finish_reason");
      if (finish != choice.end() && !finish->is_null()) {
        if (!finish->is_string()) Fail("stream chunk: choices[0].finish_reason is not a string");
        chunk.finish_reason = finish->get<std::string>();
      }
    }
  }
  if (const auto usage = j.find("usage"); usage != j.end() && !usage->is_null()) {
    if (!usage->is_object()) Fail("stream chunk: 'usage' is not an object");
    chunk.prompt_tokens = OptionalCount(*usage, "prompt_tokens", "usage");
    chunk.completion_tokens = OptionalCount(*usage, "completion_tokens", "usage");
  }
  return chunk;
}

std::string ErrorMessageFromBody(const std::string& body) {
  const json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!j.is_discarded() && j.is_object()) {
    if (const auto error = j.find("error"); error != j.end()) return ErrorText(*error);
  }
  constexpr size_t kMaxChars = 300;
  return body.size() > kMaxChars ? body.substr(0, kMaxChars) + "…" : body;
}

}  // namespace ridge::bench
