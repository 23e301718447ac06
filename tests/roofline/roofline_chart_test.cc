#include "ridge/roofline/roofline_chart.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "ridge/base/error.h"
#include "ridge/roofline/cost_model.h"
#include "test_paths.h"
#include "tiny_png.h"

namespace ridge {
namespace {

// A strict-enough XML well-formedness check: balanced tags, quoted
// attributes, no raw '<' in text or attributes, only the five predefined
// entities. Returns "" or the problem and where.
std::string CheckXml(const std::string& xml) {
  std::vector<std::string> open;
  size_t i = 0;
  auto check_entities = [&](size_t from, size_t to) -> std::string {
    for (size_t k = from; k < to; ++k) {
      if (xml[k] == '<') return "raw '<' at " + std::to_string(k);
      if (xml[k] != '&') continue;
      bool ok = false;
      for (const char* e : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"})
        if (xml.compare(k, std::strlen(e), e) == 0) ok = true;
      if (!ok) return "bad entity at " + std::to_string(k);
    }
    return "";
  };
  bool root_seen = false;
  while (i < xml.size()) {
    const size_t lt = xml.find('<', i);
    if (lt == std::string::npos) {
      if (!open.empty()) return "unclosed <" + open.back() + ">";
      return xml.find_first_not_of(" \n\t", i) == std::string::npos ? "" : "text after the root element";
    }
    if (std::string err = check_entities(i, lt); !err.empty()) return err;
    if (xml.compare(lt, 5, "<?xml") == 0) {
      if (lt != 0) return "XML declaration not at the start";
      i = xml.find("?>", lt) + 2;
      continue;
    }
    const size_t gt = xml.find('>', lt);
    if (gt == std::string::npos) return "unterminated tag at " + std::to_string(lt);
    std::string tag = xml.substr(lt + 1, gt - lt - 1);
    if (tag.empty()) return "empty tag at " + std::to_string(lt);
    if (tag[0] == '/') {
      if (open.empty() || open.back() != tag.substr(1)) return "mismatched </" + tag.substr(1) + "> at " + std::to_string(lt);
      open.pop_back();
    } else {
      const bool self_closing = tag.back() == '/';
      if (self_closing) tag.pop_back();
      const size_t name_end = tag.find_first_of(" \n\t");
      const std::string name = tag.substr(0, name_end);
      if (open.empty() && root_seen) return "second root element <" + name + ">";
      root_seen = true;
      // Attributes: name="value" pairs.
      size_t k = name_end == std::string::npos ? tag.size() : name_end;
      std::set<std::string> attrs;
      while (k < tag.size()) {
        k = tag.find_first_not_of(" \n\t", k);
        if (k == std::string::npos) break;
        const size_t eq = tag.find('=', k);
        if (eq == std::string::npos || eq + 1 >= tag.size() || tag[eq + 1] != '"') return "bad attribute in <" + name + ">";
        const std::string attr = tag.substr(k, eq - k);
        if (!attrs.insert(attr).second) return "attribute " + attr + " twice in <" + name + ">";
        const size_t close = tag.find('"', eq + 2);
        if (close == std::string::npos) return "unterminated attribute in <" + name + ">";
        const size_t abs = lt + 1 + eq + 2;
        if (std::string err = check_entities(abs, abs + (close - eq - 2)); !err.empty()) return err;
        k = close + 1;
      }
      if (!self_closing) open.push_back(name);
    }
    i = gt + 1;
  }
  return open.empty() ? "" : "unclosed <" + open.back() + ">";
}

RooflineChart SampleChart() {
  const HardwareProfile& h100 = FindHardware("h100");
  const ModelShape shape = ShapeFromPreset(FindModelPreset("llama-2-7b"), GgmlType::kF16);
  RooflineChart chart;
  chart.title = "Roofline <test> & \"quotes\"";
  chart.hardware = h100;
  chart.extra_roofs.push_back({"FP32 (example)", 67e12});
  for (const Workload& w : {Workload{Phase::kPrefill, 512, 1, 0}, Workload{Phase::kDecode, 0, 1, 1024}}) {
    const PhaseCost p = AnalyzePhase(shape, w, h100);
    const bool prefill = w.phase == Phase::kPrefill;
    for (const OpCost& op : p.ops)
      chart.points.push_back({std::string(PhaseName(w.phase)) + " " + op.name, op.intensity, op.flops / op.time_s,
                              prefill ? ChartPointKind::kPrefillOp : ChartPointKind::kDecodeOp});
    chart.points.push_back({std::string(PhaseName(w.phase)) + " total", p.intensity, p.flops / p.time_s,
                            prefill ? ChartPointKind::kPrefillTotal : ChartPointKind::kDecodeTotal});
  }
  chart.points.push_back({"measured <80%>", 1.0, 2.5e12, ChartPointKind::kMeasured});
  chart.points.push_back({"bad point", 0.0, 1e12, ChartPointKind::kSweep});  // not plottable
  return chart;
}

TEST(RooflineChart, SvgIsWellFormedAndLabelled) {
  const std::string svg = RenderRooflineSvg(SampleChart());
  EXPECT_EQ(CheckXml(svg), "");
  EXPECT_NE(svg.find("xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(svg.find("Roofline &lt;test&gt; &amp; &quot;quotes&quot;"), std::string::npos);
  EXPECT_NE(svg.find("ridge 295.2 FLOP/B"), std::string::npos);
  EXPECT_NE(svg.find("prefill FFN gate/up"), std::string::npos);
  EXPECT_NE(svg.find("measured &lt;80%&gt;"), std::string::npos);
  EXPECT_NE(svg.find("bad point  (not plotted)"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  EXPECT_THROW(RenderRooflineSvg(RooflineChart{"x", HardwareProfile{"x", "x", 0, 1, 0, "", 0, ""}, {}, {}}), Error);
}

std::vector<uint8_t> ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The chart renders: rsvg-convert (librsvg2-bin, installed by scripts/setup.sh)
// turns it into a PNG that is decoded here and must hold a real picture.
TEST(RooflineChart, RendersToANonBlankPng) {
  const std::string dir = testing::ScratchDir("chart");
  const std::string svg_path = dir + "/roofline.svg", png_path = dir + "/roofline.png";
  {
    std::ofstream out(svg_path);
    out << RenderRooflineSvg(SampleChart());
  }
  const std::string command = "rsvg-convert -o '" + png_path + "' '" + svg_path + "' 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << command;
  const testing::PngImage image = testing::DecodePng(ReadAll(png_path));
  EXPECT_EQ(image.width, 1040u);
  EXPECT_GE(image.height, 640u);
  std::set<uint32_t> colors;
  size_t non_white = 0, orange = 0, blue = 0, transparent = 0;
  const size_t n = size_t{image.width} * image.height;
  for (size_t p = 0; p < n; ++p) {
    const uint8_t* px = &image.pixels[p * static_cast<size_t>(image.channels)];
    const uint32_t rgb = (uint32_t{px[0]} << 16) | (uint32_t{px[1]} << 8) | px[2];
    colors.insert(rgb);
    if (rgb != 0xffffff) ++non_white;
    if (rgb == 0xe07b00) ++orange;  // decode markers
    if (rgb == 0x1f6fd1) ++blue;    // prefill markers
    if (image.channels == 4 && px[3] != 255) ++transparent;
  }
  EXPECT_EQ(transparent, 0u);  // the white background covers the page
  EXPECT_GT(colors.size(), 20u);          // anti-aliased text and lines in several colours
  EXPECT_GT(non_white, n / 100);          // something is drawn...
  EXPECT_LT(non_white, n / 2);            // ...on a white page
  EXPECT_GT(orange, 50u);
  EXPECT_GT(blue, 50u);
}

TEST(TinyPng, RejectsGarbage) {
  EXPECT_THROW(testing::DecodePng({1, 2, 3}), std::runtime_error);
  std::vector<uint8_t> sig = {0x89, 'P', 'N', 'G', 0x0d, 0x0a, 0x1a, 0x0a};
  EXPECT_THROW(testing::DecodePng(sig), std::runtime_error);
}

}  // namespace
}  // namespace ridge
