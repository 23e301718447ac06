#include "ridge/roofline/roofline_chart.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>

#include "ridge/base/error.h"
#include "ridge/metrics/svg_chart.h"
#include "ridge/roofline/units.h"

namespace ridge {
namespace {

// Canvas layout (pixels).
constexpr double kWidth = 1040, kHeight = 640;
constexpr double kPlotLeft = 90, kPlotRight = 650, kPlotTop = 60, kPlotBottom = 560;
constexpr double kLegendLeft = 675;
constexpr double kLegendLine = 17;
constexpr double kClusterPixels = 10;

const char* Color(ChartPointKind kind) {
  switch (kind) {
    case ChartPointKind::kPrefillOp:
    case ChartPointKind::kPrefillTotal: return "#1f6fd1";
    case ChartPointKind::kDecodeOp:
    case ChartPointKind::kDecodeTotal: return "#e07b00";
    case ChartPointKind::kSweep: return "#7a7a7a";
    case ChartPointKind::kMeasured: return "#d62728";
  }
  return "#000000";
}

std::string Marker(ChartPointKind kind, double x, double y) {
  const char* color = Color(kind);
  switch (kind) {
    case ChartPointKind::kPrefillTotal:
    case ChartPointKind::kDecodeTotal:
      return fmt::format(
          "<path d=\"M{:.1f} {:.1f} L{:.1f} {:.1f} L{:.1f} {:.1f} L{:.1f} {:.1f} Z\" fill=\"{}\" stroke=\"#000\" "
          "stroke-width=\"1\"/>\n",
          x, y - 8, x + 8, y, x, y + 8, x - 8, y, color);
    case ChartPointKind::kSweep:
      return fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3.5\" fill=\"{}\"/>\n", x, y, color);
    case ChartPointKind::kMeasured:
      return fmt::format(
          "<path d=\"M{:.1f} {:.1f} L{:.1f} {:.1f} M{:.1f} {:.1f} L{:.1f} {:.1f}\" stroke=\"{}\" "
          "stroke-width=\"3\"/>\n",
          x - 7, y - 7, x + 7, y + 7, x - 7, y + 7, x + 7, y - 7, color);
    default:
      return fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\" stroke=\"#000\" "
                         "stroke-width=\"0.8\"/>\n",
                         x, y, color);
  }
}

// Tick values within [10^lo, 10^hi]: every decade, and 2× and 5× when the
// range spans under three decades (so a short axis still has labels).
std::vector<double> Ticks(double lo, double hi) {
  std::vector<double> ticks;
  const bool fine = hi - lo < 3;
  for (int e = static_cast<int>(std::floor(lo)); e <= static_cast<int>(std::ceil(hi)); ++e)
    for (double m : {1.0, 2.0, 5.0}) {
      if (m != 1.0 && !fine) continue;
      const double v = m * std::pow(10.0, e);
      const double l = std::log10(v);
      if (l >= lo - 1e-9 && l <= hi + 1e-9) ticks.push_back(v);
    }
  return ticks;
}

// "0.5", "20", "2k", "100G", "1P".
std::string TickLabel(double v) {
  static const char* kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  if (v < 1) return fmt::format("{:g}", v);
  int prefix = 0;
  while (v >= 1000 - 1e-9 && prefix < 6) {
    v /= 1000;
    ++prefix;
  }
  return fmt::format("{:g}{}", v, kPrefixes[prefix]);
}

}  // namespace

