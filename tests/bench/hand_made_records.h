#pragma once
// Request records made by hand, with round numbers, for the report, trace
// and timeline tests. Times are milliseconds after At(0).
#include <chrono>
#include <vector>

#include "ridge/bench/request_runner.h"

namespace ridge::bench::testing {

inline Clock::time_point At(double ms) {
  return Clock::time_point{} + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
}

inline RequestRecord Succeeded(int64_t index, double send_ms, std::vector<double> chunk_ms, double end_ms,
                               int64_t usage_prompt, int64_t usage_completion) {
  RequestRecord r;
  r.index = index;
  r.send_time = At(send_ms);
  for (const double t : chunk_ms) r.chunk_times.push_back(At(t));
  r.end_time = At(end_ms);
  r.http_status = 200;
  r.done_seen = true;
  r.success = true;
  r.finish_reason = "length";
  r.usage_prompt_tokens = usage_prompt;
  r.usage_completion_tokens = usage_completion;
  r.n_prompt_tokens_client = usage_prompt;
  r.n_output_tokens_requested = usage_completion;
  return r;
}

// A: TTFT 100, ITL 20 30, E2E 150, 3 tokens → TPOT 25.
// B: sent at 50; 4 chunks but 6 tokens (the last chunk carries 3):
//    TTFT 200, ITL 10 20 20, E2E 250, TPOT 50 / 5 = 10.
// C: HTTP 500 after 10 ms.
// D: one token: TTFT 300 = E2E, no TPOT, no ITL.
inline std::vector<RequestRecord> FourRecords() {
  std::vector<RequestRecord> records;
  records.push_back(Succeeded(0, 0, {100, 120, 150}, 160, 10, 3));
  records.push_back(Succeeded(1, 50, {250, 260, 280, 300}, 310, 20, 6));
  RequestRecord failed;
  failed.index = 2;
  failed.send_time = At(60);
  failed.end_time = At(70);
  failed.http_status = 500;
  failed.error = "HTTP 500: boom";
  failed.n_prompt_tokens_client = 7;
  failed.n_output_tokens_requested = 3;
  records.push_back(failed);
  records.push_back(Succeeded(3, 100, {400}, 410, 5, 1));
  return records;
}

}  // namespace ridge::bench::testing
