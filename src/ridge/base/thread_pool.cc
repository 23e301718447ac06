#include "ridge/base/thread_pool.h"

#include <immintrin.h>

#include "ridge/base/error.h"

namespace ridge {
namespace {
constexpr int kSpinIterations = 20000;
}

int HardwareThreads() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads < 1 ? 1 : n_threads) {
  for (int t = 1; t < n_threads_; ++t) workers_.emplace_back([this, t] { WorkerLoop(t); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& w : workers_) w.join();
}

void ThreadPool::RunTasks(int thread) {
  const auto* fn = fn_.load();
  const int64_t n_tasks = n_tasks_.load();
  for (;;) {
    int64_t task = next_task_.fetch_add(1);
    if (task >= n_tasks) break;
    (*fn)(task, thread);
  }
}

void ThreadPool::ParallelFor(int64_t n_tasks, const std::function<void(int64_t, int)>& fn) {
  if (n_tasks <= 0) return;
  if (n_threads_ == 1 || n_tasks == 1) {
    for (int64_t t = 0; t < n_tasks; ++t) fn(t, 0);
    return;
  }
  while (workers_in_.load() != 0) _mm_pause();  // a straggler of the last job is leaving
  fn_.store(&fn);
  n_tasks_.store(n_tasks);
  next_task_.store(0);
  closed_.store(false);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  RunTasks(0);
  closed_.store(true);
  while (workers_in_.load() != 0) _mm_pause();
}

void ThreadPool::WorkerLoop(int thread) {
  uint64_t seen = 0;
  for (;;) {
    int spins = 0;
    while (generation_.load() == seen && spins < kSpinIterations) {
      _mm_pause();
      ++spins;
    }
    if (generation_.load() == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load() != seen; });
    }
    seen = generation_.load();
    if (stop_.load()) return;
    workers_in_.fetch_add(1);
    if (generation_.load() == seen && !closed_.load()) RunTasks(thread);
    workers_in_.fetch_sub(1);
  }
}

}  // namespace ridge
