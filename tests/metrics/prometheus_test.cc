#include "ridge/metrics/prometheus.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>
#include <thread>

#include "ridge/base/error.h"
#include "ridge/metrics/server_metrics.h"

namespace ridge {
namespace {

// A checker for the text exposition format 0.0.4, independent of the writer:
// every line is a HELP, a TYPE or a sample `name{label="value",...} number`;
// a family's TYPE comes before its samples and only once; sample names belong
// to their family (histograms: _bucket, _sum, _count); label values use only
// the escapes \\ \" \n; histogram buckets have increasing `le`, end at +Inf,
// are cumulative and the +Inf bucket equals _count. Returns "" or the problem.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

std::string ParseSample(const std::string& line, Sample& s) {
  size_t i = 0;
  while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
  s.name = line.substr(0, i);
  if (s.name.empty()) return "empty metric name: " + line;
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (i < line.size() && line[i] != '}') {
      size_t eq = line.find('=', i);
      if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') return "bad label: " + line;
      std::string name = line.substr(i, eq - i), value;
      size_t j = eq + 2;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\') {
          if (j + 1 >= line.size()) return "dangling escape: " + line;
          const char e = line[++j];
          if (e == 'n') value += '\n';
          else if (e == '\\' || e == '"') value += e;
          else return "bad escape: " + line;
        } else {
          value += line[j];
        }
      }
      if (j >= line.size()) return "unterminated label value: " + line;
      if (s.labels.count(name)) return "label twice: " + line;
      s.labels[name] = value;
      i = j + 1;
      if (i < line.size() && line[i] == ',') ++i;
    }
    if (i >= line.size()) return "unterminated labels: " + line;
    ++i;
  }
  if (i >= line.size() || line[i] != ' ') return "no value: " + line;
  const std::string value = line.substr(i + 1);
  if (value == "+Inf") s.value = INFINITY;
  else if (value == "-Inf") s.value = -INFINITY;
  else if (value == "NaN") s.value = NAN;
  else {
    char* end = nullptr;
    s.value = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0') return "bad value: " + line;
  }
  return "";
}

std::string CheckExposition(const std::string& text) {
  if (!text.empty() && text.back() != '\n') return "text does not end with a newline";
  std::istringstream in(text);
  std::string line, family, type;
  std::map<std::string, bool> typed;
  // Per histogram series (labels without le): the buckets seen so far.
  std::map<std::string, std::vector<std::pair<double, double>>> buckets;
  std::map<std::string, double> counts;
  while (std::getline(in, line)) {
    if (line.rfind("# HELP ", 0) == 0) continue;
    if (line.rfind("# TYPE ", 0) == 0) {
      std::istringstream parts(line.substr(7));
      parts >> family >> type;
      if (type != "counter" && type != "gauge" && type != "histogram") return "unknown type: " + line;
      if (typed[family]) return "TYPE twice: " + line;
      typed[family] = true;
      continue;
    }
    if (line.empty() || line[0] == '#') return "unexpected line: " + line;
    Sample s;
    if (std::string err = ParseSample(line, s); !err.empty()) return err;
    if (type == "histogram") {
      std::string key;
      for (auto& [k, v] : s.labels)
        if (k != "le") key += k + "=" + v + ";";
      if (s.name == family + "_bucket") {
        if (!s.labels.count("le")) return "bucket without le: " + line;
        const std::string le = s.labels["le"];
        const double bound = le == "+Inf" ? INFINITY : std::strtod(le.c_str(), nullptr);
        auto& b = buckets[family + "|" + key];
        if (!b.empty() && !(bound > b.back().first)) return "le not increasing: " + line;
        if (!b.empty() && s.value < b.back().second) return "buckets not cumulative: " + line;
        b.emplace_back(bound, s.value);
      } else if (s.name == family + "_count") {
        auto& b = buckets[family + "|" + key];
        if (b.empty() || !std::isinf(b.back().first)) return "histogram without a +Inf bucket: " + line;
        if (b.back().second != s.value) return "+Inf bucket differs from _count: " + line;
        counts[family + "|" + key] = s.value;
      } else if (s.name != family + "_sum") {
        return "sample outside its histogram family: " + line;
      }
    } else if (s.name != family) {
      return "sample outside its family: " + line;
    }
  }
  return "";
}

