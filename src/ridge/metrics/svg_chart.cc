#include "ridge/metrics/svg_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "ridge/base/error.h"
#include "ridge/metrics/stats.h"

namespace ridge {
namespace {

// Canvas layout (pixels).
constexpr double kWidth = 920, kHeight = 520;
constexpr double kLeft = 86, kRight = 690, kTop = 88, kBottom = 448;
constexpr double kLegendLeft = kRight + 18, kLegendLine = 20;

double NiceStep(double raw) {
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (const double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw * (1 - 1e-12)) return m * magnitude;
  return 10.0 * magnitude;
}

std::string TickLabel(double value, double step) {
  if (std::fabs(value) < step * 1e-9) value = 0;
  const int decimals = std::clamp(static_cast<int>(-std::floor(std::log10(step) + 1e-9)), 0, 6);
  if (std::fabs(value) >= 1e6) return fmt::format("{:.3g}", value);
  return fmt::format("{:.{}f}", value, decimals);
}

struct Frame {
  double x_lo, x_hi, y_lo, y_hi;
  std::vector<double> x_ticks, y_ticks;
  double px(double x) const { return kLeft + (x - x_lo) / (x_hi - x_lo) * (kRight - kLeft); }
  double py(double y) const { return kBottom - (y - y_lo) / (y_hi - y_lo) * (kBottom - kTop); }
};

Frame MakeFrame(double x_lo, double x_hi, double y_lo, double y_hi) {
  if (!(x_hi > x_lo)) x_hi = x_lo + 1;
  if (!(y_hi > y_lo)) y_hi = y_lo + 1;
  Frame f;
  f.x_ticks = NiceTicks(x_lo, x_hi, 8);
  f.y_ticks = NiceTicks(y_lo, y_hi, 6);
  f.x_lo = std::min(x_lo, f.x_ticks.front());
  f.x_hi = std::max(x_hi, f.x_ticks.back());
  f.y_lo = std::min(y_lo, f.y_ticks.front());
  f.y_hi = std::max(y_hi, f.y_ticks.back());
  return f;
}

std::string Header(const std::string& title, const std::string& subtitle) {
  std::string svg = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Arial, sans-serif\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n",
      kWidth, kHeight);
  svg += fmt::format("<text x=\"{}\" y=\"30\" font-size=\"18\" font-weight=\"bold\">{}</text>\n", kLeft,
                     SvgEscape(title));
  // Up to two subtitle lines, split at '\n'.
  size_t from = 0;
  for (int line = 0; line < 2 && from <= subtitle.size() && !subtitle.empty(); ++line) {
    const size_t newline = subtitle.find('\n', from);
    const std::string text = line == 1 ? subtitle.substr(from) : subtitle.substr(from, newline - from);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"12\" fill=\"#444\">{}</text>\n", kLeft, 52 + 17 * line,
                       SvgEscape(text));
    if (newline == std::string::npos) break;
    from = newline + 1;
  }
  return svg;
}

std::string Axes(const Frame& f, const std::string& x_label, const std::string& y_label) {
  const double x_step = f.x_ticks.size() > 1 ? f.x_ticks[1] - f.x_ticks[0] : 1;
  const double y_step = f.y_ticks.size() > 1 ? f.y_ticks[1] - f.y_ticks[0] : 1;
  std::string svg = "<g stroke=\"#e2e2e2\" stroke-width=\"1\">\n";
  for (const double x : f.x_ticks)
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>\n", f.px(x), kTop, kBottom);
  for (const double y : f.y_ticks)
    svg += fmt::format("<line x1=\"{1}\" y1=\"{0:.1f}\" x2=\"{2}\" y2=\"{0:.1f}\"/>\n", f.py(y), kLeft, kRight);
  svg += "</g>\n<g font-size=\"11\" fill=\"#222\">\n";
  for (const double x : f.x_ticks)
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", f.px(x), kBottom + 17,
                       SvgEscape(TickLabel(x, x_step)));
  for (const double y : f.y_ticks)
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kLeft - 7, f.py(y) + 4,
                       SvgEscape(TickLabel(y, y_step)));
  svg += "</g>\n";
  svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"13\" text-anchor=\"middle\">{}</text>\n",
                     (kLeft + kRight) / 2, kBottom + 42, SvgEscape(x_label));
  svg += fmt::format(
      "<text x=\"22\" y=\"{0}\" font-size=\"13\" text-anchor=\"middle\" transform=\"rotate(-90 22 {0})\">{1}</text>\n",
      (kTop + kBottom) / 2, SvgEscape(y_label));
  return svg;
}

