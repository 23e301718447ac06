#include "ridge/bench/load_generator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "ridge/base/error.h"

namespace ridge::bench {
namespace {

struct Observed {
  std::mutex mutex;
  std::vector<double> started_s;  // by index
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  std::vector<int64_t> done_counts;
};

LoadTiming RunObserved(const std::vector<double>& offsets, std::optional<int64_t> cap, int hold_ms, Observed& seen) {
  seen.started_s.assign(offsets.size(), -1);
  const auto begin = Clock::now();
  LoadTiming timing = RunLoad(
      offsets, cap,
      [&](int64_t i) {
        const int now = ++seen.running;
        for (int m = seen.max_running.load(); now > m && !seen.max_running.compare_exchange_weak(m, now);) {
        }
        {
          std::lock_guard<std::mutex> lock(seen.mutex);
          seen.started_s[static_cast<size_t>(i)] = SecondsSince(begin);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
        --seen.running;
      },
      [&](int64_t n_done) { seen.done_counts.push_back(n_done); });
  return timing;
}

TEST(LoadGeneratorTest, EveryRequestOnceAndProgressCountsUp) {
  Observed seen;
  const std::vector<double> offsets(25, 0.0);
  const LoadTiming timing = RunObserved(offsets, std::nullopt, 5, seen);
  for (const double t : seen.started_s) EXPECT_GE(t, 0.0);
  ASSERT_EQ(seen.done_counts.size(), 25u);
  for (size_t i = 0; i < seen.done_counts.size(); ++i) EXPECT_EQ(seen.done_counts[i], static_cast<int64_t>(i + 1));
  EXPECT_GE(timing.duration_s(), 0.005);
}

TEST(LoadGeneratorTest, NoRequestStartsBeforeItsTime) {
  Observed seen;
  const std::vector<double> offsets = {0.0, 0.03, 0.03, 0.08, 0.12};
  const LoadTiming timing = RunObserved(offsets, std::nullopt, 1, seen);
  for (size_t i = 0; i < offsets.size(); ++i) EXPECT_GE(seen.started_s[i], offsets[i]) << i;
  EXPECT_GE(timing.duration_s(), 0.12);
}

TEST(LoadGeneratorTest, ConcurrencyCapHolds) {
  Observed seen;
  const std::vector<double> offsets(12, 0.0);
  RunObserved(offsets, 3, 60, seen);
  EXPECT_LE(seen.max_running.load(), 3);
  EXPECT_GE(seen.max_running.load(), 2);  // the cap, not serial execution
}

TEST(LoadGeneratorTest, WithoutACapEverythingDueAtOnceRunsAtOnce) {
  Observed seen;
  const std::vector<double> offsets(10, 0.0);
  RunObserved(offsets, std::nullopt, 300, seen);
  EXPECT_EQ(seen.max_running.load(), 10);
}

TEST(LoadGeneratorTest, BadArgumentsThrowBeforeStarting) {
  int calls = 0;
  auto run = [&](int64_t) { ++calls; };
  auto done = [](int64_t) {};
  EXPECT_THROW(RunLoad({0.0, 1.0}, 0, run, done), Error);
  EXPECT_THROW(RunLoad({0.0, -1.0}, std::nullopt, run, done), Error);
  EXPECT_THROW(RunLoad({0.5, 0.2}, std::nullopt, run, done), Error);
  EXPECT_EQ(calls, 0);
  const LoadTiming empty = RunLoad({}, std::nullopt, run, done);
  EXPECT_GE(empty.duration_s(), 0.0);
}

}  // namespace
}  // namespace ridge::bench
