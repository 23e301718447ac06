#include "ridge/server/response_format.h"

#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <random>

#include "ridge/server/api_error.h"
#include "ridge/tokenizer/utf8.h"

namespace ridge::server {
namespace {

using nlohmann::json;

// JSON has no -inf; vLLM reports -9999 for a token the model rules out.
double FiniteLogprob(float lp) { return std::isfinite(lp) ? static_cast<double>(lp) : -9999.0; }

json Bytes(const std::string& s) {
  json out = json::array();
  for (unsigned char c : s) out.push_back(static_cast<int>(c));
  return out;
}

const char* ObjectName(ApiKind kind, bool chunk) {
  if (kind == ApiKind::kCompletion) return "text_completion";
  return chunk ? "chat.completion.chunk" : "chat.completion";
}

json Base(ApiKind kind, const ResponseHeader& h, bool chunk) {
  return json{{"id", h.id}, {"object", ObjectName(kind, chunk)}, {"created", h.created}, {"model", h.model},
              {"system_fingerprint", "ridge"}};
}

json FinishJson(FinishKind finish, bool called_tools = false) {
  if (finish == FinishKind::kNone) return nullptr;
  if (called_tools && finish == FinishKind::kStop) return "tool_calls";
  return FinishReasonText(finish);
}

}  // namespace

std::string NewResponseId(ApiKind kind) {
  static const uint64_t process_salt = std::random_device{}() | (uint64_t{std::random_device{}()} << 32);
  static std::atomic<uint64_t> counter{0};
  const uint64_t n = counter.fetch_add(1);
  return fmt::format("{}-{:016x}{:08x}", kind == ApiKind::kCompletion ? "cmpl" : "chatcmpl", process_salt, n);
}

const char* FinishReasonText(FinishKind kind) {
  switch (kind) {
    case FinishKind::kStop: return "stop";
    case FinishKind::kLength: return "length";
    case FinishKind::kAbort: return "abort";
    case FinishKind::kError: return "error";
    case FinishKind::kNone: return "none";
  }
  return "error";
}

std::string TokenText(const Tokenizer& tokenizer, int32_t token) {
  std::string bytes = tokenizer.TokenBytes(token);
  if (utf8::IsValid(bytes)) return bytes;
  std::string out = "bytes:";
  for (unsigned char c : bytes) out += fmt::format("\\x{:02x}", c);
  return out;
}

json LogprobsJson(ApiKind kind, const Tokenizer& tokenizer, std::span<const sampling::SampledToken> tokens,
                  int64_t* text_offset) {
  if (kind == ApiKind::kChat) {
    json content = json::array();
    for (const auto& t : tokens) {
      json top = json::array();
      for (const auto& alt : t.top_logprobs) {
        std::string text = TokenText(tokenizer, alt.token);
        top.push_back(json{{"token", text}, {"logprob", FiniteLogprob(alt.logprob)},
                           {"bytes", Bytes(tokenizer.TokenBytes(alt.token))}});
      }
      content.push_back(json{{"token", TokenText(tokenizer, t.token)},
                             {"logprob", FiniteLogprob(t.logprob)},
                             {"bytes", Bytes(tokenizer.TokenBytes(t.token))},
                             {"top_logprobs", std::move(top)}});
    }
    return json{{"content", std::move(content)}};
  }
  json texts = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  for (const auto& t : tokens) {
    std::string text = TokenText(tokenizer, t.token);
    texts.push_back(text);
    lps.push_back(FiniteLogprob(t.logprob));
    json top = json::object();
    for (const auto& alt : t.top_logprobs) top[TokenText(tokenizer, alt.token)] = FiniteLogprob(alt.logprob);
    top[text] = FiniteLogprob(t.logprob);  // the chosen token is always listed (vLLM does the same)
    tops.push_back(std::move(top));
    offsets.push_back(*text_offset);
    *text_offset += static_cast<int64_t>(tokenizer.TokenBytes(t.token).size());
  }
  return json{{"tokens", std::move(texts)},
              {"token_logprobs", std::move(lps)},
              {"top_logprobs", std::move(tops)},
              {"text_offset", std::move(offsets)}};
}

json UsageJson(int64_t prompt_tokens, int64_t completion_tokens, const SpecDecodeCounts* speculation) {
  json usage{{"prompt_tokens", prompt_tokens},
             {"completion_tokens", completion_tokens},
             {"total_tokens", prompt_tokens + completion_tokens}};
  if (speculation)
    usage["speculative_decoding"] = {{"draft_tokens", speculation->draft_tokens},
                                     {"accepted_tokens", speculation->accepted_tokens},
                                     {"emitted_tokens", speculation->emitted_tokens}};
  return usage;
}

json CompletionChunk(const ResponseHeader& h, std::string_view text, json logprobs, FinishKind finish,
                     bool with_usage_field) {
  json out = Base(ApiKind::kCompletion, h, true);
  out["choices"] = json::array(
      {json{{"index", 0}, {"text", text}, {"logprobs", std::move(logprobs)}, {"finish_reason", FinishJson(finish)}}});
  if (with_usage_field) out["usage"] = nullptr;
  return out;
}

json ToolCallsJson(std::span<const ToolCall> calls) {
  json out = json::array();
  for (const ToolCall& c : calls)
    out.push_back({{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
  return out;
}

std::vector<json> ToolCallDeltas(int index, const ToolCall& call) {
  json head{{"index", index}, {"id", call.id}, {"type", "function"},
            {"function", {{"name", call.name}, {"arguments", ""}}}};
  json args{{"index", index}, {"function", {{"arguments", call.arguments}}}};
  return {json{{"tool_calls", json::array({std::move(head)})}}, json{{"tool_calls", json::array({std::move(args)})}}};
}

json ChatChunk(const ResponseHeader& h, json delta, json logprobs, FinishKind finish, bool with_usage_field,
               bool called_tools) {
  json out = Base(ApiKind::kChat, h, true);
  out["choices"] = json::array({json{{"index", 0},
                                     {"delta", std::move(delta)},
                                     {"logprobs", std::move(logprobs)},
                                     {"finish_reason", FinishJson(finish, called_tools)}}});
  if (with_usage_field) out["usage"] = nullptr;
  return out;
}

json UsageChunk(ApiKind kind, const ResponseHeader& h, json usage) {
  json out = Base(kind, h, true);
  out["choices"] = json::array();
  out["usage"] = std::move(usage);
  return out;
}

json CompletionResponse(const ResponseHeader& h, std::string_view text, json logprobs, FinishKind finish,
                        json usage) {
  json out = Base(ApiKind::kCompletion, h, false);
  out["choices"] = json::array(
      {json{{"index", 0}, {"text", text}, {"logprobs", std::move(logprobs)}, {"finish_reason", FinishJson(finish)}}});
  out["usage"] = std::move(usage);
  return out;
}

json ChatResponse(const ResponseHeader& h, std::string_view text, json logprobs, FinishKind finish, json usage,
                  std::span<const ToolCall> calls) {
  json out = Base(ApiKind::kChat, h, false);
  json message{{"role", "assistant"}, {"content", text}};
  if (!calls.empty()) {
    if (text.empty()) message["content"] = nullptr;
    message["tool_calls"] = ToolCallsJson(calls);
  }
  out["choices"] = json::array({json{{"index", 0},
                                     {"message", std::move(message)},
                                     {"logprobs", std::move(logprobs)},
                                     {"finish_reason", FinishJson(finish, !calls.empty())}}});
  out["usage"] = std::move(usage);
  return out;
}

std::string SseEvent(const json& value) { return "data: " + DumpJson(value) + "\n\n"; }

}  // namespace ridge::server
