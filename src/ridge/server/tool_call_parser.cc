#include "ridge/server/tool_call_parser.h"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace ridge::server {
namespace {

using nlohmann::json;

constexpr std::string_view kHermesOpen = "<tool_call>", kHermesClose = "</tool_call>";
constexpr std::string_view kDeepSeekOpen = "<｜tool▁calls▁begin｜>", kDeepSeekClose = "<｜tool▁calls▁end｜>";
constexpr std::string_view kDeepSeekCallOpen = "<｜tool▁call▁begin｜>", kDeepSeekCallClose = "<｜tool▁call▁end｜>";
constexpr std::string_view kDeepSeekSep = "<｜tool▁sep｜>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralOpen = "[TOOL_CALLS]", kMistralArgs = "[ARGS]";

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

size_t SkipSpace(std::string_view s, size_t i) {
  while (i < s.size() && IsSpace(s[i])) ++i;
  return i;
}

// Bytes at the end of `s` that could begin `marker` (a proper prefix of it): held back while streaming.
size_t HeldPrefix(std::string_view s, std::string_view marker) {
  for (size_t n = std::min(s.size(), marker.size() - 1); n > 0; --n)
    if (marker.starts_with(s.substr(s.size() - n))) return n;
  return 0;
}

// A JSON object as a call: {"name": N, "arguments"|"parameters": {...}|"...", "id"?}.
std::optional<ToolCall> CallFromJson(const json& j) {
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string()) return std::nullopt;
  ToolCall call;
  call.name = j["name"].get<std::string>();
  const json* args = j.contains("arguments") ? &j["arguments"] : j.contains("parameters") ? &j["parameters"] : nullptr;
  if (args == nullptr) {
    call.arguments = "{}";
  } else if (args->is_object()) {
    call.arguments = args->dump();
  } else if (args->is_string() && json::accept(args->get<std::string>())) {
    call.arguments = args->get<std::string>();  // some models write the arguments as a JSON string
  } else {
    return std::nullopt;
  }
  if (j.contains("id") && j["id"].is_string()) call.id = j["id"].get<std::string>();
  return call;
}

std::optional<json> ParseJson(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

// A list of calls from one JSON value: an object, an array of objects, or {"tool_calls": [...]}.
std::optional<std::vector<ToolCall>> CallsFromJson(const json& j) {
  const json* list = &j;
  if (j.is_object() && j.contains("tool_calls")) list = &j["tool_calls"];
  std::vector<ToolCall> calls;
  if (list->is_array()) {
    for (const json& item : *list) {
      // OpenAI's own shape {"type": "function", "function": {...}} too.
      const json& fn = item.is_object() && item.contains("function") ? item["function"] : item;
      auto call = CallFromJson(fn);
      if (!call) return std::nullopt;
      calls.push_back(std::move(*call));
    }
    return calls;
  }
  auto call = CallFromJson(*list);
  if (!call) return std::nullopt;
  return std::vector<ToolCall>{std::move(*call)};
}

// One DeepSeek call body: "function<｜tool▁sep｜>NAME\n```json\n{...}\n```".
std::optional<ToolCall> DeepSeekCall(std::string_view body) {
  const size_t sep = body.find(kDeepSeekSep);
  if (sep == std::string_view::npos) return std::nullopt;
  std::string_view rest = body.substr(sep + kDeepSeekSep.size());
  const size_t newline = rest.find('\n');
  if (newline == std::string_view::npos) return std::nullopt;
  ToolCall call;
  call.name = std::string(rest.substr(0, newline));
  std::string_view args = rest.substr(newline + 1);
  const size_t open = args.find('{'), close = args.rfind('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  auto j = ParseJson(args.substr(open, close - open + 1));
  if (!j || !j->is_object() || call.name.empty()) return std::nullopt;
  call.arguments = j->dump();
  return call;
}

std::optional<std::vector<ToolCall>> DeepSeekCalls(std::string_view region) {
  std::vector<ToolCall> calls;
  size_t at = 0;
  while ((at = region.find(kDeepSeekCallOpen, at)) != std::string_view::npos) {
    const size_t body = at + kDeepSeekCallOpen.size();
    const size_t end = region.find(kDeepSeekCallClose, body);
    if (end == std::string_view::npos) return std::nullopt;
    auto call = DeepSeekCall(region.substr(body, end - body));
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    at = end + kDeepSeekCallClose.size();
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

}  // namespace

const char* ToolCallFormatName(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kHermes: return "hermes";
    case ToolCallFormat::kLlama3: return "llama3";
    case ToolCallFormat::kMistral: return "mistral";
    case ToolCallFormat::kDeepSeek: return "deepseek";
    case ToolCallFormat::kJson: return "json";
  }
  return "?";
}

ToolCallFormat ToolCallFormatForTemplate(std::string_view t) {
  if (t.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::kHermes;
  if (t.find("tool▁calls▁begin") != std::string_view::npos) return ToolCallFormat::kDeepSeek;
  if (t.find(kMistralOpen) != std::string_view::npos) return ToolCallFormat::kMistral;
  if (t.find("<|start_header_id|>") != std::string_view::npos) return ToolCallFormat::kLlama3;
  return ToolCallFormat::kJson;
}

std::optional<size_t> JsonValueEnd(std::string_view text, size_t begin) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = begin; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
        if (depth == 0) return i + 1;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth <= 0) return i + 1;
    } else if (depth == 0 && (IsSpace(c) || c == ',' || c == ';')) {
      return i;  // a bare scalar ended
    }
  }
  return std::nullopt;
}