std::string FrameBox() {
  return fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#000\"/>\n", kLeft,
                     kTop, kRight - kLeft, kBottom - kTop);
}

std::string NoData() {
  return fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"16\" fill=\"#888\" text-anchor=\"middle\">no data</text>\n",
                     (kLeft + kRight) / 2, (kTop + kBottom) / 2);
}

// A legend entry right of the plot: a sample stroke and a label.
std::string LegendEntry(size_t row, const std::string& color, bool dashed, const std::string& label) {
  const double y = kTop + 10 + kLegendLine * static_cast<double>(row);
  return fmt::format(
      "<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"{3}\" stroke-width=\"{4}\"{5}/>\n"
      "<text x=\"{6}\" y=\"{7:.1f}\" font-size=\"12\">{8}</text>\n",
      kLegendLeft, y, kLegendLeft + 24, SvgEscape(color), dashed ? "1.8" : "3",
      dashed ? " stroke-dasharray=\"6 4\"" : "", kLegendLeft + 30, y + 4, SvgEscape(label));
}

// Vertical dashed lines across the plot, named in the legend (labels next to
// the lines would collide when markers are close together).
std::string Markers(const Frame& f, const std::vector<ChartMarker>& markers, size_t* legend_rows) {
  std::string svg;
  for (const ChartMarker& m : markers) {
    if (!std::isfinite(m.x)) continue;
    const double x = std::clamp(f.px(m.x), kLeft, kRight);
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"{3}\" stroke-width=\"1.8\" "
        "stroke-dasharray=\"6 4\"/>\n",
        x, kTop, kBottom, SvgEscape(m.color));
    svg += LegendEntry((*legend_rows)++, m.color, true, m.label);
  }
  return svg;
}

}  // namespace

std::string SvgEscape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<double> NiceTicks(double lo, double hi, int max_ticks) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) Fail("chart ticks: range [{}, {}] is not finite", lo, hi);
  if (hi < lo) std::swap(lo, hi);
  if (hi == lo) hi = lo + (lo == 0 ? 1 : std::fabs(lo) * 0.1);
  const double step = NiceStep((hi - lo) / std::max(max_ticks, 1));
  std::vector<double> ticks;
  const double first = std::floor(lo / step + 1e-9) * step;
  for (int k = 0; k <= 1000; ++k) {
    const double t = first + step * k;
    ticks.push_back(std::fabs(t) < step * 1e-9 ? 0.0 : t);
    if (t >= hi - step * 1e-9) break;
  }
  return ticks;
}

HistogramBins BinValues(const std::vector<double>& values, int n_bins) {
  std::vector<double> finite;
  for (const double v : values)
    if (std::isfinite(v)) finite.push_back(v);
  HistogramBins bins;
  if (finite.empty()) return bins;
  const auto [min_it, max_it] = std::minmax_element(finite.begin(), finite.end());
  const double lo = *min_it, hi = *max_it;
  if (hi == lo) {
    bins.lo = lo - 0.5;
    bins.width = 1;
    bins.counts = {static_cast<int64_t>(finite.size())};
    return bins;
  }
  if (n_bins <= 0) {
    const double iqr = Percentile(finite, 75) - Percentile(finite, 25);
    const double fd_width = 2.0 * iqr / std::cbrt(static_cast<double>(finite.size()));
    n_bins = fd_width > 0 ? static_cast<int>(std::ceil((hi - lo) / fd_width)) : 10;
    // Freedman–Diaconis is coarse for small samples; take at least √n bins.
    n_bins = std::max(n_bins, static_cast<int>(std::ceil(std::sqrt(static_cast<double>(finite.size())))));
    n_bins = std::clamp(n_bins, 5, 60);
  }
  bins.lo = lo;
  bins.width = (hi - lo) / n_bins;
  bins.counts.assign(static_cast<size_t>(n_bins), 0);
  for (const double v : finite) {
    auto k = static_cast<int64_t>((v - lo) / bins.width);
    k = std::clamp<int64_t>(k, 0, n_bins - 1);
    ++bins.counts[static_cast<size_t>(k)];
  }
  return bins;
}