TEST(Prometheus, ExactTextForASmallRegistry) {
  MetricsRegistry registry;
  Counter& requests = registry.AddCounter("requests_total", "Requests handled.");
  Gauge& running = registry.AddGauge("running", "Requests running.");
  Histogram& latency = registry.AddHistogram("latency_seconds", "Latency.", {0.125, 1, 2.5});
  requests.Inc();
  requests.Inc(2);
  running.Set(4);
  running.Dec();
  for (double v : {0.0625, 0.125, 0.5, 4.0}) latency.Observe(v);
  const std::string expected =
      "# HELP requests_total Requests handled.\n"
      "# TYPE requests_total counter\n"
      "requests_total 3\n"
      "# HELP running Requests running.\n"
      "# TYPE running gauge\n"
      "running 3\n"
      "# HELP latency_seconds Latency.\n"
      "# TYPE latency_seconds histogram\n"
      "latency_seconds_bucket{le=\"0.125\"} 2\n"
      "latency_seconds_bucket{le=\"1\"} 3\n"
      "latency_seconds_bucket{le=\"2.5\"} 3\n"
      "latency_seconds_bucket{le=\"+Inf\"} 4\n"
      "latency_seconds_sum 4.6875\n"
      "latency_seconds_count 4\n";
  const std::string text = registry.RenderText();
  EXPECT_EQ(text, expected);
  EXPECT_EQ(CheckExposition(text), "");
}

TEST(Prometheus, LabelsAndEscaping) {
  MetricsRegistry registry;
  registry.AddCounter("finished_total", "Finished by reason.\nSecond \\ line", {{"reason", "stop"}}).Inc(5);
  registry.AddCounter("finished_total", "Finished by reason.\nSecond \\ line", {{"reason", "len\"gth\\\n"}});
  registry.AddHistogram("ttft_seconds", "TTFT.", {1}, {{"model", "m"}}).Observe(0.5);
  const std::string text = registry.RenderText();
  EXPECT_NE(text.find("# HELP finished_total Finished by reason.\\nSecond \\\\ line\n"), std::string::npos);
  EXPECT_NE(text.find("finished_total{reason=\"stop\"} 5\n"), std::string::npos);
  EXPECT_NE(text.find("finished_total{reason=\"len\\\"gth\\\\\\n\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("ttft_seconds_bucket{model=\"m\",le=\"1\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("ttft_seconds_count{model=\"m\"} 1\n"), std::string::npos);
  // One TYPE line for the two counter series.
  EXPECT_EQ(text.find("# TYPE finished_total"), text.rfind("# TYPE finished_total"));
  EXPECT_EQ(CheckExposition(text), "");
}

TEST(Prometheus, ValueFormatting) {
  EXPECT_EQ(FormatPrometheusValue(INFINITY), "+Inf");
  EXPECT_EQ(FormatPrometheusValue(-INFINITY), "-Inf");
  EXPECT_EQ(FormatPrometheusValue(NAN), "NaN");
  EXPECT_EQ(FormatPrometheusValue(0.1), "0.1");
  EXPECT_EQ(std::strtod(FormatPrometheusValue(1e-7).c_str(), nullptr), 1e-7);
}

TEST(Prometheus, HistogramBucketsAreUpperInclusive) {
  Histogram h({1, 2});
  for (double v : {-3.0, 1.0, 1.5, 2.0, 2.0001, std::nan("")}) h.Observe(v);
  const Histogram::Snapshot s = h.Snap();
  EXPECT_EQ(s.cumulative_counts, (std::vector<uint64_t>{2, 4, 5}));
  EXPECT_EQ(s.count, 5u);  // NaN ignored
  EXPECT_NEAR(s.sum, 3.5001, 1e-12);
}

TEST(Prometheus, RejectsBadRegistrations) {
  MetricsRegistry r;
  r.AddCounter("a_total", "A.");
  EXPECT_THROW(r.AddCounter("a_total", "A."), Error);            // same series twice
  EXPECT_THROW(r.AddGauge("a_total", "A.", {{"x", "1"}}), Error);  // type mismatch
  EXPECT_THROW(r.AddCounter("a_total", "B.", {{"x", "1"}}), Error);  // help mismatch
  EXPECT_THROW(r.AddCounter("1abc", "bad"), Error);
  EXPECT_THROW(r.AddCounter("a-b", "bad"), Error);
  EXPECT_THROW(r.AddCounter("", "bad"), Error);
  EXPECT_THROW(r.AddGauge("g", "G.", {{"__name", "x"}}), Error);
  EXPECT_THROW(r.AddGauge("g", "G.", {{"a-b", "x"}}), Error);
  EXPECT_THROW(r.AddGauge("g", "G.", {{"a", "x"}, {"a", "y"}}), Error);
  EXPECT_THROW(r.AddHistogram("h", "H.", {1}, {{"le", "x"}}), Error);
  EXPECT_THROW(r.AddHistogram("h", "H.", {2, 1}), Error);
  EXPECT_THROW(r.AddHistogram("h", "H.", {1, 1}), Error);
  EXPECT_THROW(r.AddHistogram("h", "H.", {1, INFINITY}), Error);
  EXPECT_THROW(ExponentialBuckets(0, 2, 3), Error);
  EXPECT_EQ(ExponentialBuckets(0.5, 2, 3), (std::vector<double>{0.5, 1, 2}));
  // The failed registrations left nothing half-made behind.
  EXPECT_EQ(CheckExposition(r.RenderText()), "");
  EXPECT_EQ(r.RenderText().find("# TYPE h "), std::string::npos);
}

TEST(Prometheus, ConcurrentUpdatesWhileRendering) {
  MetricsRegistry registry;
  Counter& c = registry.AddCounter("c_total", "C.");
  Gauge& g = registry.AddGauge("g", "G.");
  Histogram& h = registry.AddHistogram("h_seconds", "H.", {0.5, 1.5});
  constexpr int kThreads = 4, kEach = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        c.Inc();
        g.Inc();
        h.Observe(i % 2);
      }
    });
  std::string last_problem;
  for (int i = 0; i < 50; ++i)
    if (std::string p = CheckExposition(registry.RenderText()); !p.empty()) last_problem = p;
  for (auto& t : threads) t.join();
  EXPECT_EQ(last_problem, "");
  EXPECT_EQ(c.Value(), kThreads * kEach);
  EXPECT_EQ(g.Value(), kThreads * kEach);
  const Histogram::Snapshot s = h.Snap();
  EXPECT_EQ(s.count, static_cast<uint64_t>(kThreads * kEach));
  EXPECT_EQ(s.cumulative_counts[0], static_cast<uint64_t>(kThreads * kEach / 2));
  EXPECT_EQ(s.sum, kThreads * kEach / 2);
}

