#pragma once
// One request's timeline, as the engine (or a benchmark client) sees it, and
// the latency figures derived from it.
//
//   arrival ──queue──▶ scheduled ──prefill──▶ first token ──decode──▶ finish
//   └──────────────── TTFT ──────────────────┘
//   └──────────────────────────── E2E ──────────────────────────────────┘
//
// TPOT = (E2E − TTFT) / (output tokens − 1), zero for a single token (as in
// vLLM's benchmark_serving and GenAI-Perf). ITL is every gap between two
// consecutive token deliveries. Mark the finish when the last token is handed
// out, so that E2E = TTFT + TPOT × (output tokens − 1) holds exactly.
//
// Engine usage (one trace per request; not thread-safe, one owner at a time):
//   RequestTrace trace(n_prompt_tokens);
//   trace.MarkArrival(Clock::now());      // request accepted
//   trace.MarkScheduled(Clock::now());    // first admitted into a batch
//   trace.MarkToken(Clock::now());        // each sampled token (or n at once)
//   trace.MarkFinish(Clock::now(), FinishKind::kStop);
//   RequestMetrics m = Summarize(trace);
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ridge/base/clock.h"
#include "ridge/metrics/spec_decode_counts.h"

namespace ridge {

enum class FinishKind {
  kNone,    // not finished yet
  kStop,    // end-of-sequence token or a stop string
  kLength,  // max_tokens or the context limit
  kAbort,   // cancelled by the client
  kError,   // failed inside the engine or the transport
};

// "none", "stop", "length", "abort", "error" (OpenAI's finish_kind words).
const char* FinishKindName(FinishKind reason);

class RequestTrace {
 public:
  explicit RequestTrace(int64_t n_prompt_tokens = 0);

  // Each Mark* throws ridge::Error when called out of order: arrival first and
  // once; nothing after the finish; times never going backwards.
  void MarkArrival(Clock::time_point t);
  // The first call counts (a request preempted and rescheduled keeps its
  // first scheduling time); later calls are ignored.
  void MarkScheduled(Clock::time_point t);
  // n_tokens tokens delivered together at time t (a streaming chunk may carry
  // several); n_tokens >= 1.
  void MarkToken(Clock::time_point t, int64_t n_tokens = 1);
  void MarkFinish(Clock::time_point t, FinishKind reason);
  // Speculative decoding's tally for this request (all 0 without it).
  SpecDecodeCounts& speculation() { return speculation_; }
  const SpecDecodeCounts& speculation() const { return speculation_; }

  int64_t n_prompt_tokens() const { return n_prompt_tokens_; }
  int64_t n_output_tokens() const { return n_output_tokens_; }
  bool arrived() const { return arrival_.has_value(); }
  bool finished() const { return finish_kind_ != FinishKind::kNone; }
  FinishKind finish_kind() const { return finish_kind_; }
  std::optional<Clock::time_point> arrival() const { return arrival_; }
  std::optional<Clock::time_point> scheduled() const { return scheduled_; }
  std::optional<Clock::time_point> finish() const { return finish_; }
  // One entry per MarkToken call.
  const std::vector<Clock::time_point>& token_times() const { return token_times_; }

 private:
  void CheckOpen(const char* what, Clock::time_point t) const;

  int64_t n_prompt_tokens_ = 0;
  int64_t n_output_tokens_ = 0;
  std::optional<Clock::time_point> arrival_;
  std::optional<Clock::time_point> scheduled_;
  std::optional<Clock::time_point> finish_;
  std::vector<Clock::time_point> token_times_;
  Clock::time_point last_mark_{};
  FinishKind finish_kind_ = FinishKind::kNone;
  SpecDecodeCounts speculation_;
};

struct RequestMetrics {
  FinishKind finish_kind = FinishKind::kNone;
  // Finished by stop or length with at least one token; only these enter
  // the aggregates, as vLLM counts only successful requests.
  bool succeeded = false;
  int64_t n_prompt_tokens = 0;
  int64_t n_output_tokens = 0;
  double ttft_ms = 0;     // arrival → first token (0 without tokens)
  double tpot_ms = 0;     // (e2e − ttft) / (n_output_tokens − 1); 0 for <= 1 token
  double e2e_ms = 0;      // arrival → finish
  double decode_ms = 0;   // first token → finish (0 without tokens)
  // Known only when the trace has a scheduling time (engine-side traces;
  // a client sees only arrival and tokens).
  std::optional<double> queue_ms;    // arrival → scheduled
  std::optional<double> prefill_ms;  // scheduled → first token
  std::vector<double> itl_ms;        // gaps between consecutive token deliveries
  SpecDecodeCounts speculation;
};

// Throws ridge::Error if the trace has no arrival or is not finished.
RequestMetrics Summarize(const RequestTrace& trace);

}  // namespace ridge
