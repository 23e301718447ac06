#pragma once
// The metrics a ridge server exposes on /metrics, registered in one place:
//   ridge_time_to_first_token_seconds    histogram
//   ridge_inter_token_latency_seconds    histogram (every gap between tokens)
//   ridge_time_per_output_token_seconds  histogram (one TPOT per request)
//   ridge_e2e_request_latency_seconds    histogram
//   ridge_request_queue_time_seconds     histogram
//   ridge_prompt_tokens_total            counter
//   ridge_generation_tokens_total        counter
//   ridge_request_finished_total{finished_reason=stop|length|abort|error}  counter
//   ridge_spec_decode_num_draft_tokens_total     counter (vLLM's spec_decode names,
//   ridge_spec_decode_num_accepted_tokens_total  counter  see spec_decode_counts.h)
//   ridge_spec_decode_num_emitted_tokens_total   counter
//   ridge_kv_cache_usage_ratio           gauge, 0..1
//   ridge_num_requests_running           gauge
//   ridge_num_requests_waiting           gauge
//
// Usage: ServerMetrics metrics(registry); the engine calls SetRunning /
// SetWaiting / SetKvUsage after each step and ObserveFinished(Summarize(trace))
// when a request ends; the HTTP handler answers registry.RenderText().
#include <cstdint>

#include "ridge/metrics/prometheus.h"
#include "ridge/metrics/request_trace.h"

namespace ridge {

class ServerMetrics {
 public:
  // `labels` are added to every series (e.g. {{"model_name", "tinyllama"}}).
  // Throws ridge::Error if these names are already registered.
  explicit ServerMetrics(MetricsRegistry& registry, const MetricLabels& labels = {});

  // Feeds one finished request into the histograms and counters. Latencies
  // that do not exist (no token, no scheduling time) are not observed.
  void ObserveFinished(const RequestMetrics& request);

  void SetKvUsage(double used_fraction) { kv_usage_.Set(used_fraction); }
  void SetRunning(int64_t n) { running_.Set(static_cast<double>(n)); }
  void SetWaiting(int64_t n) { waiting_.Set(static_cast<double>(n)); }

  Histogram& ttft_seconds() { return ttft_; }
  Histogram& itl_seconds() { return itl_; }
  Histogram& tpot_seconds() { return tpot_; }
  Histogram& e2e_seconds() { return e2e_; }
  Histogram& queue_seconds() { return queue_; }
  const Counter& prompt_tokens() const { return prompt_tokens_; }
  const Counter& generation_tokens() const { return generation_tokens_; }
  // ridge_request_finished_total for one reason (kNone counts as error, as ObserveFinished files it).
  const Counter& finished(FinishKind kind) const;
  const Gauge& kv_usage() const { return kv_usage_; }
  const Gauge& running() const { return running_; }
  const Gauge& waiting() const { return waiting_; }

 private:
  Histogram& ttft_;
  Histogram& itl_;
  Histogram& tpot_;
  Histogram& e2e_;
  Histogram& queue_;
  Counter& prompt_tokens_;
  Counter& generation_tokens_;
  Counter& finished_stop_;
  Counter& finished_length_;
  Counter& finished_abort_;
  Counter& finished_error_;
  Counter& spec_draft_tokens_;
  Counter& spec_accepted_tokens_;
  Counter& spec_emitted_tokens_;
  Gauge& kv_usage_;
  Gauge& running_;
  Gauge& waiting_;
};

}  // namespace ridge