ToolCallParser::ToolCallParser(ToolCallFormat format, std::string id_prefix, size_t max_calls)
    : format_(format), id_prefix_(std::move(id_prefix)), max_calls_(max_calls) {}

void ToolCallParser::AddCall(ToolCall call, ToolCallEvents& out) {
  if (full()) return;  // a list holding more calls than allowed: the first ones
  if (call.id.empty()) call.id = id_prefix_ + std::to_string(calls_.size());
  out.calls.emplace_back(static_cast<int>(calls_.size()), call);
  calls_.push_back(std::move(call));
}

// Calls inside delimited regions anywhere in the reply (Hermes, DeepSeek).
bool ToolCallParser::ScanHermesOrDeepSeek(ToolCallEvents& out, bool at_end) {
  const bool hermes = format_ == ToolCallFormat::kHermes;
  const std::string_view open = hermes ? kHermesOpen : kDeepSeekOpen, close = hermes ? kHermesClose : kDeepSeekClose;
  const std::string_view text = buffer_;
  const size_t start = text.find(open, pos_);
  if (start == std::string_view::npos) {
    const size_t held = at_end ? 0 : HeldPrefix(text.substr(pos_), open);
    out.content.append(text.substr(pos_, text.size() - held - pos_));
    pos_ = text.size() - held;
    return false;
  }
  out.content.append(text.substr(pos_, start - pos_));
  pos_ = start;
  const size_t body = start + open.size();
  size_t end = text.find(close, body);
  if (end == std::string_view::npos && !(at_end && !hermes)) {
    if (at_end) {  // an unterminated call: what the model wrote, as content
      out.content.append(text.substr(pos_));
      pos_ = text.size();
    }
    return false;
  }
  // DeepSeek may stop right after its last call without closing the region.
  const size_t region_end = end == std::string_view::npos ? text.size() : end;
  const size_t next = end == std::string_view::npos ? text.size() : end + close.size();
  std::optional<std::vector<ToolCall>> calls;
  if (hermes) {
    if (auto j = ParseJson(text.substr(body, region_end - body))) calls = CallsFromJson(*j);
  } else {
    calls = DeepSeekCalls(text.substr(body, region_end - body));
  }
  if (calls) {
    for (ToolCall& c : *calls) AddCall(std::move(c), out);
  } else {
    out.content.append(text.substr(start, next - start));
  }
  pos_ = next;
  return pos_ < text.size();
}

