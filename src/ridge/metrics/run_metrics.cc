#include "ridge/metrics/run_metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "ridge/base/error.h"

namespace ridge {
namespace {

std::vector<std::string> SplitPairs(const std::string& text) {
  std::vector<std::string> pairs;
  std::string current;
  for (char c : text) {
    if (c == ' ' || c == ',' || c == '\t' || c == '\n') {
      if (!current.empty()) pairs.push_back(current);
      current.clear();
    } else {
      current += c;
    }
  }
  if (!current.empty()) pairs.push_back(current);
  return pairs;
}

double ParseSloValue(const std::string& pair, const std::string& value) {
  if (value.empty()) Fail("SLO '{}': no value after ':' (expected milliseconds)", pair);
  errno = 0;
  char* end = nullptr;
  const double ms = std::strtod(value.c_str(), &end);
  if (end != value.c_str() + value.size() || errno == ERANGE)
    Fail("SLO '{}': '{}' is not a number of milliseconds", pair, value);
  if (!std::isfinite(ms) || ms < 0) Fail("SLO '{}': the limit must be a finite number >= 0", pair);
  return ms;
}

}  // namespace

Slo ParseSlo(const std::string& text) {
  Slo slo;
  for (const std::string& pair : SplitPairs(text)) {
    const size_t colon = pair.find(':');
    if (colon == std::string::npos || pair.find(':', colon + 1) != std::string::npos)
      Fail("SLO '{}': expected KEY:MS with KEY one of ttft, tpot, e2el", pair);
    const std::string key = pair.substr(0, colon);
    const double ms = ParseSloValue(pair, pair.substr(colon + 1));
    std::optional<double>* slot = nullptr;
    if (key == "ttft") slot = &slo.ttft_ms;
    else if (key == "tpot") slot = &slo.tpot_ms;
    else if (key == "e2el") slot = &slo.e2el_ms;
    else Fail("SLO '{}': unknown metric '{}' (expected ttft, tpot or e2el)", pair, key);
    if (slot->has_value()) Fail("SLO '{}': '{}' is given twice", pair, key);
    *slot = ms;
  }
  return slo;
}

std::string FormatSlo(const Slo& slo) {
  std::string out;
  auto add = [&](const char* key, const std::optional<double>& v) {
    if (!v) return;
    if (!out.empty()) out += ' ';
    out += fmt::format("{}:{}", key, *v);
  };
  add("ttft", slo.ttft_ms);
  add("tpot", slo.tpot_ms);
  add("e2el", slo.e2el_ms);
  return out;
}

bool MeetsSlo(const RequestMetrics& r, const Slo& slo) {
  if (!r.succeeded) return false;
  if (slo.ttft_ms && r.ttft_ms > *slo.ttft_ms) return false;
  if (slo.tpot_ms && r.tpot_ms > *slo.tpot_ms) return false;
  if (slo.e2el_ms && r.e2e_ms > *slo.e2el_ms) return false;
  return true;
}

RunMetrics Aggregate(const std::vector<RequestMetrics>& requests, double duration_s, const Slo& slo) {
  if (!(duration_s >= 0) || !std::isfinite(duration_s))
    Fail("run duration must be a finite number of seconds >= 0, got {}", duration_s);
  RunMetrics run;
  run.n_requests = static_cast<int64_t>(requests.size());
  run.duration_s = duration_s;
  run.slo = slo;
  std::vector<double> ttft, tpot, itl, e2e, queue, prefill, decode;
  for (const RequestMetrics& r : requests) {
    if (!r.succeeded) {
      ++run.n_failed;
      continue;
    }
    ++run.n_completed;
    run.total_input_tokens += r.n_prompt_tokens;
    run.total_output_tokens += r.n_output_tokens;
    ttft.push_back(r.ttft_ms);
    if (r.n_output_tokens > 1) tpot.push_back(r.tpot_ms);
    itl.insert(itl.end(), r.itl_ms.begin(), r.itl_ms.end());
    e2e.push_back(r.e2e_ms);
    if (r.queue_ms) queue.push_back(*r.queue_ms);
    if (r.prefill_ms) prefill.push_back(*r.prefill_ms);
    decode.push_back(r.decode_ms);
    if (!slo.empty() && MeetsSlo(r, slo)) ++run.n_good;
  }
  if (duration_s > 0) {
    run.request_throughput = static_cast<double>(run.n_completed) / duration_s;
    run.output_throughput = static_cast<double>(run.total_output_tokens) / duration_s;
    run.total_token_throughput =
        static_cast<double>(run.total_input_tokens + run.total_output_tokens) / duration_s;
    run.goodput = static_cast<double>(run.n_good) / duration_s;
  }
  run.ttft_ms = Describe(ttft);
  run.tpot_ms = Describe(tpot);
  run.itl_ms = Describe(itl);
  run.e2e_ms = Describe(e2e);
  run.queue_ms = Describe(queue);
  run.prefill_ms = Describe(prefill);
  run.decode_ms = Describe(decode);
  return run;
}

RunMetrics AggregateTraces(const std::vector<RequestTrace>& traces, const Slo& slo) {
  std::vector<RequestMetrics> requests;
  requests.reserve(traces.size());
  std::optional<Clock::time_point> first_arrival, last_finish;
  for (const RequestTrace& t : traces) {
    requests.push_back(Summarize(t));
    if (!first_arrival || *t.arrival() < *first_arrival) first_arrival = t.arrival();
    if (!last_finish || *t.finish() > *last_finish) last_finish = t.finish();
  }
  const double duration_s = first_arrival ? MillisBetween(*first_arrival, *last_finish) / 1000.0 : 0.0;
  return Aggregate(requests, duration_s, slo);
}

std::string FormatRunMetrics(const RunMetrics& run) {
  std::string out;
  auto line = [&](const std::string& label, const std::string& value) {
    out += fmt::format("{:<40} {:>12}\n", label, value);
  };
  auto num = [](double v) { return fmt::format("{:.2f}", v); };
  auto section = [&](const std::string& title) {
    const size_t pad = title.size() + 2 < 53 ? 53 - title.size() - 2 : 0;
    out += fmt::format("{} {} {}\n", std::string(pad / 2, '-'), title, std::string(pad - pad / 2, '-'));
  };
  out += "============== Serving Benchmark Result ==============\n";
  line("Successful requests:", fmt::format("{}", run.n_completed));
  line("Failed requests:", fmt::format("{}", run.n_failed));
  line("Benchmark duration (s):", num(run.duration_s));
  line("Total input tokens:", fmt::format("{}", run.total_input_tokens));
  line("Total generated tokens:", fmt::format("{}", run.total_output_tokens));
  line("Request throughput (req/s):", num(run.request_throughput));
  if (!run.slo.empty()) {
    line("SLO:", FormatSlo(run.slo));
    line("Good requests:", fmt::format("{}", run.n_good));
    line("Request goodput (req/s):", num(run.goodput));
  }
  line("Output token throughput (tok/s):", num(run.output_throughput));
  line("Total token throughput (tok/s):", num(run.total_token_throughput));
  auto dist = [&](const std::string& title, const std::string& name, const Distribution& d) {
    section(title);
    line(fmt::format("Mean {} (ms):", name), num(d.mean));
    line(fmt::format("Std {} (ms):", name), num(d.std));
    line(fmt::format("Median {} (ms):", name), num(d.p50));
    line(fmt::format("P90 {} (ms):", name), num(d.p90));
    line(fmt::format("P95 {} (ms):", name), num(d.p95));
    line(fmt::format("P99 {} (ms):", name), num(d.p99));
    line(fmt::format("Max {} (ms):", name), num(d.max));
  };
  dist("Time to First Token", "TTFT", run.ttft_ms);
  dist("Time per Output Token (excl. 1st token)", "TPOT", run.tpot_ms);
  dist("Inter-token Latency", "ITL", run.itl_ms);
  dist("End-to-end Latency", "E2EL", run.e2e_ms);
  if (run.queue_ms.count > 0) dist("Queue Time", "queue", run.queue_ms);
  if (run.prefill_ms.count > 0) dist("Prefill Time", "prefill", run.prefill_ms);
  dist("Decode Time (first token to finish)", "decode", run.decode_ms);
  out += "======================================================\n";
  return out;
}

}  // namespace ridge
