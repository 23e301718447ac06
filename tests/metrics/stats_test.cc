#include "ridge/metrics/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ridge/base/error.h"

namespace ridge {
namespace {

// Expected values computed by hand with numpy's linear rule:
// rank = p/100 × (n − 1), interpolate between sorted[floor] and sorted[floor+1].
TEST(Percentile, LinearInterpolationBetweenClosestRanks) {
  const std::vector<double> v = {1, 2, 3, 4};
  EXPECT_DOUBLE_EQ(Percentile(v, 0), 1.0);
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 2.5);   // rank 1.5
  EXPECT_DOUBLE_EQ(Percentile(v, 90), 3.7);   // rank 2.7
  EXPECT_DOUBLE_EQ(Percentile(v, 99), 3.97);  // rank 2.97
  EXPECT_DOUBLE_EQ(Percentile(v, 100), 4.0);
}

TEST(Percentile, SortsItsInput) {
  const std::vector<double> v = {15, 1, 7, 3};  // sorted 1 3 7 15
  EXPECT_DOUBLE_EQ(Percentile(v, 50), 5.0);   // rank 1.5 between 3 and 7
  EXPECT_DOUBLE_EQ(Percentile(v, 95), 13.8);  // rank 2.85: 7 + 0.85 × 8
  EXPECT_DOUBLE_EQ(Percentile(v, 25), 2.5);   // rank 0.75: 1 + 0.75 × 2
}

TEST(Percentile, SingleSampleIsEveryPercentile) {
  for (double p : {0.0, 37.0, 50.0, 99.0, 100.0}) EXPECT_DOUBLE_EQ(Percentile({42.0}, p), 42.0);
}

TEST(Percentile, RejectsBadInput) {
  EXPECT_THROW(Percentile({}, 50), Error);
  EXPECT_THROW(Percentile({1, 2}, -1), Error);
  EXPECT_THROW(Percentile({1, 2}, 100.5), Error);
  EXPECT_THROW(Percentile({1, 2}, std::nan("")), Error);
  EXPECT_THROW(Percentile({1, std::nan(""), 3}, 50), Error);
}

TEST(Describe, PopulationStdAndPercentiles) {
  // Mean 5 and population standard deviation exactly 2.
  const Distribution d = Describe({2, 4, 4, 4, 5, 5, 7, 9});
  EXPECT_EQ(d.count, 8u);
  EXPECT_DOUBLE_EQ(d.mean, 5.0);
  EXPECT_DOUBLE_EQ(d.std, 2.0);
  EXPECT_DOUBLE_EQ(d.min, 2.0);
  EXPECT_DOUBLE_EQ(d.max, 9.0);
  EXPECT_DOUBLE_EQ(d.p50, 4.5);  // rank 3.5 between 4 and 5
  EXPECT_DOUBLE_EQ(d.p90, 7.6);  // rank 6.3 between 7 and 9
  EXPECT_DOUBLE_EQ(d.p95, 8.3);  // rank 6.65
  EXPECT_NEAR(d.p99, 8.86, 1e-12);  // rank 6.93
}

TEST(Describe, EmptyListIsAllZero) {
  const Distribution d = Describe({});
  EXPECT_EQ(d.count, 0u);
  EXPECT_EQ(d.mean, 0.0);
  EXPECT_EQ(d.std, 0.0);
  EXPECT_EQ(d.max, 0.0);
  EXPECT_EQ(d.p99, 0.0);
}

TEST(Describe, RejectsNan) { EXPECT_THROW(Describe({1.0, std::numeric_limits<double>::quiet_NaN()}), Error); }

}  // namespace
}  // namespace ridge
