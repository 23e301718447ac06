#include "ridge/bench/request_runner.h"

#include <fmt/format.h>

#include <algorithm>

#include "ridge/base/error.h"
#include "ridge/bench/sse_parser.h"

namespace ridge::bench {

int64_t RequestRecord::n_prompt_tokens() const {
  return usage_prompt_tokens ? *usage_prompt_tokens : n_prompt_tokens_client;
}

int64_t RequestRecord::n_output_tokens() const {
  const auto n_chunks = static_cast<int64_t>(chunk_times.size());
  if (usage_completion_tokens && *usage_completion_tokens >= n_chunks) return *usage_completion_tokens;
  return n_chunks;
}

namespace {

// Applies one event's data to the record; returns false to stop reading.
bool ApplyEvent(const StreamTarget& target, const SseEvent& event, Clock::time_point received,
                RequestRecord* record) {
  if (record->done_seen) return true;  // anything after [DONE] is ignored
  StreamChunk chunk;
  try {
    chunk = ParseStreamChunk(target.kind, event.data);
  } catch (const Error& e) {
    record->error = e.what();
    return false;
  }
  if (chunk.done) {
    record->done_seen = true;
    return true;
  }
  if (chunk.error || event.type == "error") {
    record->error = "error event in the stream: " + chunk.error.value_or(event.data);
    return false;
  }
  if (!chunk.text.empty()) {
    record->chunk_times.push_back(received);
    record->generated_text += chunk.text;
  }
  if (chunk.finish_reason) record->finish_reason = *chunk.finish_reason;
  if (chunk.prompt_tokens) record->usage_prompt_tokens = chunk.prompt_tokens;
  if (chunk.completion_tokens) record->usage_completion_tokens = chunk.completion_tokens;
  return true;
}

}  // namespace

RequestRecord RunStreamingRequest(const StreamTarget& target, const BenchRequest& request) {
  RequestRecord record;
  record.index = request.index;
  record.n_prompt_tokens_client = request.n_prompt_tokens;
  record.n_output_tokens_requested = request.n_output_tokens;
  CompletionRequest body;
  body.model = target.model;
  body.prompt = request.prompt;
  body.max_tokens = request.n_output_tokens;
  body.ignore_eos = target.ignore_eos;
  const std::string json_body = BuildRequestBody(target.kind, body);

  SseParser parser;
  bool stopped = false;
  auto on_bytes = [&](std::string_view bytes) {
    const Clock::time_point received = Clock::now();
    for (const SseEvent& event : parser.Feed(bytes)) {
      if (!ApplyEvent(target, event, received, &record)) {
        stopped = true;
        return false;
      }
    }
    return true;
  };
  record.send_time = Clock::now();
  const HttpReply reply = HttpPostStreaming(target.base, target.endpoint, json_body, target.http, on_bytes);
  if (!stopped && reply.transport_error.empty() && reply.status == 200) {
    const Clock::time_point received = Clock::now();
    for (const SseEvent& event : parser.Finish())
      if (!ApplyEvent(target, event, received, &record)) break;
  }
  record.end_time = Clock::now();
  record.http_status = reply.status;

  if (!record.error.empty()) {
    // Set while reading the stream (bad chunk, error event).
  } else if (!reply.transport_error.empty()) {
    record.error = reply.transport_error;
    // Lost before the status line: often a server's listen backlog
    // overflowing under a burst of connections.
    if (reply.status == 0 && reply.transport_error.rfind("connection lost", 0) == 0)
      record.error += " (before any response arrived)";
  } else if (reply.status != 200) {
    record.error = fmt::format("HTTP {}: {}", reply.status, ErrorMessageFromBody(reply.body));
  } else if (!record.done_seen) {
    record.error = "the stream ended without data: [DONE]";
  } else if (record.chunk_times.empty()) {
    record.error = "the stream carried no text";
  }
  record.success = record.error.empty();
  return record;
}

std::vector<int64_t> ChunkTokenCounts(const RequestRecord& record) {
  std::vector<int64_t> counts(record.chunk_times.size(), 1);
  if (!counts.empty()) counts.back() += record.n_output_tokens() - static_cast<int64_t>(counts.size());
  return counts;
}

RequestTrace ToTrace(const RequestRecord& record) {
  RequestTrace trace(record.n_prompt_tokens());
  trace.MarkArrival(record.send_time);
  if (!record.success) {
    trace.MarkFinish(std::max(record.end_time, record.send_time), FinishKind::kError);
    return trace;
  }
  if (record.chunk_times.empty()) Fail("request {}: marked successful without any text chunk", record.index);
  const std::vector<int64_t> counts = ChunkTokenCounts(record);
  for (size_t i = 0; i < counts.size(); ++i) trace.MarkToken(record.chunk_times[i], counts[i]);
  trace.MarkFinish(record.chunk_times.back(),
                   record.finish_reason == "length" ? FinishKind::kLength : FinishKind::kStop);
  return trace;
}

}  // namespace ridge::bench
