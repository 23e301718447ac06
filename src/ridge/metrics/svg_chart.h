#pragma once
// Small standalone SVG charts with linear axes, for figures a person opens
// in a browser: a line chart (several series, optional step drawing) and a
// histogram, each with a title, up to two subtitle lines ('\n' separates
// them), labelled "nice" ticks, and optional vertical markers (mean, median,
// P99…) named in a legend right of the plot. No external assets; text is
// XML-escaped. Used by `ridge bench serve --plot`.
#include <cstdint>
#include <string>
#include <vector>

namespace ridge {

struct ChartSeries {
  std::string label;                // shown in the legend ("" = no legend entry)
  std::string color = "#1f6fd1";
  std::vector<double> x, y;         // same length; non-finite points are skipped
  bool step = false;                // hold y until the next x (a count over time)
};

struct ChartMarker {
  std::string label;  // "P99 41.3 ms"
  double x = 0;
  std::string color = "#d62728";
};

struct LineChartSpec {
  std::string title, subtitle, x_label, y_label;
  std::vector<ChartSeries> series;
  std::vector<ChartMarker> markers;
};

struct HistogramSpec {
  std::string title, subtitle, x_label;
  std::string y_label = "requests";
  std::vector<double> values;  // non-finite values are left out
  int n_bins = 0;              // 0: chosen from the data (see BinValues)
  std::string color = "#1f6fd1";
  std::vector<ChartMarker> markers;
};

// Throws ridge::Error when a series' x and y differ in length. Empty data
// draws the frame with "no data".
std::string RenderLineChartSvg(const LineChartSpec& spec);
std::string RenderHistogramSvg(const HistogramSpec& spec);

// Equal-width bins over [lo, lo + width × counts.size()]; the maximum falls in
// the last bin. All values equal → one bin of width 1 centred on them.
struct HistogramBins {
  double lo = 0, width = 1;
  std::vector<int64_t> counts;
};
// n_bins 0: the Freedman–Diaconis width, but at least √n bins, clamped to
// 5..60 bins. Non-finite values
// are ignored. No values → no bins.
HistogramBins BinValues(const std::vector<double>& values, int n_bins = 0);

// Ticks at multiples of 1, 2 or 5 × 10^k covering [lo, hi] with at most
// about max_ticks steps; the first tick <= lo and the last >= hi.
std::vector<double> NiceTicks(double lo, double hi, int max_ticks = 6);

// &, <, >, " escaped for SVG text and attributes.
std::string SvgEscape(const std::string& text);

}  // namespace ridge
