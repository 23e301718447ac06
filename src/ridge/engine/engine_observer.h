#pragma once
// What the engine thread reports to an observer (the server's live dashboard):
// each request queued, each step's batch composition and timing, each request
// finished, and, when the observer asks for it, a snapshot of the running and
// waiting requests and of the KV block map.
//
// Every callback runs on the engine thread, between steps: an observer must
// return at once (copy the data into a bounded buffer and go), never wait on
// a consumer. The engine never calls back while holding its locks.
#include <cstdint>
#include <vector>

#include "ridge/base/clock.h"
#include "ridge/engine/request_stream.h"
#include "ridge/kv/paged_kv_cache.h"
#include "ridge/metrics/request_trace.h"

namespace ridge {

// One request's part of a step's batch.
struct StepSegment {
  RequestId id = 0;
  bool prefill = false;      // a prompt chunk (recomputation after preemption included); else one decode token
  int64_t tokens = 0;        // tokens fed this step
  int64_t context_before = 0;  // positions already in the KV cache before this step
};

struct StepRecord {
  int64_t step = 0;  // EngineStats::steps after this step (1 for the first)
  Clock::time_point start, end;  // scheduling start to the last token handed out
  Clock::time_point forward_start, forward_end;  // the forward pass alone
  std::vector<StepSegment> segments;  // decode segments first, then prefill chunks
};

struct RequestSnapshot {
  RequestId id = 0;
  int64_t n_prompt = 0;
  int64_t n_computed = 0;   // positions in the KV cache
  int64_t n_generated = 0;
  int64_t kv_blocks = 0;    // blocks in its block table (shared ones included)
  Clock::time_point arrival;
};

struct EngineSnapshot {
  Clock::time_point at;
  int64_t steps = 0;
  int64_t preemptions = 0;
  std::vector<RequestSnapshot> running;  // admission order
  std::vector<RequestSnapshot> waiting;  // queue order (n_computed 0)
  KvAccounting kv;
  std::vector<KvBlockRun> kv_map;  // the pool's blocks in id order, run-length encoded
};

class EngineObserver {
 public:
  virtual ~EngineObserver() = default;
  // A request taken from the submit inbox into the waiting queue.
  virtual void OnQueued(RequestId id, int64_t n_prompt, Clock::time_point arrival) = 0;
  virtual void OnStep(StepRecord step) = 0;
  // `trace` is finished (MarkFinish done); kv_blocks: the blocks its table
  // held when it ended (just before they were freed).
  virtual void OnFinished(RequestId id, const RequestTrace& trace, int64_t kv_blocks) = 0;
  // Asked after each step, an empty one too (an idle engine steps every
  // 50 ms): whether to build a snapshot now. The observer rate-limits here.
  virtual bool WantsSnapshot(Clock::time_point now) = 0;
  virtual void OnSnapshot(EngineSnapshot snapshot) = 0;
};

}  // namespace ridge
