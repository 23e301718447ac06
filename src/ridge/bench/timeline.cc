#include "ridge/bench/timeline.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "ridge/base/error.h"

namespace ridge::bench {
namespace {

double AutoBucket(double duration_s) {
  const double raw = std::max(duration_s / 60.0, 1e-3);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0})
    if (m * magnitude >= raw * (1 - 1e-9)) return m * magnitude;
  return 10.0 * magnitude;
}

// Token counts per bucket of width bucket_s over [0, duration_s].
std::vector<double> TokensPerBucket(const std::vector<RequestRecord>& records, Clock::time_point start,
                                    double duration_s, double bucket_s) {
  const auto n_buckets = static_cast<size_t>(std::max(1.0, std::ceil(duration_s / bucket_s - 1e-9)));
  std::vector<double> tokens(n_buckets, 0.0);
  for (const RequestRecord& r : records) {
    if (!r.success) continue;
    const std::vector<int64_t> counts = ChunkTokenCounts(r);
    for (size_t i = 0; i < counts.size(); ++i) {
      const double t = MillisBetween(start, r.chunk_times[i]) / 1000.0;
      const auto k = static_cast<size_t>(std::clamp(std::floor(t / bucket_s), 0.0, static_cast<double>(n_buckets - 1)));
      tokens[k] += static_cast<double>(counts[i]);
    }
  }
  return tokens;
}

}  // namespace

Timeline BuildTimeline(const std::vector<RequestRecord>& records, Clock::time_point start, double duration_s,
                       double bucket_s) {
  if (!(duration_s >= 0) || !std::isfinite(duration_s))
    Fail("timeline: duration must be a finite number of seconds >= 0, got {}", duration_s);
  Timeline timeline;
  timeline.bucket_s = bucket_s > 0 ? bucket_s : AutoBucket(duration_s);
  const std::vector<double> tokens = TokensPerBucket(records, start, duration_s, timeline.bucket_s);
  for (size_t k = 0; k < tokens.size(); ++k) {
    timeline.bucket_start_s.push_back(static_cast<double>(k) * timeline.bucket_s);
    timeline.output_tokens_per_s.push_back(tokens[k] / timeline.bucket_s);
  }
  for (const double per_second : TokensPerBucket(records, start, duration_s, 1.0))
    timeline.peak_output_tokens_per_s = std::max(timeline.peak_output_tokens_per_s, per_second);

  // Sweep over [send, end) intervals; an end sorts before a send at the same time.
  std::vector<std::pair<double, int>> events;
  for (const RequestRecord& r : records) {
    events.emplace_back(MillisBetween(start, r.send_time) / 1000.0, +1);
    events.emplace_back(MillisBetween(start, std::max(r.end_time, r.send_time)) / 1000.0, -1);
  }
  std::sort(events.begin(), events.end());
  timeline.running_time_s.push_back(0.0);
  timeline.running_count.push_back(0);
  int64_t running = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    running += events[i].second;
    timeline.peak_running = std::max(timeline.peak_running, running);
    if (i + 1 < events.size() && events[i + 1].first == events[i].first) continue;  // same instant
    timeline.running_time_s.push_back(std::max(events[i].first, 0.0));
    timeline.running_count.push_back(running);
  }
  return timeline;
}

}  // namespace ridge::bench
