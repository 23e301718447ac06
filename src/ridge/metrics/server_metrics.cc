#include "ridge/metrics/server_metrics.h"

namespace ridge {
namespace {

// Bounds in seconds. CPU inference is slower than a GPU server's, so the
// latency buckets reach further than vLLM's.
const std::vector<double> kTtftBuckets = {0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
                                          2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0};
const std::vector<double> kTokenGapBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,
                                              0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 10.0};
const std::vector<double> kRequestBuckets = {0.1, 0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0,
                                             20.0, 30.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0};

MetricLabels With(MetricLabels labels, const char* name, const char* value) {
  labels.emplace_back(name, value);
  return labels;
}

}  // namespace

ServerMetrics::ServerMetrics(MetricsRegistry& r, const MetricLabels& labels)
    : ttft_(r.AddHistogram("ridge_time_to_first_token_seconds", "Time from arrival to the first output token.",
                           kTtftBuckets, labels)),
      itl_(r.AddHistogram("ridge_inter_token_latency_seconds", "Gap between two consecutive output tokens.",
                          kTokenGapBuckets, labels)),
      tpot_(r.AddHistogram("ridge_time_per_output_token_seconds",
                           "Per request: (e2e - ttft) / (output tokens - 1), for requests with 2+ tokens.",
                           kTokenGapBuckets, labels)),
      e2e_(r.AddHistogram("ridge_e2e_request_latency_seconds", "Time from arrival to finish.", kRequestBuckets,
                          labels)),
      queue_(r.AddHistogram("ridge_request_queue_time_seconds", "Time from arrival to first scheduling.",
                            kRequestBuckets, labels)),
      prompt_tokens_(r.AddCounter("ridge_prompt_tokens_total", "Prompt tokens of finished requests.", labels)),
      generation_tokens_(
          r.AddCounter("ridge_generation_tokens_total", "Output tokens of finished requests.", labels)),
      finished_stop_(r.AddCounter("ridge_request_finished_total", "Finished requests by finish reason.",
                                  With(labels, "finished_reason", "stop"))),
      finished_length_(r.AddCounter("ridge_request_finished_total", "Finished requests by finish reason.",
                                    With(labels, "finished_reason", "length"))),
      finished_abort_(r.AddCounter("ridge_request_finished_total", "Finished requests by finish reason.",
                                   With(labels, "finished_reason", "abort"))),
      finished_error_(r.AddCounter("ridge_request_finished_total", "Finished requests by finish reason.",
                                   With(labels, "finished_reason", "error"))),
      spec_draft_tokens_(r.AddCounter("ridge_spec_decode_num_draft_tokens_total",
                                      "Speculative draft tokens verified, of finished requests.", labels)),
      spec_accepted_tokens_(r.AddCounter("ridge_spec_decode_num_accepted_tokens_total",
                                         "Speculative draft tokens accepted, of finished requests.", labels)),
      spec_emitted_tokens_(r.AddCounter("ridge_spec_decode_num_emitted_tokens_total",
                                        "Tokens emitted by steps that verified a draft, of finished requests.", labels)),
      kv_usage_(r.AddGauge("ridge_kv_cache_usage_ratio", "Fraction of KV-cache blocks in use (0 to 1).", labels)),
      running_(r.AddGauge("ridge_num_requests_running", "Requests in the running batch.", labels)),
      waiting_(r.AddGauge("ridge_num_requests_waiting", "Requests waiting to be scheduled.", labels)) {}

const Counter& ServerMetrics::finished(FinishKind kind) const {
  switch (kind) {
    case FinishKind::kStop: return finished_stop_;
    case FinishKind::kLength: return finished_length_;
    case FinishKind::kAbort: return finished_abort_;
    case FinishKind::kError:
    case FinishKind::kNone: break;
  }
  return finished_error_;
}

void ServerMetrics::ObserveFinished(const RequestMetrics& m) {
  prompt_tokens_.Inc(static_cast<double>(m.n_prompt_tokens));
  generation_tokens_.Inc(static_cast<double>(m.n_output_tokens));
  spec_draft_tokens_.Inc(static_cast<double>(m.speculation.draft_tokens));
  spec_accepted_tokens_.Inc(static_cast<double>(m.speculation.accepted_tokens));
  spec_emitted_tokens_.Inc(static_cast<double>(m.speculation.emitted_tokens));
  switch (m.finish_kind) {
    case FinishKind::kStop: finished_stop_.Inc(); break;
    case FinishKind::kLength: finished_length_.Inc(); break;
    case FinishKind::kAbort: finished_abort_.Inc(); break;
    case FinishKind::kError:
    case FinishKind::kNone: finished_error_.Inc(); break;
  }
  if (m.n_output_tokens > 0) ttft_.Observe(m.ttft_ms / 1000.0);
  if (m.n_output_tokens > 1) tpot_.Observe(m.tpot_ms / 1000.0);
  for (double gap_ms : m.itl_ms) itl_.Observe(gap_ms / 1000.0);
  e2e_.Observe(m.e2e_ms / 1000.0);
  if (m.queue_ms) queue_.Observe(*m.queue_ms / 1000.0);
}

}  // namespace ridge
