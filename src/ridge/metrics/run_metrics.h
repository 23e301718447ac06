#pragma once
// Figures over a whole run of requests (a benchmark or a server's lifetime),
// computed as vLLM's benchmark_serving computes them:
//   - only succeeded requests count (RequestMetrics::succeeded);
//   - request throughput = completed / duration, output tok/s = output tokens
//     of completed requests / duration, total tok/s adds their prompt tokens;
//   - TPOT statistics cover requests with more than one output token; ITL
//     statistics pool every gap of every request;
//   - goodput = requests meeting every given SLO / duration, where a request
//     meets an SLO when its figure is <= the limit and a single-token
//     request's TPOT counts as 0.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ridge/metrics/request_trace.h"
#include "ridge/metrics/stats.h"

namespace ridge {

// Service-level objectives in milliseconds; an absent one is not checked.
struct Slo {
  std::optional<double> ttft_ms;
  std::optional<double> tpot_ms;
  std::optional<double> e2el_ms;
  bool empty() const { return !ttft_ms && !tpot_ms && !e2el_ms; }
};

// Parses "ttft:MS tpot:MS e2el:MS" (any subset, any order, separated by
// spaces or commas; vLLM's --goodput KEY:VALUE pairs). Throws ridge::Error
// naming the bad pair for an unknown key, a missing ':', a value that is not
// a finite non-negative number, or a key given twice.
Slo ParseSlo(const std::string& text);
// "ttft:500 tpot:50" (empty string for no SLO).
std::string FormatSlo(const Slo& slo);

// True when the request succeeded and meets every SLO that is set.
bool MeetsSlo(const RequestMetrics& request, const Slo& slo);

struct RunMetrics {
  int64_t n_requests = 0;   // all requests given
  int64_t n_completed = 0;  // succeeded
  int64_t n_failed = 0;
  double duration_s = 0;
  int64_t total_input_tokens = 0;   // prompt tokens of completed requests
  int64_t total_output_tokens = 0;  // output tokens of completed requests
  double request_throughput = 0;    // completed requests / s
  double output_throughput = 0;     // output tokens / s
  double total_token_throughput = 0;  // (input + output) tokens / s
  Slo slo;
  int64_t n_good = 0;               // completed requests meeting every SLO
  double goodput = 0;               // n_good / s (0 without an SLO)
  Distribution ttft_ms, tpot_ms, itl_ms, e2e_ms, decode_ms;
  // Over completed requests whose trace has a scheduling time.
  Distribution queue_ms, prefill_ms;
};

// duration_s: the run's wall time (a benchmark's start to its last answer).
// Throughputs are 0 when duration_s is 0; a negative duration throws.
RunMetrics Aggregate(const std::vector<RequestMetrics>& requests, double duration_s, const Slo& slo = {});

// Summarizes finished traces and takes the duration from the earliest arrival
// to the latest finish (0 for an empty list).
RunMetrics AggregateTraces(const std::vector<RequestTrace>& traces, const Slo& slo = {});

// A text report in the layout of vLLM's "Serving Benchmark Result".
std::string FormatRunMetrics(const RunMetrics& run);

}  // namespace ridge
