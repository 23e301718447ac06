// The features ridge detects against the flags Linux reads from the same CPU.
#include "ridge/base/cpu_features.h"

#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <utility>

namespace ridge {
namespace {

// The first "flags" line of /proc/cpuinfo, as a set; empty if there is none.
std::set<std::string> CpuinfoFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> flags;
    for (std::string w; words >> w;) flags.insert(w);
    return flags;
  }
  return {};
}

TEST(CpuFeaturesTest, EveryFeatureAgreesWithTheKernelsCpuinfoFlags) {
  const std::set<std::string> flags = CpuinfoFlags();
  if (flags.empty()) GTEST_SKIP() << "no flags line in /proc/cpuinfo (not Linux on x86-64)";
  const CpuFeatures& f = DetectedCpuFeatures();
  const std::pair<const char*, bool> features[] = {
      {"avx2", f.avx2},         {"fma", f.fma},           {"f16c", f.f16c},
      {"avx512f", f.avx512f},   {"avx512bw", f.avx512bw}, {"avx512vl", f.avx512vl},
      {"avx512dq", f.avx512dq}, {"avx512_vnni", f.avx512vnni}, {"avx512_bf16", f.avx512bf16},
      {"gfni", f.gfni},         {"avx_vnni", f.avx_vnni}, {"amx_tile", f.amx_tile},
      {"amx_int8", f.amx_int8}, {"amx_bf16", f.amx_bf16},
  };
  for (const auto& [name, detected] : features) EXPECT_EQ(detected, flags.count(name) == 1) << name;
}

}  // namespace
}  // namespace ridge
