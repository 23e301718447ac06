#include "ridge/base/half.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <random>

#include "ridge/base/cpu_features.h"

namespace ridge {
namespace {

TEST(Half, F16RoundTripsEveryValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = F16ToF32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(F32ToF16(f), h) << "half bits " << h;
  }
}

TEST(Half, KnownValues) {
  EXPECT_EQ(F16ToF32(0x3c00), 1.0f);
  EXPECT_EQ(F16ToF32(0xc000), -2.0f);
  EXPECT_EQ(F16ToF32(0x7bff), 65504.0f);
  EXPECT_EQ(F16ToF32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(F32ToF16(1e6f), 0x7c00);
  EXPECT_EQ(Bf16ToF32(0x3f80), 1.0f);
  EXPECT_EQ(F32ToBf16(1.0f), 0x3f80);
  EXPECT_EQ(F32ToBf16(1.00390625f), 0x3f80);  // halfway, rounds to even
}

__attribute__((target("f16c"))) uint16_t HardwareF16(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}

TEST(Half, F32ToF16MatchesHardwareRounding) {
  if (!DetectedCpuFeatures().f16c) GTEST_SKIP() << "this CPU has no F16C to compare with";
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 2000000; ++i) {
    uint32_t b = bits(rng);
    float f;
    std::memcpy(&f, &b, 4);
    if (std::isnan(f)) continue;
    ASSERT_EQ(F32ToF16(f), HardwareF16(f)) << "float bits " << std::hex << b;
  }
}

}  // namespace
}  // namespace ridge