// Replies that are calls from their first byte (Llama 3, Mistral, forced JSON).
bool ToolCallParser::ScanWholeReply(ToolCallEvents& out, bool at_end) {
  const std::string_view text = buffer_;
  if (reply_ == Reply::kUndecided) {
    const size_t first = SkipSpace(text, 0);
    const std::string_view head = text.substr(first);
    std::vector<std::string_view> triggers;
    if (format_ == ToolCallFormat::kMistral) triggers = {kMistralOpen};
    if (format_ == ToolCallFormat::kLlama3) triggers = {kPythonTag, "{"};
    if (format_ == ToolCallFormat::kJson) triggers = {"{", "["};
    bool maybe = head.empty();
    for (std::string_view t : triggers) {
      if (head.starts_with(t)) {
        reply_ = Reply::kCalls;
        pos_ = first + (t == "{" || t == "[" ? 0 : t.size());  // a JSON value starts at its bracket
      } else if (t.starts_with(head)) {
        maybe = true;
      }
    }
    if (reply_ == Reply::kUndecided) {
      if (maybe && !at_end) return false;  // wait for the bytes that decide
      reply_ = Reply::kContent;
    }
  }
  if (reply_ == Reply::kContent) {
    out.content.append(text.substr(pos_));
    pos_ = text.size();
    return false;
  }
  // One call (or list of calls) after another, separated by spaces or ';'.
  size_t begin = SkipSpace(text, pos_);
  while (begin < text.size() && text[begin] == ';') begin = SkipSpace(text, begin + 1);
  if (begin >= text.size()) {
    if (at_end) pos_ = text.size();
    return false;
  }
  std::optional<std::vector<ToolCall>> calls;
  size_t end = 0;
  if (format_ == ToolCallFormat::kMistral && text[begin] != '[' && text[begin] != '{') {
    // Mistral's newer form: NAME[ARGS]{...}
    const size_t args = text.find(kMistralArgs, begin);
    if (args == std::string_view::npos) {
      if (!at_end) return false;
    } else if (auto value_end = JsonValueEnd(text, args + kMistralArgs.size())) {
      end = *value_end;
      auto j = ParseJson(text.substr(args + kMistralArgs.size(), end - args - kMistralArgs.size()));
      if (j && j->is_object())
        calls = std::vector<ToolCall>{{"", std::string(text.substr(begin, args - begin)), j->dump()}};
    } else if (!at_end) {
      return false;
    }
  } else if (auto value_end = JsonValueEnd(text, begin)) {
    end = *value_end;
    if (auto j = ParseJson(text.substr(begin, end - begin))) calls = CallsFromJson(*j);
  } else if (!at_end) {
    return false;
  }
  if (!calls) {  // not a call after all: the rest of the reply is content
    out.content.append(text.substr(begin));
    pos_ = text.size();
    reply_ = Reply::kContent;
    return false;
  }
  for (ToolCall& c : *calls) AddCall(std::move(c), out);
  pos_ = end;
  return true;
}

void ToolCallParser::Scan(ToolCallEvents& out, bool at_end) {
  const bool delimited = format_ == ToolCallFormat::kHermes || format_ == ToolCallFormat::kDeepSeek;
  while (!full() && (delimited ? ScanHermesOrDeepSeek(out, at_end) : ScanWholeReply(out, at_end))) {
  }
}

ToolCallEvents ToolCallParser::Feed(std::string_view text) {
  buffer_.append(text);
  ToolCallEvents out;
  Scan(out, false);
  return out;
}

ToolCallEvents ToolCallParser::Finish() {
  ToolCallEvents out;
  Scan(out, true);
  return out;
}

ToolCallEvents ParseToolCalls(ToolCallFormat format, std::string_view text) {
  ToolCallParser parser(format);
  ToolCallEvents all = parser.Feed(text);
  ToolCallEvents rest = parser.Finish();
  all.content += rest.content;
  for (auto& c : rest.calls) all.calls.push_back(std::move(c));
  return all;
}

}  // namespace ridge::server
