#include "ridge/bench/report.h"

#include <fmt/format.h>

#include <cmath>

namespace ridge::bench {

std::string FormatServingReport(const RunMetrics& run, const ReportContext& context) {
  std::string out;
  auto count = [&](const char* label, int64_t value) { out += fmt::format("{:<40} {:<10}\n", label, value); };
  auto number = [&](const std::string& label, double value) {
    out += fmt::format("{:<40} {:<10.2f}\n", label, value);
  };
  out += fmt::format("{:=^50}\n", " Serving Benchmark Result ");
  count("Successful requests:", run.n_completed);
  count("Failed requests:", run.n_failed);
  if (context.max_concurrency) count("Maximum request concurrency:", *context.max_concurrency);
  if (std::isfinite(context.request_rate)) number("Request rate configured (RPS):", context.request_rate);
  number("Benchmark duration (s):", run.duration_s);
  count("Total input tokens:", run.total_input_tokens);
  count("Total generated tokens:", run.total_output_tokens);
  number("Request throughput (req/s):", run.request_throughput);
  if (!run.slo.empty()) number("Request goodput (req/s):", run.goodput);
  number("Output token throughput (tok/s):", run.output_throughput);
  number("Peak output token throughput (tok/s):", context.peak_output_tokens_per_s);
  number("Peak concurrent requests:", static_cast<double>(context.peak_running));
  number("Total Token throughput (tok/s):", run.total_token_throughput);
  auto section = [&](const char* header, const char* name, const Distribution& d) {
    out += fmt::format("{:-^50}\n", header);
    number(fmt::format("Mean {} (ms):", name), d.mean);
    number(fmt::format("Median {} (ms):", name), d.p50);
    number(fmt::format("P99 {} (ms):", name), d.p99);
  };
  section("Time to First Token", "TTFT", run.ttft_ms);
  section("Time per Output Token (excl. 1st token)", "TPOT", run.tpot_ms);
  section("Inter-token Latency", "ITL", run.itl_ms);
  section("End-to-end Latency", "E2EL", run.e2e_ms);
  out += std::string(50, '=') + "\n";
  return out;
}

std::string FormatServingReport(const ServeBenchmarkResult& result) {
  ReportContext context;
  context.max_concurrency = result.options.max_concurrency;
  context.request_rate = result.options.request_rate;
  context.peak_output_tokens_per_s = result.timeline.peak_output_tokens_per_s;
  context.peak_running = result.timeline.peak_running;
  return FormatServingReport(result.metrics, context);
}

}  // namespace ridge::bench
