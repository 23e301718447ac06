#include "ridge/engine/request_stream.h"

namespace ridge {

bool RequestStream::Wait(StreamUpdate& out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return !pending_.tokens.empty() || pending_.finished; });
  if (pending_.tokens.empty() && !pending_.finished) return false;
  out = std::move(pending_);  // a finish is reported once
  pending_ = StreamUpdate{};
  return true;
}

void RequestStream::Cancel(FinishKind kind) {
  int none = static_cast<int>(FinishKind::kNone);
  cancel_kind_.compare_exchange_strong(none, static_cast<int>(kind));
}

RequestTrace RequestStream::trace() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return trace_;
}

bool RequestStream::finished() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return finished_;
}

void RequestStream::PushToken(const sampling::SampledToken& token, Clock::time_point t) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.tokens.push_back(token);
    trace_.MarkToken(t);
  }
  changed_.notify_all();
}

void RequestStream::Finish(FinishKind kind, Clock::time_point t, const std::string& error, bool request_fault) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
    finished_ = true;
    pending_.finished = true;
    pending_.finish_kind = kind;
    pending_.error = error;
    pending_.request_fault = request_fault;
    trace_.MarkFinish(t, kind);
  }
  changed_.notify_all();
}

void RequestStream::MarkScheduled(Clock::time_point t) {
  std::lock_guard<std::mutex> lock(mutex_);
  trace_.MarkScheduled(t);
}

void RequestStream::RecordSpecStep(int64_t drafted, int64_t emitted) {
  std::lock_guard<std::mutex> lock(mutex_);
  trace_.speculation().AddStep(drafted, emitted);
}

void RequestStream::MarkArrival(Clock::time_point t, int64_t n_prompt_tokens) {
  std::lock_guard<std::mutex> lock(mutex_);
  trace_ = RequestTrace(n_prompt_tokens);
  trace_.MarkArrival(t);
}

}  // namespace ridge
