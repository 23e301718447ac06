#include "ridge/metrics/prometheus.h"

#include <fmt/format.h>

#include <cmath>

#include "ridge/base/error.h"

namespace ridge {
namespace {

enum Type { kCounter = 0, kGauge = 1, kHistogram = 2 };
const char* TypeName(int type) {
  switch (type) {
    case kCounter: return "counter";
    case kGauge: return "gauge";
    default: return "histogram";
  }
}

bool IsMetricName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

bool IsLabelName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// "{a="x",b="y"}" with `extra` (e.g. le) appended; "" when there are none.
std::string LabelText(const MetricLabels& labels, const std::string& extra_name = "",
                      const std::string& extra_value = "") {
  std::string out;
  auto add = [&](const std::string& name, const std::string& value) {
    out += out.empty() ? "{" : ",";
    out += name + "=\"" + EscapePrometheusLabelValue(value) + "\"";
  };
  for (const auto& [name, value] : labels) add(name, value);
  if (!extra_name.empty()) add(extra_name, extra_value);
  if (!out.empty()) out += "}";
  return out;
}

}  // namespace

std::string FormatPrometheusValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", value);
}

std::string EscapePrometheusHelp(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

std::string EscapePrometheusLabelValue(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"') out += "\\\"";
    else out += c;
  }
  return out;
}

void Counter::Inc(double amount) {
  if (!(amount >= 0)) return;
  value_.fetch_add(amount, std::memory_order_relaxed);
}

Histogram::Histogram(std::vector<double> upper_bounds) : upper_bounds_(std::move(upper_bounds)) {
  for (size_t i = 0; i < upper_bounds_.size(); ++i) {
    if (!std::isfinite(upper_bounds_[i])) Fail("histogram bucket bound {} is not finite", upper_bounds_[i]);
    if (i > 0 && !(upper_bounds_[i] > upper_bounds_[i - 1]))
      Fail("histogram bucket bounds must increase strictly: {} after {}", upper_bounds_[i], upper_bounds_[i - 1]);
  }
  counts_.assign(upper_bounds_.size() + 1, 0);
}

void Histogram::Observe(double value) {
  if (std::isnan(value)) return;
  // The first bucket whose upper bound is >= value (buckets are "le").
  size_t bucket = 0;
  while (bucket < upper_bounds_.size() && value > upper_bounds_[bucket]) ++bucket;
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_[bucket];
  sum_ += value;
  ++count_;
}

Histogram::Snapshot Histogram::Snap() const {
  Snapshot s;
  s.upper_bounds = upper_bounds_;
  std::lock_guard<std::mutex> lock(mutex_);
  s.cumulative_counts.resize(counts_.size());
  uint64_t running = 0;
  for (size_t i = 0; i < counts_.size(); ++i) {
    running += counts_[i];
    s.cumulative_counts[i] = running;
  }
  s.sum = sum_;
  s.count = count_;
  return s;
}

std::vector<double> ExponentialBuckets(double start, double factor, int n) {
  if (!(start > 0) || !(factor > 1) || n < 1)
    Fail("exponential buckets need start > 0, factor > 1 and n >= 1 (got {}, {}, {})", start, factor, n);
  std::vector<double> bounds;
  double b = start;
  for (int i = 0; i < n; ++i, b *= factor) bounds.push_back(b);
  return bounds;
}

struct MetricsRegistry::Family {
  std::string name, help;
  int type = kCounter;
  struct Series {
    MetricLabels labels;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
  };
  std::vector<Series> series;
};

MetricsRegistry::MetricsRegistry() = default;
MetricsRegistry::~MetricsRegistry() = default;

MetricsRegistry::Family& MetricsRegistry::FindOrAddFamily(const std::string& name, const std::string& help,
                                                          int type, const MetricLabels& labels) {
  if (!IsMetricName(name)) Fail("'{}' is not a valid Prometheus metric name", name);
  for (size_t i = 0; i < labels.size(); ++i) {
    const std::string& label = labels[i].first;
    if (!IsLabelName(label)) Fail("metric {}: '{}' is not a valid label name", name, label);
    if (label.rfind("__", 0) == 0) Fail("metric {}: label '{}' is reserved (starts with __)", name, label);
    if (type == kHistogram && label == "le") Fail("metric {}: a histogram cannot carry the label 'le'", name);
    for (size_t j = 0; j < i; ++j)
      if (labels[j].first == label) Fail("metric {}: label '{}' given twice", name, label);
  }
  for (auto& family : families_) {
    if (family->name != name) continue;
    if (family->type != type)
      Fail("metric {} is already registered as a {}, not a {}", name, TypeName(family->type), TypeName(type));
    if (family->help != help) Fail("metric {} is already registered with a different help text", name);
    for (const auto& s : family->series)
      if (s.labels == labels) Fail("metric {}{} is already registered", name, LabelText(labels));
    return *family;
  }
  families_.push_back(std::make_unique<Family>());
  Family& family = *families_.back();
  family.name = name;
  family.help = help;
  family.type = type;
  return family;
}

Counter& MetricsRegistry::AddCounter(const std::string& name, const std::string& help, const MetricLabels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  Family& family = FindOrAddFamily(name, help, kCounter, labels);
  family.series.push_back({labels, std::make_unique<Counter>(), nullptr, nullptr});
  return *family.series.back().counter;
}

Gauge& MetricsRegistry::AddGauge(const std::string& name, const std::string& help, const MetricLabels& labels) {
  std::lock_guard<std::mutex> lock(mutex_);
  Family& family = FindOrAddFamily(name, help, kGauge, labels);
  family.series.push_back({labels, nullptr, std::make_unique<Gauge>(), nullptr});
  return *family.series.back().gauge;
}

Histogram& MetricsRegistry::AddHistogram(const std::string& name, const std::string& help,
                                         std::vector<double> upper_bounds, const MetricLabels& labels) {
  auto histogram = std::make_unique<Histogram>(std::move(upper_bounds));  // validates before registering
  std::lock_guard<std::mutex> lock(mutex_);
  Family& family = FindOrAddFamily(name, help, kHistogram, labels);
  family.series.push_back({labels, nullptr, nullptr, std::move(histogram)});
  return *family.series.back().histogram;
}

std::string MetricsRegistry::RenderText() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  for (const auto& family : families_) {
    out += fmt::format("# HELP {} {}\n", family->name, EscapePrometheusHelp(family->help));
    out += fmt::format("# TYPE {} {}\n", family->name, TypeName(family->type));
    for (const auto& s : family->series) {
      if (s.counter) {
        out += fmt::format("{}{} {}\n", family->name, LabelText(s.labels), FormatPrometheusValue(s.counter->Value()));
      } else if (s.gauge) {
        out += fmt::format("{}{} {}\n", family->name, LabelText(s.labels), FormatPrometheusValue(s.gauge->Value()));
      } else {
        const Histogram::Snapshot snap = s.histogram->Snap();
        for (size_t i = 0; i < snap.cumulative_counts.size(); ++i) {
          const std::string le = i < snap.upper_bounds.size() ? FormatPrometheusValue(snap.upper_bounds[i]) : "+Inf";
          out += fmt::format("{}_bucket{} {}\n", family->name, LabelText(s.labels, "le", le),
                             snap.cumulative_counts[i]);
        }
        out += fmt::format("{}_sum{} {}\n", family->name, LabelText(s.labels), FormatPrometheusValue(snap.sum));
        out += fmt::format("{}_count{} {}\n", family->name, LabelText(s.labels), snap.count);
      }
    }
  }
  return out;
}

}  // namespace ridge
