#pragma once
// The channel between the engine thread and whoever consumes one request's
// output (a CLI, an HTTP handler, a test). The engine pushes sampled tokens
// and the finish; the consumer waits for them and may ask to cancel. Both
// sides may run on different threads.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "ridge/metrics/request_trace.h"
#include "ridge/sampling/sampler.h"

namespace ridge {

using RequestId = int64_t;

struct StreamUpdate {
  std::vector<sampling::SampledToken> tokens;  // new since the previous update, in order
  bool finished = false;
  FinishKind finish_kind = FinishKind::kNone;
  std::string error;  // why, when finish_kind is kError
  // A kError the request brought on itself (its grammar cannot be followed),
  // not a fault of the server's: a server answers it as the client's error.
  bool request_fault = false;
};

class RequestStream {
 public:
  explicit RequestStream(RequestId id) : id_(id) {}
  RequestId id() const { return id_; }

  // Consumer side. Waits until there are new tokens or the request finished,
  // or `timeout` passed; moves what arrived into `out` (replacing its
  // contents). Returns false on timeout with nothing new.
  bool Wait(StreamUpdate& out, std::chrono::milliseconds timeout);
  // Asks the engine to end the request at its next step, reporting `kind`
  // (kAbort for a client that went away, kStop for a stop string it found).
  void Cancel(FinishKind kind = FinishKind::kAbort);
  bool cancel_requested() const { return cancel_kind_.load() != static_cast<int>(FinishKind::kNone); }
  FinishKind cancel_kind() const { return static_cast<FinishKind>(cancel_kind_.load()); }
  // The request's timeline; complete once finished() is true.
  RequestTrace trace() const;
  bool finished() const;

  // Engine side.
  void PushToken(const sampling::SampledToken& token, Clock::time_point t);
  void Finish(FinishKind kind, Clock::time_point t, const std::string& error = {}, bool request_fault = false);
  void MarkScheduled(Clock::time_point t);
  void MarkArrival(Clock::time_point t, int64_t n_prompt_tokens);
  // A speculative step verified `drafted` tokens and gave `emitted`.
  void RecordSpecStep(int64_t drafted, int64_t emitted);

 private:
  const RequestId id_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  StreamUpdate pending_;
  bool finished_ = false;
  RequestTrace trace_;
  std::atomic<int> cancel_kind_{static_cast<int>(FinishKind::kNone)};
};

}  // namespace ridge
