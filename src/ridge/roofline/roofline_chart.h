#pragma once
// A log-log roofline chart as a standalone SVG file: the bandwidth slope, the
// compute roof, the ridge point, and operations / phases / measurements
// plotted as numbered points with a legend.
#include <string>
#include <vector>

#include "ridge/roofline/hardware.h"

namespace ridge {

enum class ChartPointKind { kPrefillOp, kDecodeOp, kPrefillTotal, kDecodeTotal, kSweep, kMeasured };

struct ChartPoint {
  std::string label;          // "decode: FFN gate/up"
  double intensity = 0;       // FLOP/byte (x)
  double flops_per_s = 0;     // attained or predicted FLOP/s (y)
  ChartPointKind kind = ChartPointKind::kDecodeOp;
};

struct ChartRoof {
  std::string label;  // "BF16 dot"
  double peak_flops = 0;
};

struct RooflineChart {
  std::string title;
  HardwareProfile hardware;
  std::vector<ChartRoof> extra_roofs;  // other arithmetic peaks, drawn dashed
  std::vector<ChartPoint> points;
};

// Points with a non-positive or non-finite coordinate are left out (and
// listed as such in the legend). Throws ridge::Error if the hardware has no
// positive peak and bandwidth.
std::string RenderRooflineSvg(const RooflineChart& chart);

}  // namespace ridge
