#include "ridge/metrics/stats.h"

#include <algorithm>
#include <cmath>

#include "ridge/base/error.h"

namespace ridge {
namespace {

void CheckNoNan(const std::vector<double>& values) {
  for (size_t i = 0; i < values.size(); ++i)
    if (std::isnan(values[i])) Fail("sample {} of {} is NaN", i, values.size());
}

// Percentile of an already sorted, non-empty list.
double SortedPercentile(const std::vector<double>& sorted, double p) {
  const double rank = p / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lower = static_cast<size_t>(std::floor(rank));
  const size_t upper = std::min(lower + 1, sorted.size() - 1);
  const double fraction = rank - static_cast<double>(lower);
  return sorted[lower] + (sorted[upper] - sorted[lower]) * fraction;
}

}  // namespace

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) Fail("percentile of an empty list");
  if (!(p >= 0.0 && p <= 100.0)) Fail("percentile {} is outside [0, 100]", p);
  CheckNoNan(values);
  std::sort(values.begin(), values.end());
  return SortedPercentile(values, p);
}

Distribution Describe(const std::vector<double>& values) {
  Distribution d;
  if (values.empty()) return d;
  CheckNoNan(values);
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  const double n = static_cast<double>(sorted.size());
  double sum = 0;
  for (double v : sorted) sum += v;
  d.count = sorted.size();
  d.mean = sum / n;
  double squares = 0;
  for (double v : sorted) squares += (v - d.mean) * (v - d.mean);
  d.std = std::sqrt(squares / n);
  d.min = sorted.front();
  d.max = sorted.back();
  d.p50 = SortedPercentile(sorted, 50);
  d.p90 = SortedPercentile(sorted, 90);
  d.p95 = SortedPercentile(sorted, 95);
  d.p99 = SortedPercentile(sorted, 99);
  return d;
}

}  // namespace ridge
