#include "ridge/bench/plots.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "ridge/base/error.h"
#include "ridge/metrics/svg_chart.h"

namespace ridge::bench {
namespace {

std::string RunDescription(const ServeBenchmarkResult& r) {
  const ServeBenchmarkOptions& o = r.options;
  std::string rate = std::isinf(o.request_rate) ? "inf" : fmt::format("{:g}", o.request_rate);
  std::string text = fmt::format("{} ok / {} failed · rate {} req/s · burstiness {:g}", r.metrics.n_completed,
                                 r.metrics.n_failed, rate, o.burstiness);
  if (o.max_concurrency) text += fmt::format(" · max concurrency {}", *o.max_concurrency);
  text += fmt::format(" · input ~{} / output {} tokens", o.random_input_len, o.random_output_len);
  if (!r.model.empty()) text += " · " + r.model;
  return text;
}

std::vector<ChartMarker> DistributionMarkers(const Distribution& d) {
  if (d.count == 0) return {};
  return {ChartMarker{fmt::format("mean {:.2f} ms", d.mean), d.mean, "#2ca02c"},
          ChartMarker{fmt::format("median {:.2f} ms", d.p50), d.p50, "#e07b00"},
          ChartMarker{fmt::format("P99 {:.2f} ms", d.p99), d.p99, "#d62728"}};
}

void WriteFile(const std::filesystem::path& path, const std::string& text, std::vector<std::string>* written) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) Fail("--plot: cannot write '{}'", path.string());
  out << text;
  out.close();
  if (!out) Fail("--plot: writing '{}' failed", path.string());
  written->push_back(path.string());
}

}  // namespace

std::vector<std::string> WritePlots(const ServeBenchmarkResult& result, const std::string& dir) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error) Fail("--plot '{}': cannot create the directory: {}", dir, error.message());
  const std::filesystem::path root(dir);
  const std::string description = RunDescription(result);
  std::vector<double> ttft_ms, tpot_ms;
  for (const RequestRecord& r : result.records) {
    const RequestMetrics m = Summarize(ToTrace(r));
    if (!m.succeeded) continue;
    ttft_ms.push_back(m.ttft_ms);
    if (m.n_output_tokens > 1) tpot_ms.push_back(m.tpot_ms);
  }
  std::vector<std::string> written;

  HistogramSpec ttft;
  ttft.title = "Time to first token";
  ttft.subtitle = fmt::format("{}\n{} successful requests; client side, from sending to the first text chunk", description,
                              ttft_ms.size());
  ttft.x_label = "TTFT (ms)";
  ttft.values = ttft_ms;
  ttft.markers = DistributionMarkers(result.metrics.ttft_ms);
  WriteFile(root / "ttft_distribution.svg", RenderHistogramSvg(ttft), &written);

  HistogramSpec tpot;
  tpot.title = "Time per output token (excl. 1st token)";
  tpot.subtitle = fmt::format("{}\n{} requests with more than one output token; (E2E − TTFT) / (tokens − 1)",
                              description, tpot_ms.size());
  tpot.x_label = "TPOT (ms)";
  tpot.values = tpot_ms;
  tpot.color = "#7b4fc9";
  tpot.markers = DistributionMarkers(result.metrics.tpot_ms);
  WriteFile(root / "tpot_distribution.svg", RenderHistogramSvg(tpot), &written);

  const Timeline& t = result.timeline;
  LineChartSpec throughput;
  throughput.title = "Output token throughput over time";
  throughput.subtitle = fmt::format("{}\nmean {:.1f} tok/s over the run, peak {:.0f} tok/s (in 1 s buckets); "
                                    "drawn in {:g} s buckets",
                                    description, result.metrics.output_throughput, t.peak_output_tokens_per_s,
                                    t.bucket_s);
  throughput.x_label = "time since the benchmark start (s)";
  throughput.y_label = "output tokens / s";
  ChartSeries tokens;
  tokens.label = "output tokens/s";
  tokens.step = true;
  // A step line: each bucket's rate is held across the bucket.
  for (size_t k = 0; k < t.bucket_start_s.size(); ++k) {
    tokens.x.push_back(t.bucket_start_s[k]);
    tokens.y.push_back(t.output_tokens_per_s[k]);
  }
  if (!t.bucket_start_s.empty()) {
    tokens.x.push_back(t.bucket_start_s.back() + t.bucket_s);
    tokens.y.push_back(t.output_tokens_per_s.back());
  }
  throughput.series.push_back(std::move(tokens));
  WriteFile(root / "throughput.svg", RenderLineChartSvg(throughput), &written);

  LineChartSpec running;
  running.title = "Requests in flight over time";
  running.subtitle = fmt::format("{}\npeak {} in flight; each request counts from its send to its last byte",
                                 description, t.peak_running);
  running.x_label = "time since the benchmark start (s)";
  running.y_label = "requests in flight (client side)";
  ChartSeries in_flight;
  in_flight.label = "in flight";
  in_flight.color = "#e07b00";
  in_flight.step = true;
  for (size_t k = 0; k < t.running_time_s.size(); ++k) {
    in_flight.x.push_back(t.running_time_s[k]);
    in_flight.y.push_back(static_cast<double>(t.running_count[k]));
  }
  const double end_s = result.timing.duration_s();
  if (!in_flight.x.empty() && end_s > in_flight.x.back()) {
    in_flight.x.push_back(end_s);
    in_flight.y.push_back(in_flight.y.back());
  }
  running.series.push_back(std::move(in_flight));
  WriteFile(root / "running_requests.svg", RenderLineChartSvg(running), &written);
  return written;
}

}  // namespace ridge::bench