std::string RenderLineChartSvg(const LineChartSpec& spec) {
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = 0, y_hi = -INFINITY;
  for (const ChartSeries& s : spec.series) {
    if (s.x.size() != s.y.size())
      Fail("line chart '{}': series '{}' has {} x values and {} y values", spec.title, s.label, s.x.size(), s.y.size());
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      x_lo = std::min(x_lo, s.x[i]);
      x_hi = std::max(x_hi, s.x[i]);
      y_lo = std::min(y_lo, s.y[i]);
      y_hi = std::max(y_hi, s.y[i]);
    }
  }
  const bool empty = !(x_hi >= x_lo);
  if (empty) x_lo = 0, x_hi = 1, y_hi = 1;
  if (!(y_hi > y_lo)) y_hi = y_lo + 1;
  const Frame f = MakeFrame(x_lo, x_hi, y_lo, y_hi * 1.05);

  std::string svg = Header(spec.title, spec.subtitle);
  svg += Axes(f, spec.x_label, spec.y_label);
  if (empty) svg += NoData();
  size_t legend_rows = 0;
  for (const ChartSeries& s : spec.series) {
    std::string points;
    double prev_y = 0;
    bool have_prev = false;
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      if (s.step && have_prev) points += fmt::format("{:.1f},{:.1f} ", f.px(s.x[i]), f.py(prev_y));
      points += fmt::format("{:.1f},{:.1f} ", f.px(s.x[i]), f.py(s.y[i]));
      prev_y = s.y[i];
      have_prev = true;
    }
    if (!points.empty())
      svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"1.8\" "
                         "stroke-linejoin=\"round\"/>\n",
                         points, SvgEscape(s.color));
    if (!s.label.empty()) svg += LegendEntry(legend_rows++, s.color, false, s.label);
  }
  svg += Markers(f, spec.markers, &legend_rows);
  svg += FrameBox();
  svg += "</svg>\n";
  return svg;
}

std::string RenderHistogramSvg(const HistogramSpec& spec) {
  const HistogramBins bins = BinValues(spec.values, spec.n_bins);
  int64_t max_count = 0;
  for (const int64_t c : bins.counts) max_count = std::max(max_count, c);
  const bool empty = bins.counts.empty();
  double x_lo = empty ? 0 : bins.lo;
  double x_hi = empty ? 1 : bins.lo + bins.width * static_cast<double>(bins.counts.size());
  for (const ChartMarker& m : spec.markers) {
    if (!std::isfinite(m.x) || empty) continue;
    x_lo = std::min(x_lo, m.x);
    x_hi = std::max(x_hi, m.x);
  }
  const Frame f = MakeFrame(x_lo, x_hi, 0, std::max<double>(1, static_cast<double>(max_count) * 1.08));

  std::string svg = Header(spec.title, spec.subtitle);
  svg += Axes(f, spec.x_label, spec.y_label);
  if (empty) svg += NoData();
  svg += fmt::format("<g fill=\"{}\" fill-opacity=\"0.85\" stroke=\"#ffffff\" stroke-width=\"0.6\">\n",
                     SvgEscape(spec.color));
  for (size_t k = 0; k < bins.counts.size(); ++k) {
    if (bins.counts[k] == 0) continue;
    const double x0 = f.px(bins.lo + bins.width * static_cast<double>(k));
    const double x1 = f.px(bins.lo + bins.width * static_cast<double>(k + 1));
    const double y = f.py(static_cast<double>(bins.counts[k]));
    svg += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/>\n", x0, y,
                       std::max(x1 - x0, 0.8), kBottom - y);
  }
  svg += "</g>\n";
  size_t legend_rows = 0;
  svg += Markers(f, spec.markers, &legend_rows);
  svg += FrameBox();
  svg += "</svg>\n";
  return svg;
}

}  // namespace ridge
