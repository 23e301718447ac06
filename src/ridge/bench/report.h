#pragma once
// The text report of `ridge bench serve`, line for line in the layout of
// vLLM's benchmark_serving ("{:<40} {:<10}" rows, 50-column rules):
//
//   ============ Serving Benchmark Result ============
//   Successful requests:                     100
//   Failed requests:                         0
//   Maximum request concurrency:             8          (when capped)
//   Request rate configured (RPS):           4.00       (when finite)
//   Benchmark duration (s):                  25.31
//   Total input tokens:                      …
//   Total generated tokens:                  …
//   Request throughput (req/s):              …
//   Request goodput (req/s):                 …          (with --goodput)
//   Output token throughput (tok/s):         …
//   Peak output token throughput (tok/s):    …
//   Peak concurrent requests:                …
//   Total Token throughput (tok/s):          …
//   ---------------Time to First Token----------------
//   Mean TTFT (ms): / Median TTFT (ms): / P99 TTFT (ms):
//   …then TPOT (excl. 1st token), ITL and E2EL the same way
//   ==================================================
#include <cstdint>
#include <optional>
#include <string>

#include "ridge/bench/serve_benchmark.h"
#include "ridge/metrics/run_metrics.h"

namespace ridge::bench {

struct ReportContext {
  std::optional<int64_t> max_concurrency;
  double request_rate = 0;  // +inf: not printed
  double peak_output_tokens_per_s = 0;
  int64_t peak_running = 0;
};

// Goodput is printed when run.slo is not empty.
std::string FormatServingReport(const RunMetrics& run, const ReportContext& context);
std::string FormatServingReport(const ServeBenchmarkResult& result);

}  // namespace ridge::bench