TEST(ServerMetrics, ObservesAFinishedRequest) {
  MetricsRegistry registry;
  ServerMetrics metrics(registry, {{"model_name", "tiny"}});
  RequestMetrics m;
  m.finish_kind = FinishKind::kStop;
  m.succeeded = true;
  m.n_prompt_tokens = 12;
  m.n_output_tokens = 3;
  m.ttft_ms = 300;
  m.tpot_ms = 40;
  m.e2e_ms = 380;
  m.queue_ms = 20;
  m.itl_ms = {30, 50};
  metrics.ObserveFinished(m);
  metrics.SetRunning(2);
  metrics.SetWaiting(5);
  metrics.SetKvUsage(0.25);
  const std::string text = registry.RenderText();
  EXPECT_EQ(CheckExposition(text), "");
  for (const char* want : {
           "ridge_time_to_first_token_seconds_bucket{model_name=\"tiny\",le=\"0.25\"} 0\n",
           "ridge_time_to_first_token_seconds_bucket{model_name=\"tiny\",le=\"0.5\"} 1\n",
           "ridge_time_to_first_token_seconds_sum{model_name=\"tiny\"} 0.3\n",
           "ridge_inter_token_latency_seconds_count{model_name=\"tiny\"} 2\n",
           "ridge_time_per_output_token_seconds_count{model_name=\"tiny\"} 1\n",
           "ridge_e2e_request_latency_seconds_count{model_name=\"tiny\"} 1\n",
           "ridge_request_queue_time_seconds_sum{model_name=\"tiny\"} 0.02\n",
           "ridge_prompt_tokens_total{model_name=\"tiny\"} 12\n",
           "ridge_generation_tokens_total{model_name=\"tiny\"} 3\n",
           "ridge_request_finished_total{model_name=\"tiny\",finished_reason=\"stop\"} 1\n",
           "ridge_request_finished_total{model_name=\"tiny\",finished_reason=\"abort\"} 0\n",
           "ridge_kv_cache_usage_ratio{model_name=\"tiny\"} 0.25\n",
           "ridge_num_requests_running{model_name=\"tiny\"} 2\n",
           "ridge_num_requests_waiting{model_name=\"tiny\"} 5\n",
       })
    EXPECT_NE(text.find(want), std::string::npos) << want << "\nin:\n" << text;
  // A second ServerMetrics on the same registry would duplicate every series.
  EXPECT_THROW(ServerMetrics again(registry, {{"model_name", "tiny"}}), Error);
}

}  // namespace
}  // namespace ridge