std::string RenderRooflineSvg(const RooflineChart& chart) {
  const HardwareProfile& hw = chart.hardware;
  if (!(hw.peak_flops > 0) || !(hw.bandwidth_bytes_per_s > 0) || !std::isfinite(hw.peak_flops) ||
      !std::isfinite(hw.bandwidth_bytes_per_s))
    Fail("roofline chart: hardware '{}' needs a positive peak and bandwidth", hw.name);
  const double ridge = hw.RidgePoint();

  struct Placed {
    size_t id;  // 1-based legend number
    double x = 0, y = 0;
    bool drawn = false;
  };
  std::vector<Placed> placed;
  double min_i = ridge, max_i = ridge, min_y = hw.peak_flops, max_y = hw.peak_flops;
  for (const ChartRoof& roof : chart.extra_roofs)
    if (roof.peak_flops > 0 && std::isfinite(roof.peak_flops)) max_y = std::max(max_y, roof.peak_flops);
  for (size_t i = 0; i < chart.points.size(); ++i) {
    const ChartPoint& p = chart.points[i];
    Placed pl{i + 1};
    pl.drawn = p.intensity > 0 && p.flops_per_s > 0 && std::isfinite(p.intensity) && std::isfinite(p.flops_per_s);
    if (pl.drawn) {
      min_i = std::min(min_i, p.intensity);
      max_i = std::max(max_i, p.intensity);
      min_y = std::min(min_y, p.flops_per_s);
      max_y = std::max(max_y, p.flops_per_s);
    }
    placed.push_back(pl);
  }
  // Axis ranges in log10 units, with a margin; ticks at the whole decades inside.
  const double x_lo = std::log10(min_i) - 0.3;
  const double x_hi = std::log10(max_i) + 0.3;
  const double y_hi = std::log10(max_y) + 0.3;
  const double y_lo =
      std::max(y_hi - 9, std::min(std::log10(min_y), std::log10(hw.bandwidth_bytes_per_s) + x_lo) - 0.2);
  auto px = [&](double intensity) {
    return kPlotLeft + (std::log10(intensity) - x_lo) / (x_hi - x_lo) * (kPlotRight - kPlotLeft);
  };
  auto py = [&](double flops) {
    const double t = (std::log10(flops) - y_lo) / (y_hi - y_lo);
    return kPlotBottom - std::clamp(t, -0.02, 1.02) * (kPlotBottom - kPlotTop);
  };

  // Grow the canvas when the legend is longer than the plot.
  const double height =
      std::max(kHeight, kPlotTop + 4 + static_cast<double>(chart.points.size() + 1) * kLegendLine + 20);
  std::string svg;
  svg += fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"DejaVu Sans, Arial, sans-serif\">\n"
      "<rect x=\"0\" y=\"0\" width=\"{0}\" height=\"{1}\" fill=\"#ffffff\"/>\n",
      kWidth, height);
  svg += fmt::format("<text x=\"{}\" y=\"28\" font-size=\"17\" font-weight=\"bold\">{}</text>\n", kPlotLeft,
                     SvgEscape(chart.title));
  svg += fmt::format("<text x=\"{}\" y=\"47\" font-size=\"12\" fill=\"#444\">{}: {} peak, {} memory bandwidth</text>\n",
                     kPlotLeft, SvgEscape(hw.description), SvgEscape(FormatSi(hw.peak_flops, "FLOP/s")),
                     SvgEscape(FormatSi(hw.bandwidth_bytes_per_s, "B/s")));

  // Grid and axes.
  svg += "<g stroke=\"#dddddd\" stroke-width=\"1\">\n";
  const std::vector<double> x_ticks = Ticks(x_lo, x_hi), y_ticks = Ticks(y_lo, y_hi);
  for (double t : x_ticks)
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>\n", px(t), kPlotTop, kPlotBottom);
  for (double t : y_ticks)
    svg += fmt::format("<line x1=\"{1}\" y1=\"{0:.1f}\" x2=\"{2}\" y2=\"{0:.1f}\"/>\n", py(t), kPlotLeft, kPlotRight);
  svg += "</g>\n";
  svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#000\"/>\n", kPlotLeft,
                     kPlotTop, kPlotRight - kPlotLeft, kPlotBottom - kPlotTop);
  svg += "<g font-size=\"11\" fill=\"#222\">\n";
  for (double t : x_ticks)
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", px(t), kPlotBottom + 16,
                       SvgEscape(TickLabel(t)));
  for (double t : y_ticks)
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kPlotLeft - 6, py(t) + 4,
                       SvgEscape(TickLabel(t)));
  svg += "</g>\n";
  svg += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"13\" text-anchor=\"middle\">arithmetic intensity "
                     "(FLOP/byte, log scale)</text>\n",
                     (kPlotLeft + kPlotRight) / 2, kPlotBottom + 38);
  svg += fmt::format("<text x=\"22\" y=\"{0}\" font-size=\"13\" text-anchor=\"middle\" "
                     "transform=\"rotate(-90 22 {0})\">attainable FLOP/s (log scale)</text>\n",
                     (kPlotTop + kPlotBottom) / 2);

  // Extra roofs (dashed), then the roofline itself.
  for (const ChartRoof& roof : chart.extra_roofs) {
    if (!(roof.peak_flops > 0) || !std::isfinite(roof.peak_flops)) continue;
    const double knee = roof.peak_flops / hw.bandwidth_bytes_per_s;
    svg += fmt::format("<path d=\"M{:.1f} {:.1f} L{:.1f} {:.1f}\" fill=\"none\" stroke=\"#999\" stroke-width=\"1.5\" "
                       "stroke-dasharray=\"6 4\"/>\n",
                       px(knee), py(roof.peak_flops), kPlotRight, py(roof.peak_flops));
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"11\" fill=\"#666\" text-anchor=\"end\">{} {}</text>\n",
                       kPlotRight - 4, py(roof.peak_flops) - 4, SvgEscape(roof.label),
                       SvgEscape(FormatSi(roof.peak_flops, "FLOP/s")));
  }
  const double x_min = std::pow(10.0, x_lo), x_max = std::pow(10.0, x_hi);
  svg += fmt::format("<path d=\"M{:.1f} {:.1f} L{:.1f} {:.1f} L{:.1f} {:.1f}\" fill=\"none\" stroke=\"#111\" "
                     "stroke-width=\"2.5\"/>\n",
                     px(x_min), py(hw.bandwidth_bytes_per_s * x_min), px(ridge), py(hw.peak_flops), px(x_max),
                     py(hw.peak_flops));
  svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#111\" "
                     "stroke-dasharray=\"3 3\"/>\n",
                     px(ridge), py(hw.peak_flops), kPlotBottom);
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\">ridge {:.1f} FLOP/B</text>\n", px(ridge) + 5,
                     kPlotBottom - 8, ridge);
  // The roof extended left of the ridge (faint), carrying its label where the plot is empty.
  svg += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" stroke=\"#888\" "
                     "stroke-dasharray=\"2 4\"/>\n",
                     kPlotLeft, py(hw.peak_flops), px(ridge));
  svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"12\">compute roof {}</text>\n", kPlotLeft + 6,
                     py(hw.peak_flops) - 6, SvgEscape(FormatSi(hw.peak_flops, "FLOP/s")));
  {
    // Label the slope halfway up, rotated along it and set off to its upper-left side, which is
    // always empty (nothing attains more than the roofline).
    const double x0 = px(x_min), y0 = py(hw.bandwidth_bytes_per_s * x_min);
    const double radians = std::atan2(py(hw.peak_flops) - y0, px(ridge) - x0);
    const double angle = radians * 180 / M_PI;
    const double mx = (x0 + px(ridge)) / 2, my = (y0 + py(hw.peak_flops)) / 2;
    const double lx = mx + 9 * std::sin(radians), ly = my - 9 * std::cos(radians);
    svg += fmt::format("<text x=\"{0:.1f}\" y=\"{1:.1f}\" font-size=\"12\" text-anchor=\"middle\" "
                       "transform=\"rotate({2:.1f} {0:.1f} {1:.1f})\">memory {3}</text>\n",
                       lx, ly, angle, SvgEscape(FormatSi(hw.bandwidth_bytes_per_s, "B/s")));
  }

  // Points, then one label per cluster of points closer than kClusterPixels.
  for (size_t i = 0; i < placed.size(); ++i) {
    if (!placed[i].drawn) continue;
    placed[i].x = px(chart.points[i].intensity);
    placed[i].y = py(chart.points[i].flops_per_s);
    svg += Marker(chart.points[i].kind, placed[i].x, placed[i].y);
  }
  std::vector<bool> labelled(placed.size(), false);
  std::vector<std::array<double, 4>> label_boxes;  // x0, y0, x1, y1 of the labels drawn so far
  for (size_t i = 0; i < placed.size(); ++i) {
    if (!placed[i].drawn || labelled[i]) continue;
    std::string ids;
    for (size_t j = i; j < placed.size(); ++j) {
      if (!placed[j].drawn || labelled[j]) continue;
      if (std::hypot(placed[j].x - placed[i].x, placed[j].y - placed[i].y) > kClusterPixels) continue;
      labelled[j] = true;
      if (!ids.empty()) ids += ',';
      ids += std::to_string(placed[j].id);
    }
    // Try above-right, below-right, above-left, below-left; keep the first spot free of other labels.
    const double width = 7.0 * static_cast<double>(ids.size()) + 4, height = 12;  // bold 11 px digits, padded
    struct Spot { double x, y; bool left; };
    const Spot spots[] = {{placed[i].x + 9, placed[i].y - 7, false}, {placed[i].x + 9, placed[i].y + 15, false},
                          {placed[i].x - 9, placed[i].y - 7, true}, {placed[i].x - 9, placed[i].y + 15, true}};
    Spot chosen = placed[i].x > kPlotRight - 60 ? spots[2] : spots[0];
    for (const Spot& spot : spots) {
      const double x0 = spot.left ? spot.x - width : spot.x;
      bool free = x0 >= kPlotLeft && x0 + width <= kWidth;
      for (const auto& box : label_boxes)
        if (x0 < box[2] && box[0] < x0 + width && spot.y - height < box[3] && box[1] < spot.y) free = false;
      if (free) {
        chosen = spot;
        break;
      }
    }
    const double x0 = chosen.left ? chosen.x - width : chosen.x;
    label_boxes.push_back({x0, chosen.y - height, x0 + width, chosen.y});
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" font-weight=\"bold\" fill=\"#000\" "
                       "text-anchor=\"{}\">{}</text>\n",
                       chosen.x, chosen.y, chosen.left ? "end" : "start", ids);
  }

  // Legend.
  double ly = kPlotTop + 4;
  svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"13\" font-weight=\"bold\">points</text>\n", kLegendLeft,
                     ly);
  ly += kLegendLine;
  svg += "<g font-size=\"11\">\n";
  for (size_t i = 0; i < chart.points.size(); ++i) {
    const ChartPoint& p = chart.points[i];
    svg += Marker(p.kind, kLegendLeft + 6, ly - 4);
    const std::string text = placed[i].drawn ? fmt::format("{:>2}  {}  (I = {:.3g})", i + 1, p.label, p.intensity)
                                             : fmt::format("{:>2}  {}  (not plotted)", i + 1, p.label);
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" xml:space=\"preserve\">{}</text>\n", kLegendLeft + 18, ly,
                       SvgEscape(text));
    ly += kLegendLine;
  }
  svg += "</g>\n</svg>\n";
  return svg;
}

}  // namespace ridge
