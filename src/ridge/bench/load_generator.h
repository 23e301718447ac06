#pragma once
// Drives a benchmark's requests on schedule: request i is started no earlier
// than start + offsets_s[i], on its own worker thread, and — with a
// concurrency cap — only once fewer than max_concurrency requests are running
// (vLLM's semaphore: requests arriving at a full client wait, in arrival
// order, and their own timing starts when they get a slot). Workers are
// reused, so threads never outnumber the requests in flight.
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "ridge/base/clock.h"

namespace ridge::bench {

struct LoadTiming {
  Clock::time_point start{};  // taken just before the first request is due
  Clock::time_point end{};    // after the last request returned
  double duration_s() const { return MillisBetween(start, end) / 1000.0; }
};

// Calls run_request(i) for every i in 0..offsets_s.size()-1 (each exactly
// once, from worker threads; run_request must not throw — a throw is turned
// into std::terminate by the thread), and on_finished(n_done) after each
// returns, one call at a time. Returns when all have finished.
// offsets_s must be non-decreasing and >= 0; max_concurrency >= 1 when set.
// Throws ridge::Error for bad arguments before starting anything.
LoadTiming RunLoad(const std::vector<double>& offsets_s, std::optional<int64_t> max_concurrency,
                   const std::function<void(int64_t index)>& run_request,
                   const std::function<void(int64_t n_done)>& on_finished);

}  // namespace ridge::bench
