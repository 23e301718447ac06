#pragma once
// Summary statistics over a list of samples, with numpy's conventions so that
// figures match vLLM's benchmark_serving: population standard deviation
// (np.std, ddof = 0) and percentiles by linear interpolation between the
// closest ranks (np.percentile's default "linear" method).
#include <cstddef>
#include <vector>

namespace ridge {

// The p-th percentile (p in [0, 100]) of `values` (any order), as
// np.percentile(values, p): rank = p / 100 × (n − 1), interpolated linearly
// between the samples either side. Throws ridge::Error for an empty list, a p
// outside [0, 100], or a NaN sample.
double Percentile(std::vector<double> values, double p);

struct Distribution {
  size_t count = 0;
  double mean = 0, std = 0, min = 0, max = 0;
  double p50 = 0, p90 = 0, p95 = 0, p99 = 0;
};

// All fields zero for an empty list (as vLLM reports np.mean(x or 0)).
// Throws ridge::Error for a NaN sample.
Distribution Describe(const std::vector<double>& values);

}  // namespace ridge
