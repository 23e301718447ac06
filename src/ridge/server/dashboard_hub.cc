#include "ridge/server/dashboard_hub.h"

#include "ridge/base/error.h"

namespace ridge::server {

DashboardHub::DashboardHub(DashboardOptions options) : options_(options), start_(Clock::now()) {
  if (options_.max_events < 1) Fail("the dashboard needs room for at least one event");
  if (options_.snapshot_interval.count() < 1) Fail("the dashboard snapshot interval must be at least 1 ms");
}

void DashboardHub::Publish(DashboardEvent event) {
  const bool finished = std::holds_alternative<FinishedEvent>(event);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    changed_since_snapshot_ = true;
    // Nobody reads: no ring to keep (only the finished requests' history), only the numbering.
    if (subscriptions_.empty() && !finished) {
      ++first_;
      return;
    }
    auto entry = std::make_shared<const DashboardEvent>(std::move(event));
    if (finished) {
      finished_.push_back(entry);
      if (finished_.size() > options_.finished_history) finished_.pop_front();
    }
    if (subscriptions_.empty()) {
      ++first_;
      return;
    }
    ring_.push_back(std::move(entry));
    if (ring_.size() > options_.max_events) {
      ring_.pop_front();
      ++first_;
    }
  }
  changed_.notify_all();
}

void DashboardHub::OnQueued(RequestId id, int64_t n_prompt, Clock::time_point arrival) {
  Publish(QueuedEvent{id, n_prompt, arrival});
}

void DashboardHub::OnStep(StepRecord step) { Publish(std::move(step)); }

void DashboardHub::OnFinished(RequestId id, const RequestTrace& trace, int64_t kv_blocks) {
  Publish(FinishedEvent{id, trace, kv_blocks});
}

bool DashboardHub::WantsSnapshot(Clock::time_point now) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (subscriptions_.empty() || closed_) return false;
  if (snapshot_requested_) return true;
  return changed_since_snapshot_ && now - last_snapshot_ >= options_.snapshot_interval;
}

void DashboardHub::OnSnapshot(EngineSnapshot snapshot) {
  auto shared = std::make_shared<const EngineSnapshot>(std::move(snapshot));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last_snapshot_ = shared->at;
    snapshot_ = std::move(shared);
    ++snapshot_version_;
    changed_since_snapshot_ = false;
    snapshot_requested_ = false;
  }
  changed_.notify_all();
}

std::shared_ptr<DashboardHub::Subscription> DashboardHub::Subscribe() {
  std::lock_guard<std::mutex> lock(mutex_);
  snapshot_requested_ = true;
  auto s = std::make_shared<Subscription>();
  s->cursor = first_ + ring_.size();
  subscriptions_.push_back(s);
  return s;
}

void DashboardHub::Unsubscribe(const std::shared_ptr<Subscription>& s) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (s->cursor < first_) dropped_told_ += first_ - s->cursor;
  std::erase(subscriptions_, s);
  if (subscriptions_.empty()) {
    first_ += ring_.size();
    ring_.clear();
  }
}

bool DashboardHub::Poll(Subscription& s, Clock::time_point not_before, Clock::time_point give_up, Delivery& out) {
  out = Delivery{};
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_until(lock, not_before, [&] { return closed_; });
  auto ready = [&] { return closed_ || s.cursor < first_ + ring_.size() || snapshot_version_ > s.snapshot_version; };
  changed_.wait_until(lock, give_up, ready);
  if (closed_) return false;
  if (s.cursor < first_) {
    out.dropped = first_ - s.cursor;
    s.dropped += out.dropped;
    dropped_told_ += out.dropped;
    s.cursor = first_;
  }
  for (uint64_t n = s.cursor; n < first_ + ring_.size(); ++n) out.events.push_back(ring_[n - first_]);
  s.cursor = first_ + ring_.size();
  if (snapshot_version_ > s.snapshot_version) {
    out.snapshot = snapshot_;
    s.snapshot_version = snapshot_version_;
  }
  return true;
}

std::vector<std::shared_ptr<const DashboardEvent>> DashboardHub::RecentFinished() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return {finished_.begin(), finished_.end()};
}

void DashboardHub::Close() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
  }
  changed_.notify_all();
}

int64_t DashboardHub::subscribers() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<int64_t>(subscriptions_.size());
}

uint64_t DashboardHub::dropped_total() const {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t total = dropped_told_;
  for (const auto& s : subscriptions_)
    if (s->cursor < first_) total += first_ - s->cursor;
  return total;
}

}  // namespace ridge::server
