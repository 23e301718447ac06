#pragma once
// Prometheus metrics and their text exposition format (version 0.0.4),
// written by hand: counters, gauges and histograms, optionally with constant
// labels, in a registry that renders them for a /metrics endpoint.
//
// Thread safety: registering is serialized by the registry; Counter, Gauge and
// Histogram updates may come from any thread while another renders.
// References returned by Add* stay valid as long as the registry lives.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ridge {

// The Content-Type a /metrics endpoint answers with.
inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  // amount >= 0 (a counter only goes up); a negative or NaN amount is ignored.
  void Inc(double amount = 1.0);
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void Set(double value) { value_.store(value, std::memory_order_relaxed); }
  void Inc(double amount = 1.0) { value_.fetch_add(amount, std::memory_order_relaxed); }
  void Dec(double amount = 1.0) { value_.fetch_sub(amount, std::memory_order_relaxed); }
  double Value() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> value_{0.0};
};

class Histogram {
 public:
  // upper_bounds: finite, strictly increasing (ridge::Error otherwise); the
  // +Inf bucket is implicit.
  explicit Histogram(std::vector<double> upper_bounds);

  // A NaN observation is ignored.
  void Observe(double value);

  struct Snapshot {
    std::vector<double> upper_bounds;        // without +Inf
    std::vector<uint64_t> cumulative_counts;  // upper_bounds.size() + 1 entries, the last for +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  // A consistent view: the +Inf bucket always equals count.
  Snapshot Snap() const;

 private:
  std::vector<double> upper_bounds_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; last is (last bound, +Inf)
  double sum_ = 0;
  uint64_t count_ = 0;
};

// Bucket bounds: start, start × factor, ... (n bounds).
std::vector<double> ExponentialBuckets(double start, double factor, int n);

class MetricsRegistry {
 public:
  MetricsRegistry();
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // A name may be registered several times with different label sets (one
  // family, several series) as long as type and help agree. Throws
  // ridge::Error for an invalid metric or label name, a reserved label
  // ("__*", or "le" on a histogram), a label given twice, a type or help
  // mismatch within a family, or a series registered twice.
  Counter& AddCounter(const std::string& name, const std::string& help, const MetricLabels& labels = {});
  Gauge& AddGauge(const std::string& name, const std::string& help, const MetricLabels& labels = {});
  Histogram& AddHistogram(const std::string& name, const std::string& help, std::vector<double> upper_bounds,
                          const MetricLabels& labels = {});

  // Every family in registration order: # HELP, # TYPE, then its samples.
  std::string RenderText() const;

 private:
  struct Family;
  Family& FindOrAddFamily(const std::string& name, const std::string& help, int type, const MetricLabels& labels);

  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Family>> families_;
};

// Exposition helpers (exposed for tests): a sample value as the format
// writes it ("+Inf", "-Inf", "NaN", else the shortest round-trip decimal),
// and escaped HELP text / label values.
std::string FormatPrometheusValue(double value);
std::string EscapePrometheusHelp(const std::string& help);
std::string EscapePrometheusLabelValue(const std::string& value);

}  // namespace ridge
