#pragma once
// A benchmark's activity over time, for plots and peak figures:
//   - output tokens per second: tokens credited to text chunks
//     (ChunkTokenCounts) of successful requests, in equal time buckets;
//   - requests in flight: every request from its send to its end (failed
//     ones too), as an exact step function.
// Times are seconds since the benchmark start.
#include <cstdint>
#include <vector>

#include "ridge/base/clock.h"
#include "ridge/bench/request_runner.h"

namespace ridge::bench {

struct Timeline {
  double bucket_s = 1;
  std::vector<double> bucket_start_s;
  std::vector<double> output_tokens_per_s;
  // Step function: from running_time_s[k] on, running_count[k] requests are
  // in flight (starts at 0 requests at time 0).
  std::vector<double> running_time_s;
  std::vector<int64_t> running_count;
  // vLLM's figures: the most output tokens in one 1-second bucket, and the
  // most requests in flight at once.
  double peak_output_tokens_per_s = 0;
  int64_t peak_running = 0;
};

// bucket_s <= 0: about 60 buckets over duration_s, rounded to 1/2/5 × 10^k s
// (at least 1 ms). Throws ridge::Error for a negative or non-finite duration.
Timeline BuildTimeline(const std::vector<RequestRecord>& records, Clock::time_point start, double duration_s,
                       double bucket_s = 0);

}  // namespace ridge::bench
