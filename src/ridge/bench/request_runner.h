#pragma once
// One streaming request as a benchmark client sees it, timed on the client
// as vLLM's benchmark_serving does:
//   send_time   just before connecting (after any wait for a concurrency slot);
//   chunk_times when each SSE event carrying text arrives (a chat stream's
//               role-only first event and the usage-only last one do not count);
//   TTFT = first chunk − send, ITL = gaps between chunks,
//   E2E  = last chunk − send, TPOT = (E2E − TTFT) / (output tokens − 1)
// with the output token count from the server's usage (the number of text
// chunks if it sends none). A request succeeds when the status is 200, the
// stream carries text, no error event, and ends with "data: [DONE]".
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ridge/base/clock.h"
#include "ridge/bench/dataset.h"
#include "ridge/bench/http_client.h"
#include "ridge/bench/openai_stream.h"
#include "ridge/metrics/request_trace.h"

namespace ridge::bench {

struct StreamTarget {
  BaseUrl base;
  std::string endpoint = "/v1/completions";
  ApiKind kind = ApiKind::kCompletions;
  std::string model;
  bool ignore_eos = true;
  HttpOptions http;
};

struct RequestRecord {
  int64_t index = -1;
  Clock::time_point send_time{};
  Clock::time_point end_time{};                // the stream's end, or the failure
  std::vector<Clock::time_point> chunk_times;  // one per event with text
  int http_status = 0;
  bool done_seen = false;
  bool success = false;
  std::string error;  // why it failed ("" on success)
  std::string generated_text;
  std::string finish_reason;  // the last one the stream gave ("length", "stop")
  int64_t n_prompt_tokens_client = 0;     // the dataset's count
  int64_t n_output_tokens_requested = 0;  // max_tokens
  std::optional<int64_t> usage_prompt_tokens;
  std::optional<int64_t> usage_completion_tokens;

  // usage.prompt_tokens when the server sent it, else the dataset's count.
  int64_t n_prompt_tokens() const;
  // usage.completion_tokens when sent (and not below the number of text
  // chunks), else the number of text chunks.
  int64_t n_output_tokens() const;
};

// Sends `request` and records what came back; never throws for a server or
// network failure (the record says what went wrong).
RequestRecord RunStreamingRequest(const StreamTarget& target, const BenchRequest& request);

// Tokens credited to each text chunk: one each, the last one also taking the
// remainder when the usage count exceeds the chunk count (a server that sends
// several tokens in one chunk), so the counts sum to n_output_tokens().
std::vector<int64_t> ChunkTokenCounts(const RequestRecord& record);

// The client-side trace of a finished record: arrival = send, one token mark
// per text chunk (ChunkTokenCounts), finish at the last chunk (kLength or
// kStop from finish_reason). A failed record gives an arrival and a kError
// finish at end_time and no tokens. Feed Summarize() / Aggregate().
RequestTrace ToTrace(const RequestRecord& record);

}  // namespace ridge::bench
