#pragma once
// The live dashboard's fan-out: the engine thread publishes into it (as the
// engine's observer), each GET /v1/dashboard/events stream reads from it at
// its own pace.
//
//   engine thread ──OnQueued/OnStep/OnFinished──▶ ring of the last max_events events
//                 ──OnSnapshot (rate-limited)───▶ the latest snapshot
//   each stream   ◀──Poll: the events after its cursor + the snapshot if newer
//
// The engine never waits for a reader: publishing takes one short lock and
// appends; when the ring is full its oldest event goes. A reader that fell
// behind the ring's start (a slow or stalled client) skips what was dropped
// and is told how many (Delivery::dropped). Snapshots are built only while
// someone subscribes, at most every snapshot_interval, and only when
// something happened since the last one (or a new subscriber needs one).
// Latency samples of the last finished requests are kept for new subscribers.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <variant>
#include <vector>

#include "ridge/engine/engine_observer.h"

namespace ridge::server {

struct DashboardOptions {
  std::chrono::milliseconds snapshot_interval{200};
  size_t max_events = 4096;        // the ring: events kept for readers
  size_t finished_history = 256;   // finished requests kept for new subscribers
};

struct QueuedEvent {
  RequestId id = 0;
  int64_t n_prompt = 0;
  Clock::time_point arrival;
};

struct FinishedEvent {
  RequestId id = 0;
  RequestTrace trace;  // finished
  int64_t kv_blocks = 0;  // held at the end
};

using DashboardEvent = std::variant<QueuedEvent, StepRecord, FinishedEvent>;

class DashboardHub : public EngineObserver {
 public:
  explicit DashboardHub(DashboardOptions options = {});

  // EngineObserver (engine thread).
  void OnQueued(RequestId id, int64_t n_prompt, Clock::time_point arrival) override;
  void OnStep(StepRecord step) override;
  void OnFinished(RequestId id, const RequestTrace& trace, int64_t kv_blocks) override;
  bool WantsSnapshot(Clock::time_point now) override;
  void OnSnapshot(EngineSnapshot snapshot) override;

  // A reader's place. Make it with Subscribe, give it back with Unsubscribe.
  struct Subscription {
    uint64_t cursor = 0;            // the next event's number
    uint64_t snapshot_version = 0;  // the last snapshot delivered
    uint64_t dropped = 0;           // events it never got, in total
  };
  struct Delivery {
    std::vector<std::shared_ptr<const DashboardEvent>> events;  // in order
    std::shared_ptr<const EngineSnapshot> snapshot;             // null: none newer than the last
    uint64_t dropped = 0;                                       // newly dropped before `events`
  };
  // Starts at the newest event (history comes from RecentFinished()); asks
  // the engine for a fresh snapshot. The hub watches the subscription until
  // Unsubscribe, to count what a stalled reader is missing.
  std::shared_ptr<Subscription> Subscribe();
  void Unsubscribe(const std::shared_ptr<Subscription>& subscription);
  // Waits until `not_before` (a reader's rate limit; Close wakes it), then
  // until there is something new or `give_up`. False once closed.
  bool Poll(Subscription& subscription, Clock::time_point not_before, Clock::time_point give_up, Delivery& out);
  // The last finished requests (oldest first), for a new reader's history.
  std::vector<std::shared_ptr<const DashboardEvent>> RecentFinished() const;
  // Ends every Poll (server shutdown).
  void Close();

  const DashboardOptions& options() const { return options_; }
  Clock::time_point start() const { return start_; }
  int64_t subscribers() const;
  // Events dropped for slow readers since the start, all readers together,
  // those a reader stuck in a write has not been told of yet included.
  uint64_t dropped_total() const;

 private:
  void Publish(DashboardEvent event);

  const DashboardOptions options_;
  const Clock::time_point start_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::shared_ptr<const DashboardEvent>> ring_;  // events first_ .. first_ + size - 1
  uint64_t first_ = 0;
  std::deque<std::shared_ptr<const DashboardEvent>> finished_;  // FinishedEvent only
  std::shared_ptr<const EngineSnapshot> snapshot_;
  uint64_t snapshot_version_ = 0;
  Clock::time_point last_snapshot_{};
  bool changed_since_snapshot_ = true;
  bool snapshot_requested_ = false;
  std::vector<std::shared_ptr<Subscription>> subscriptions_;
  uint64_t dropped_told_ = 0;  // dropped events readers were told of (or had pending when they left)
  bool closed_ = false;
};

}  // namespace ridge::server
