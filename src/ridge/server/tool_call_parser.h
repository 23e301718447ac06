#pragma once
// The model's text → assistant content and OpenAI tool calls, for the tool-call
// formats in common use, incrementally (the text arrives a token at a time and
// a marker may be split across pieces):
//   kHermes    <tool_call>{"name": N, "arguments": {...}}</tool_call>   (Hermes, Qwen 2.5/3, many fine-tunes)
//   kLlama3    {"name": N, "parameters": {...}}, optionally after <|python_tag|>, as the whole reply
//   kMistral   [TOOL_CALLS][{"name": N, "arguments": {...}, "id": ...}, ...]
//   kDeepSeek  <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>N\n```json\n{...}\n```<｜tool▁call▁end｜>...
//   kJson      {"name": N, "arguments": {...}}, {"tool_calls": [...]} or [{"name": N, "parameters": {...}}, ...]
//              as the whole reply (the generic form, and forced calls)
// Text outside the calls is content. A call whose JSON is malformed stays
// content (the client sees what the model wrote, nothing is lost).
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ridge::server {

enum class ToolCallFormat { kHermes, kLlama3, kMistral, kDeepSeek, kJson };
const char* ToolCallFormatName(ToolCallFormat format);

// The format a chat template's model writes, from markers in the template;
// kJson when none is recognised.
ToolCallFormat ToolCallFormatForTemplate(std::string_view chat_template);

struct ToolCall {
  std::string id;         // "call_<n>" unless the model gave one
  std::string name;
  std::string arguments;  // a JSON object, as text
};

// What one Feed() or Finish() releases: content to stream, and the calls
// completed in this piece (with their index among all calls of the reply).
struct ToolCallEvents {
  std::string content;
  std::vector<std::pair<int, ToolCall>> calls;
};

class ToolCallParser {
 public:
  // id_prefix: ids are id_prefix + a per-reply counter when the model gives none.
  // max_calls: once that many calls are parsed, the rest of the reply is
  // dropped, neither content nor calls (parallel_tool_calls false: 1).
  explicit ToolCallParser(ToolCallFormat format, std::string id_prefix = "call_",
                          size_t max_calls = std::numeric_limits<size_t>::max());

  // Appends generated text; content that cannot be the start of a call is released at once.
  ToolCallEvents Feed(std::string_view text);
  // End of the reply: releases what was held back (an unterminated call as content).
  ToolCallEvents Finish();

  const std::vector<ToolCall>& calls() const { return calls_; }
  // max_calls reached: nothing more will be released.
  bool full() const { return calls_.size() >= max_calls_; }

 private:
  // Scans buffer_ from pos_, appending to `out`; stops where more text is needed.
  void Scan(ToolCallEvents& out, bool at_end);
  bool ScanHermesOrDeepSeek(ToolCallEvents& out, bool at_end);
  bool ScanWholeReply(ToolCallEvents& out, bool at_end);
  void AddCall(ToolCall call, ToolCallEvents& out);

  ToolCallFormat format_;
  std::string id_prefix_;
  size_t max_calls_;
  std::string buffer_;  // all text fed so far
  size_t pos_ = 0;      // buffer_[0, pos_) is released (as content or calls)
  // kLlama3/kMistral/kJson decide from the reply's first bytes whether it is calls.
  enum class Reply { kUndecided, kContent, kCalls } reply_ = Reply::kUndecided;
  std::vector<ToolCall> calls_;
};

// The whole reply at once (non-streaming responses).
ToolCallEvents ParseToolCalls(ToolCallFormat format, std::string_view text);

// Where a JSON value starting at text[begin] ends (one past its last byte), or
// nullopt if the text ends first. Strings and escapes are honoured; the value
// is not otherwise validated.
std::optional<size_t> JsonValueEnd(std::string_view text, size_t begin);

}  // namespace ridge::server
