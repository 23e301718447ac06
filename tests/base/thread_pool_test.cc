#include "ridge/base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <vector>

namespace ridge {
namespace {

TEST(ThreadPool, RunsEveryTaskExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {0, 1, 2, 7, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      std::atomic<int> bad_thread{0};
      pool.ParallelFor(n, [&](int64_t task, int thread) {
        hits[static_cast<size_t>(task)]++;
        if (thread < 0 || thread >= threads) bad_thread++;
      });
      for (auto& h : hits) EXPECT_EQ(h.load(), 1);
      EXPECT_EQ(bad_thread.load(), 0);
    }
  }
}

TEST(ThreadPool, ManySmallJobsInARow) {
  ThreadPool pool(2);
  std::atomic<int64_t> sum{0};
  for (int job = 0; job < 5000; ++job) pool.ParallelFor(4, [&](int64_t task, int) { sum += task; });
  EXPECT_EQ(sum.load(), 5000 * 6);
}

// Each job's closure and data die when ParallelFor returns: a worker that
// woke late must never touch them (ASan would catch it) nor run an old job.
TEST(ThreadPool, LateWorkersNeverSeeAFinishedJob) {
  ThreadPool pool(3);
  for (int job = 0; job < 3000; ++job) {
    std::vector<int> data(static_cast<size_t>(1 + job % 7), 0);
    pool.ParallelFor(static_cast<int64_t>(data.size()), [&data, job](int64_t task, int) { data[static_cast<size_t>(task)] += job; });
    for (int v : data) ASSERT_EQ(v, job);
  }
}

}  // namespace
}  // namespace ridge
