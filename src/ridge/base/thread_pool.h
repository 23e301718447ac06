#pragma once
// A persistent pool of worker threads. ParallelFor hands out task indices to
// the calling thread and the workers; no thread is created per operation.
// Workers spin briefly between jobs (decode issues thousands of small jobs a
// second) and then sleep. The caller works too and returns as soon as every
// task is done: it waits for workers still running a task, never for one that
// has not woken up yet (on a loaded machine that could take milliseconds).
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ridge {

class ThreadPool {
 public:
  // n_threads counts the caller: 1 means run everything on the calling thread.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }

  // Calls fn(task, thread) for every task in [0, n_tasks), spread over the
  // threads; thread is in [0, n_threads). Returns when all tasks are done.
  // Not reentrant: fn must not call ParallelFor on the same pool.
  void ParallelFor(int64_t n_tasks, const std::function<void(int64_t task, int thread)>& fn);

 private:
  void WorkerLoop(int thread);
  void RunTasks(int thread);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  // The current job. A worker joins it by raising workers_in_ and checking
  // that the job is still open; the caller closes it when every task is
  // claimed and waits for workers_in_ to fall to zero.
  std::atomic<uint64_t> generation_{0};
  std::atomic<int64_t> next_task_{0};
  std::atomic<int64_t> n_tasks_{0};
  std::atomic<const std::function<void(int64_t, int)>*> fn_{nullptr};
  std::atomic<bool> closed_{true};
  std::atomic<int> workers_in_{0};
  std::atomic<bool> stop_{false};
};

// The number of hardware threads, at least 1.
int HardwareThreads();

}  // namespace ridge
