#include "ridge/bench/load_generator.h"

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "ridge/base/error.h"

namespace ridge::bench {
namespace {

// A pool that grows by one thread whenever a job is queued and no worker is
// idle, so every queued job starts at once.
class ElasticPool {
 public:
  ~ElasticPool() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  void Submit(std::function<void()> job) {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(job));
    if (jobs_.size() > idle_) threads_.emplace_back([this] { WorkerLoop(); });
    else wake_.notify_one();
  }

 private:
  void WorkerLoop() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      while (jobs_.empty() && !stopping_) {
        ++idle_;
        wake_.wait(lock);
        --idle_;
      }
      if (jobs_.empty()) return;  // stopping
      std::function<void()> job = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      job();
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;
  size_t idle_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace

LoadTiming RunLoad(const std::vector<double>& offsets_s, std::optional<int64_t> max_concurrency,
                   const std::function<void(int64_t index)>& run_request,
                   const std::function<void(int64_t n_done)>& on_finished) {
  if (max_concurrency && *max_concurrency < 1) Fail("--max-concurrency must be >= 1, got {}", *max_concurrency);
  for (size_t i = 0; i < offsets_s.size(); ++i) {
    if (!(offsets_s[i] >= 0) || !std::isfinite(offsets_s[i]) || (i > 0 && offsets_s[i] < offsets_s[i - 1]))
      Fail("request schedule: offset {} of request {} is negative, not finite or earlier than the one before",
           offsets_s[i], i);
  }
  std::mutex mutex;
  std::condition_variable changed;
  int64_t running = 0;
  int64_t n_done = 0;
  const auto n_requests = static_cast<int64_t>(offsets_s.size());

  LoadTiming timing;
  {
    ElasticPool pool;
    timing.start = Clock::now();
    for (int64_t i = 0; i < n_requests; ++i) {
      const auto due = timing.start + std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(offsets_s[static_cast<size_t>(i)]));
      std::this_thread::sleep_until(due);
      {
        std::unique_lock<std::mutex> lock(mutex);
        if (max_concurrency) changed.wait(lock, [&] { return running < *max_concurrency; });
        ++running;
      }
      pool.Submit([&, i] {
        run_request(i);
        std::lock_guard<std::mutex> lock(mutex);
        --running;
        ++n_done;
        on_finished(n_done);
        changed.notify_all();
      });
    }
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return n_done == n_requests; });
    timing.end = Clock::now();
  }  // joins the workers
  return timing;
}

}  // namespace ridge::bench
