#include "ridge/metrics/svg_chart.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <regex>

#include "ridge/base/error.h"

namespace ridge {
namespace {

// Every opening tag is closed, in order (the charts use no comments or CDATA).
bool TagsBalance(const std::string& svg) {
  std::vector<std::string> open;
  const std::regex tag(R"(<(/?)([a-zA-Z]+)[^>]*?(/?)>)");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), tag); it != std::sregex_iterator(); ++it) {
    const auto& m = *it;
    if (m[3] == "/") continue;
    if (m[1] == "/") {
      if (open.empty() || open.back() != m[2]) return false;
      open.pop_back();
    } else {
      open.push_back(m[2]);
    }
  }
  return open.empty();
}

TEST(SvgChartTest, NiceTicks) {
  EXPECT_EQ(NiceTicks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(NiceTicks(0, 1, 4), (std::vector<double>{0, 0.5, 1}));
  const auto t = NiceTicks(3.7, 41.2, 6);
  EXPECT_LE(t.front(), 3.7);
  EXPECT_GE(t.back(), 41.2);
  EXPECT_LE(t.size(), 9u);
  for (size_t i = 1; i < t.size(); ++i) EXPECT_NEAR(t[i] - t[i - 1], 10.0, 1e-9);  // 37.5 / 6 → 10
  EXPECT_EQ(NiceTicks(5, 5, 4).front(), 5);  // a degenerate range still gets ticks
  EXPECT_THROW(NiceTicks(0, INFINITY, 4), Error);
}

TEST(SvgChartTest, BinValues) {
  const HistogramBins b = BinValues({0, 1, 2, 3, 4, 5, 6, 7, 8, 10}, 5);
  ASSERT_EQ(b.counts.size(), 5u);
  EXPECT_DOUBLE_EQ(b.lo, 0);
  EXPECT_DOUBLE_EQ(b.width, 2);
  EXPECT_EQ(b.counts, (std::vector<int64_t>{2, 2, 2, 2, 2}));  // 10 falls in the last bin
  const HistogramBins same = BinValues({3, 3, 3});
  ASSERT_EQ(same.counts.size(), 1u);
  EXPECT_EQ(same.counts[0], 3);
  EXPECT_TRUE(BinValues({NAN, INFINITY}).counts.empty());
  std::vector<double> many;
  for (int i = 0; i < 1000; ++i) many.push_back(std::sin(i) * 50);
  const HistogramBins automatic = BinValues(many);
  EXPECT_GE(automatic.counts.size(), 5u);
  EXPECT_LE(automatic.counts.size(), 60u);
  int64_t total = 0;
  for (const int64_t c : automatic.counts) total += c;
  EXPECT_EQ(total, 1000);
}

TEST(SvgChartTest, HistogramIsWellFormedAndEscaped) {
  HistogramSpec spec;
  spec.title = "TTFT <ms> & more";
  spec.x_label = "TTFT (ms)";
  spec.values = {10, 12, 12, 13, 40};
  spec.markers = {{"P99 \"39.9\"", 39.9, "#d62728"}};
  const std::string svg = RenderHistogramSvg(spec);
  EXPECT_TRUE(TagsBalance(svg));
  EXPECT_NE(svg.find("TTFT &lt;ms&gt; &amp; more"), std::string::npos);
  EXPECT_NE(svg.find("P99 &quot;39.9&quot;"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_NE(svg.find("<rect x="), std::string::npos);
}

TEST(SvgChartTest, LineChartStepsAndEmptyData) {
  LineChartSpec spec;
  spec.title = "running";
  spec.series.push_back({"in flight", "#e07b00", {0, 1, 2}, {0, 3, 1}, true});
  const std::string svg = RenderLineChartSvg(spec);
  EXPECT_TRUE(TagsBalance(svg));
  // A step series holds each value: 3 points become 5.
  const std::regex polyline("<polyline points=\"([^\"]*)\"");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m, polyline));
  const std::string points = m[1];
  EXPECT_EQ(std::count(points.begin(), points.end(), ','), 5);

  LineChartSpec empty;
  empty.title = "nothing";
  const std::string none = RenderLineChartSvg(empty);
  EXPECT_TRUE(TagsBalance(none));
  EXPECT_NE(none.find("no data"), std::string::npos);
  spec.series[0].y.pop_back();
  EXPECT_THROW(RenderLineChartSvg(spec), Error);
}

}  // namespace
}  // namespace ridge
