// Dequantizers checked against blocks whose values were worked out by hand
// from ggml's block layouts, and quantizers against ggml's reference rounding.
#include "ridge/gguf/dequantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "ridge/base/half.h"

namespace ridge {
namespace {

constexpr uint16_t kHalfOne = 0x3C00, kHalfHalf = 0x3800, kHalfQuarter = 0x3400, kHalfTwo = 0x4000,
                   kHalfMinusOne = 0xBC00, kHalfEighth = 0x3000;

template <typename Block>
std::vector<float> Dequant(GgmlType type, const Block& b, int n) {
  std::vector<float> out(n);
  DequantizeRow(type, &b, out.data(), n);
  return out;
}

TEST(Dequantize, TypeTableMatchesGgml) {
  EXPECT_EQ(RowBytes(GgmlType::kQ4_K, 512), 288);
  EXPECT_EQ(RowBytes(GgmlType::kQ6_K, 256), 210);
  EXPECT_EQ(RowBytes(GgmlType::kQ8_0, 64), 68);
  EXPECT_EQ(RowBytes(GgmlType::kBF16, 3), 6);
  EXPECT_EQ(TraitsOf(GgmlType::kQ2_K).block_bytes, 84);
  EXPECT_EQ(TraitsOf(GgmlType::kQ3_K).block_bytes, 110);
  EXPECT_EQ(TraitsOf(GgmlType::kQ8_K).block_bytes, 292);
  EXPECT_EQ(FindGgmlType(39)->block_bytes, 17);  // MXFP4: one E8M0 byte + 16 bytes of codes
  EXPECT_EQ(RowBytes(GgmlType::kMXFP4, 2880), 90 * 17);
  EXPECT_FALSE(FindGgmlType(4).has_value());   // Q4_2, removed from ggml
  EXPECT_FALSE(FindGgmlType(31).has_value());
  EXPECT_EQ(ParseGgmlType("q8_0"), GgmlType::kQ8_0);
  EXPECT_EQ(ParseGgmlType("BF16"), GgmlType::kBF16);
  EXPECT_FALSE(ParseGgmlType("Q9_0").has_value());
  EXPECT_STREQ(GgmlTypeName(GgmlType::kQ5_K), "Q5_K");
}

TEST(Dequantize, F32F16Bf16) {
  const float f32[3] = {1.5f, -0.0f, 3e38f};
  std::vector<float> out(3);
  DequantizeRow(GgmlType::kF32, f32, out.data(), 3);
  EXPECT_EQ(out, std::vector<float>(f32, f32 + 3));

  const uint16_t f16[5] = {0x3C00, 0xC000, 0x3800, 0x7BFF, 0x0001};
  out.resize(5);
  DequantizeRow(GgmlType::kF16, f16, out.data(), 5);
  EXPECT_EQ(out, (std::vector<float>{1.0f, -2.0f, 0.5f, 65504.0f, std::ldexp(1.0f, -24)}));

  const uint16_t bf16[3] = {0x3F80, 0xC040, 0x4049};
  out.resize(3);
  DequantizeRow(GgmlType::kBF16, bf16, out.data(), 3);
  EXPECT_EQ(out, (std::vector<float>{1.0f, -3.0f, 3.140625f}));
}

TEST(Dequantize, Q4_0) {
  BlockQ4_0 b;
  b.d = kHalfHalf;
  std::memset(b.qs, 0x88, sizeof b.qs);  // every nibble 8 -> 0
  b.qs[0] = 0xA3;                        // element 0: 3-8 = -5; element 16: 10-8 = 2
  b.qs[15] = 0x0F;                       // element 15: 15-8 = 7; element 31: 0-8 = -8
  auto y = Dequant(GgmlType::kQ4_0, b, 32);
  for (int i = 0; i < 32; ++i) {
    float want = 0.0f;
    if (i == 0) want = -2.5f;
    if (i == 16) want = 1.0f;
    if (i == 15) want = 3.5f;
    if (i == 31) want = -4.0f;
    EXPECT_EQ(y[i], want) << i;
  }
}

TEST(Dequantize, Q4_1) {
  BlockQ4_1 b;
  b.d = kHalfQuarter;
  b.m = kHalfMinusOne;
  std::memset(b.qs, 0x44, sizeof b.qs);  // 4*0.25 - 1 = 0
  b.qs[1] = 0xF0;                        // element 1: 0 -> -1; element 17: 15 -> 2.75
  auto y = Dequant(GgmlType::kQ4_1, b, 32);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], i == 1 ? -1.0f : i == 17 ? 2.75f : 0.0f) << i;
}

TEST(Dequantize, Q5_0) {
  BlockQ5_0 b;
  b.d = kHalfOne;
  std::memset(b.qs, 0, sizeof b.qs);
  b.qs[2] = 0x51;  // element 2 low bits 1, element 18 low bits 5
  // High bits (bit k of qh is element k): elements 2, 18 and 31.
  const uint32_t qh = (1u << 2) | (1u << 18) | (1u << 31);
  std::memcpy(b.qh, &qh, 4);
  auto y = Dequant(GgmlType::kQ5_0, b, 32);
  for (int i = 0; i < 32; ++i) {
    float want = -16.0f;  // 0 - 16
    if (i == 2) want = 1.0f;   // (1 + 16) - 16
    if (i == 18) want = 5.0f;  // (5 + 16) - 16
    if (i == 31) want = 0.0f;  // (0 + 16) - 16
    EXPECT_EQ(y[i], want) << i;
  }
}

TEST(Dequantize, Q5_1) {
  BlockQ5_1 b;
  b.d = kHalfHalf;
  b.m = kHalfTwo;
  std::memset(b.qs, 0, sizeof b.qs);
  b.qs[0] = 0x3F;  // element 0: 15, element 16: 3
  const uint32_t qh = 1u << 16;  // element 16 gets +16
  std::memcpy(b.qh, &qh, 4);
  auto y = Dequant(GgmlType::kQ5_1, b, 32);
  for (int i = 0; i < 32; ++i) {
    float want = 2.0f;
    if (i == 0) want = 9.5f;    // 15 * 0.5 + 2
    if (i == 16) want = 11.5f;  // 19 * 0.5 + 2
    EXPECT_EQ(y[i], want) << i;
  }
}

TEST(Dequantize, MXFP4) {
  BlockMXFP4 b;
  b.e = 127;                           // 2^(127 − 128) = 0.5
  std::memset(b.qs, 0x11, sizeof b.qs);  // code 1: level 1 -> 0.5
  b.qs[0] = 0xF7;                      // element 0: code 7, 12 -> 6; element 16: code 15, -12 -> -6
  b.qs[5] = 0x29;                      // element 5: code 9, -1 -> -0.5; element 21: code 2, 2 -> 1
  b.qs[9] = 0x80;                      // element 9: code 0 -> 0; element 25: code 8 (minus zero) -> 0
  auto y = Dequant(GgmlType::kMXFP4, b, 32);
  for (int i = 0; i < 32; ++i) {
    float want = 0.5f;
    if (i == 0) want = 6.0f;
    if (i == 16) want = -6.0f;
    if (i == 5) want = -0.5f;
    if (i == 21) want = 1.0f;
    if (i == 9 || i == 25) want = 0.0f;
    EXPECT_EQ(y[i], want) << i;
  }
  // The exponent's range: 0 and 1 are the subnormals 2^-128 and 2^-127, 254 gives 2^126.
  for (auto [e, d] : {std::pair{0, 0x1p-128f}, {1, 0x1p-127f}, {2, 0x1p-126f}, {254, 0x1p126f}}) {
    b.e = static_cast<uint8_t>(e);
    EXPECT_EQ(Dequant(GgmlType::kMXFP4, b, 32)[1], d) << e;  // code 1
  }
}

TEST(Quantize, MXFP4ReproducesABlockOfLevels) {
  // max 12 · 0.25 = 3: exponent floor(log2 3) + 125 = 126, scale 2^-2; every value a level.
  const float levels[8] = {0, 1, 2, 3, 4, 6, 8, 12};
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = (j % 2 ? -0.25f : 0.25f) * levels[j % 8];
  BlockMXFP4 b;
  QuantizeRow(GgmlType::kMXFP4, x, &b, 32);
  EXPECT_EQ(b.e, 126);
  std::vector<float> y(32);
  DequantizeRow(GgmlType::kMXFP4, &b, y.data(), 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], x[j]) << j;
}

TEST(Dequantize, IQ4_NL) {
  BlockIQ4_NL b;
  b.d = kHalfHalf;
  std::memset(b.qs, 0x88, sizeof b.qs);  // code 8: level 1 -> 0.5
  b.qs[0] = 0xF0;                        // element 0: code 0, -127 -> -63.5; element 16: code 15, 113 -> 56.5
  b.qs[7] = 0x69;                        // element 7: code 9, 13 -> 6.5; element 23: code 6, -22 -> -11
  auto y = Dequant(GgmlType::kIQ4_NL, b, 32);
  for (int i = 0; i < 32; ++i) {
    float want = 0.5f;
    if (i == 0) want = -63.5f;
    if (i == 16) want = 56.5f;
    if (i == 7) want = 6.5f;
    if (i == 23) want = -11.0f;
    EXPECT_EQ(y[i], want) << i;
  }
}

TEST(Dequantize, Q8_0) {
  BlockQ8_0 b;
  b.d = kHalfEighth;
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(j - 16);
  b.qs[31] = -128;
  auto y = Dequant(GgmlType::kQ8_0, b, 32);
  EXPECT_EQ(y[0], -2.0f);
  EXPECT_EQ(y[16], 0.0f);
  EXPECT_EQ(y[17], 0.125f);
  EXPECT_EQ(y[30], 1.75f);
  EXPECT_EQ(y[31], -16.0f);
}

// Sub-block scales sc = {1,2,3,4,17,5,6,7} and mins m = {0,1,2,3,4,33,0,0}, packed
// as in ggml: bytes 0-3 hold sc0-3 (low 6 bits) and sc4-7 >> 4 (top 2 bits), bytes
// 4-7 m0-3 and m4-7 >> 4, bytes 8-11 the low nibbles of sc4-7 | m4-7 << 4.
constexpr uint8_t kKScales[12] = {0x41, 0x02, 0x03, 0x04, 0x00, 0x81, 0x02, 0x03, 0x41, 0x15, 0x06, 0x07};

TEST(Dequantize, Q4_K) {
  BlockQ4_K b;
  b.d = kHalfOne;
  b.dmin = kHalfHalf;
  std::memcpy(b.scales, kKScales, 12);
  for (int l = 0; l < 128; ++l) b.qs[l] = static_cast<uint8_t>((l % 16) | ((15 - l % 16) << 4));
  auto y = Dequant(GgmlType::kQ4_K, b, 256);
  // Element e is in sub-block e/32; pairs of sub-blocks share 32 bytes (low, then high nibbles).
  EXPECT_EQ(y[0], 0.0f);     // sub 0, qs[0] low 0: 1*1*0 - 0.5*0
  EXPECT_EQ(y[5], 5.0f);     // sub 0, qs[5] low 5: 1*5 - 0
  EXPECT_EQ(y[37], 19.5f);   // sub 1, qs[5] high 10: 2*10 - 0.5*1
  EXPECT_EQ(y[67], 8.0f);    // sub 2, qs[35] low 3: 3*3 - 0.5*2
  EXPECT_EQ(y[135], 117.0f); // sub 4, qs[71] low 7: 17*7 - 0.5*4
  EXPECT_EQ(y[162], 48.5f);  // sub 5, qs[66] high 13: 5*13 - 0.5*33
  EXPECT_EQ(y[240], 105.0f); // sub 7, qs[112] high 15: 7*15 - 0
}

TEST(Dequantize, Q5_K) {
  BlockQ5_K b;
  b.d = kHalfOne;
  b.dmin = kHalfHalf;
  std::memcpy(b.scales, kKScales, 12);
  for (int l = 0; l < 128; ++l) b.qs[l] = static_cast<uint8_t>((l % 16) | ((15 - l % 16) << 4));
  std::memset(b.qh, 0, sizeof b.qh);
  b.qh[5] = 0x02;  // bit 1 = sub-block 1, position 5 -> element 37 gets +16
  b.qh[2] = 0x20;  // bit 5 = sub-block 5, position 2 -> element 162 gets +16
  b.qh[3] = 0x10;  // bit 4 = sub-block 4, position 3 -> element 131 gets +16
  auto y = Dequant(GgmlType::kQ5_K, b, 256);
  EXPECT_EQ(y[5], 5.0f);      // no high bit
  EXPECT_EQ(y[37], 51.5f);    // 2*(10+16) - 0.5
  EXPECT_EQ(y[67], 8.0f);
  EXPECT_EQ(y[135], 117.0f);
  EXPECT_EQ(y[162], 128.5f);  // 5*(13+16) - 16.5
  EXPECT_EQ(y[131], 321.0f);  // sub 4, qs[67] low 3: 17*(3+16) - 0.5*4
  EXPECT_EQ(y[3], 3.0f);      // sub 0, position 3: bit 0 of qh[3] is clear
  EXPECT_EQ(y[240], 105.0f);
}

TEST(Dequantize, Q6_K) {
  BlockQ6_K b;
  std::memset(b.ql, 0, sizeof b.ql);
  std::memset(b.qh, 0, sizeof b.qh);
  for (int i = 0; i < 16; ++i) b.scales[i] = static_cast<int8_t>(i + 1);
  b.scales[3] = -2;
  b.d = kHalfHalf;
  b.ql[0] = 0x21;   // element 0 low 1, element 64 low 2
  b.qh[0] = 0xE4;   // 2-bit highs: element 0: 0, 32: 1, 64: 2, 96: 3
  b.ql[32] = 0x0F;  // element 32 low 15, element 96 low 0
  b.ql[81] = 0x05;  // second half, position 17: element 145 low 5
  b.qh[49] = 0x03;  // element 145 high 3
  auto y = Dequant(GgmlType::kQ6_K, b, 256);
  EXPECT_EQ(y[0], -15.5f);   // 0.5 * sc0=1 * (1 - 32)
  EXPECT_EQ(y[64], 5.0f);    // 0.5 * sc4=5 * (34 - 32)
  EXPECT_EQ(y[32], -1.5f);   // 0.5 * sc2=3 * (31 - 32)
  EXPECT_EQ(y[96], 56.0f);   // 0.5 * sc6=7 * (48 - 32)
  EXPECT_EQ(y[48], 32.0f);   // 0.5 * sc3=-2 * (0 - 32)
  EXPECT_EQ(y[145], 105.0f); // 0.5 * sc9=10 * (53 - 32)
  EXPECT_EQ(y[200], -208.0f);// 0.5 * sc12=13 * -32
  EXPECT_EQ(y[255], -256.0f);// 0.5 * sc15=16 * -32
}

TEST(Quantize, Q8_0MatchesGgmlReference) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);
  BlockQ8_0 b;
  QuantizeRow(GgmlType::kQ8_0, x, &b, 32);
  EXPECT_EQ(b.d, F32ToF16(16.0f / 127.0f));
  EXPECT_EQ(b.qs[0], -127);
  EXPECT_EQ(b.qs[16], 0);
  EXPECT_EQ(b.qs[17], 8);    // round(7.9375)
  EXPECT_EQ(b.qs[18], 16);   // round(15.875)
  EXPECT_EQ(b.qs[31], 119);  // round(119.0625)
}

TEST(Quantize, Q4_0MatchesGgmlReference) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);
  // Largest magnitude -16 -> d = -16 / -8 = 2; q = min(15, (int)(x/2 + 8.5)).
  BlockQ4_0 b;
  QuantizeRow(GgmlType::kQ4_0, x, &b, 32);
  EXPECT_EQ(b.d, kHalfTwo);
  EXPECT_EQ(b.qs[0], 0x80);   // x0 = -16 -> 0; x16 = 0 -> 8
  EXPECT_EQ(b.qs[1], 0x91);   // x1 = -15 -> 1 (1.0); x17 = 1 -> 9
  EXPECT_EQ(b.qs[2], 0x91);   // x2 = -14 -> 1 (1.5 truncated); x18 = 2 -> 9
  EXPECT_EQ(b.qs[15], 0xF8);  // x15 = -1 -> 8; x31 = 15 -> 16, clamped to 15
}

// x = j - 16 for j = 0..31 in the tests below.
TEST(Quantize, Q4_1MatchesGgmlReference) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);
  // min -16, max 15: d = 31/15, q = min(15, (int)((x + 16) * 15/31 + 0.5)).
  BlockQ4_1 b;
  QuantizeRow(GgmlType::kQ4_1, x, &b, 32);
  EXPECT_EQ(b.d, F32ToF16(31.0f / 15.0f));
  EXPECT_EQ(b.m, F32ToF16(-16.0f));
  EXPECT_EQ(b.qs[0], 0x80);   // x0 = -16 -> 0; x16 = 0 -> 7.74 + 0.5 -> 8
  EXPECT_EQ(b.qs[1], 0x80);   // x1 = -15 -> 0.98 -> 0; x17 = 1 -> 8.23 + 0.5 -> 8
  EXPECT_EQ(b.qs[15], 0xF7);  // x15 = -1 -> 7.26 + 0.5 -> 7; x31 = 15 -> 15
}

TEST(Quantize, Q5_0MatchesGgmlReference) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);
  // Largest magnitude -16 -> d = 1, q = min(31, (int)(x + 16.5)) = j: low nibbles j & 15, bit 4 set from j = 16.
  BlockQ5_0 b;
  QuantizeRow(GgmlType::kQ5_0, x, &b, 32);
  EXPECT_EQ(b.d, kHalfOne);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b.qs[j], 0x11 * j) << j;
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  EXPECT_EQ(qh, 0xFFFF0000u);
}

TEST(Quantize, Q5_1MatchesGgmlReference) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = 0.5f * static_cast<float>(j) - 3.0f;
  x[9] = 1.8f;  // (1.8 + 3) / 0.5 = 9.6 -> 10
  // min -3, max 12.5: d = 0.5, q = (int)((x + 3) / 0.5 + 0.5) = j.
  BlockQ5_1 b;
  QuantizeRow(GgmlType::kQ5_1, x, &b, 32);
  EXPECT_EQ(b.d, kHalfHalf);
  EXPECT_EQ(b.m, F32ToF16(-3.0f));
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b.qs[j], j == 9 ? 0x9A : 0x11 * j) << j;  // element 9: 10, element 25: 9
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  EXPECT_EQ(qh, 0xFFFF0000u);
}

// A block whose values are exactly d times levels is found again exactly
// (one of the candidate scales, (-127 + 0)/max, is 1/d).
TEST(Quantize, IQ4_NLReproducesABlockOfLevels) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = 0.5f * kIq4NlLevels[(j * 7) % 16];
  BlockIQ4_NL b;
  QuantizeRow(GgmlType::kIQ4_NL, x, &b, 32);
  EXPECT_EQ(b.d, kHalfHalf);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(b.qs[j] & 0x0F, (j * 7) % 16) << j;
    EXPECT_EQ(b.qs[j] >> 4, ((j + 16) * 7) % 16) << j;
  }
}

// Σ x²·(x - y)² over a block: the error IQ4_NL's scale search minimises.
double WeightedError(const float* x, const float* y) {
  double e = 0.0;
  for (int j = 0; j < 32; ++j) e += static_cast<double>(x[j]) * x[j] * (x[j] - y[j]) * (x[j] - y[j]);
  return e;
}

// The searched scale beats the plain one (max|x| / 127 with nearest levels)
// on most blocks and is never much worse (f16 rounding of d aside).
TEST(Quantize, IQ4_NLScaleSearchBeatsThePlainScale) {
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  constexpr int kBlocks = 200;
  std::vector<float> x(32 * kBlocks), y(x.size());
  for (auto& v : x) v = dist(rng);
  std::vector<uint8_t> iq4(RowBytes(GgmlType::kIQ4_NL, 32 * kBlocks));
  QuantizeRow(GgmlType::kIQ4_NL, x.data(), iq4.data(), 32 * kBlocks);
  DequantizeRow(GgmlType::kIQ4_NL, iq4.data(), y.data(), 32 * kBlocks);
  int better = 0;
  for (int b = 0; b < kBlocks; ++b) {
    const float* xb = x.data() + 32 * b;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j)
      if (std::fabs(xb[j]) > amax) amax = std::fabs(xb[j]), max = xb[j];
    const float d = max / 127.0f;
    float plain[32];
    for (int j = 0; j < 32; ++j) {
      float best = kIq4NlLevels[0] * d;
      for (int8_t level : kIq4NlLevels)
        if (std::fabs(xb[j] - level * d) < std::fabs(xb[j] - best)) best = level * d;
      plain[j] = best;
    }
    const double searched = WeightedError(xb, y.data() + 32 * b), reference = WeightedError(xb, plain);
    EXPECT_LE(searched, reference * 1.01) << "block " << b;
    better += searched < reference;
  }
  EXPECT_GT(better, kBlocks * 3 / 4);
}

TEST(Quantize, AllZeroBlockGivesZeros) {
  float x[32] = {};
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                     GgmlType::kIQ4_NL, GgmlType::kMXFP4}) {
    std::vector<uint8_t> buf(RowBytes(t, 32));
    QuantizeRow(t, x, buf.data(), 32);
    std::vector<float> y(32, 1.0f);
    DequantizeRow(t, buf.data(), y.data(), 32);
    for (float v : y) EXPECT_EQ(v, 0.0f);
  }
}

TEST(Quantize, RoundTripErrorBounds) {
  std::mt19937 rng(42);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const int n = 32 * 64;
  std::vector<float> x(n);
  for (auto& v : x) v = dist(rng);
  x[5] = 0.0f;
  x[40] = 1e-3f;
  for (GgmlType t : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0,
                     GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kIQ4_NL, GgmlType::kMXFP4}) {
    ASSERT_TRUE(CanQuantizeTo(t));
    std::vector<uint8_t> buf(RowBytes(t, n));
    QuantizeRow(t, x.data(), buf.data(), n);
    std::vector<float> y(n);
    DequantizeRow(t, buf.data(), y.data(), n);
    for (int b = 0; b < n / 32; ++b) {
      float amax = 0.0f, min = x[b * 32], max = x[b * 32];
      for (int j = 0; j < 32; ++j) {
        amax = std::max(amax, std::fabs(x[b * 32 + j]));
        min = std::min(min, x[b * 32 + j]);
        max = std::max(max, x[b * 32 + j]);
      }
      // Q4_1 / Q5_1: half a step of d = range / (2^bits - 1), d's f16 rounding
      // times the code, and the f16 rounding of the minimum.
      const float range = max - min, min_rounding = std::fabs(min) * 0x1p-11f;
      for (int j = 0; j < 32; ++j) {
        const int i = b * 32 + j;
        const float err = std::fabs(x[i] - y[i]);
        switch (t) {
          case GgmlType::kF32: EXPECT_EQ(err, 0.0f); break;
          case GgmlType::kF16: EXPECT_LE(err, std::fabs(x[i]) * 0x1p-11f + 0x1p-25f) << i; break;
          case GgmlType::kBF16: EXPECT_LE(err, std::fabs(x[i]) * 0x1p-8f) << i; break;
          // half a step of d = amax/127, plus d's own fp16 rounding times |q| <= 127
          case GgmlType::kQ8_0: EXPECT_LE(err, amax / 127.0f * (0.5f + 127.0f * 0x1p-11f) * 1.001f) << i; break;
          // |d| = amax/8; the far end (+8 steps) clamps to 7 steps, so the worst case is one step
          case GgmlType::kQ4_0: EXPECT_LE(err, amax / 8.0f * (1.0f + 8.0f * 0x1p-11f)) << i; break;
          case GgmlType::kQ5_0: EXPECT_LE(err, amax / 16.0f * (1.0f + 16.0f * 0x1p-11f)) << i; break;
          case GgmlType::kQ4_1: EXPECT_LE(err, range / 15.0f * (0.5f + 15.0f * 0x1p-11f) + min_rounding) << i; break;
          case GgmlType::kQ5_1: EXPECT_LE(err, range / 31.0f * (0.5f + 31.0f * 0x1p-11f) + min_rounding) << i; break;
          // Levels at most 24 apart (89 -> 113) with |d| >= amax / 127 · ~0.9; the ends
          // may be clipped by the least-squares scale: a quarter of amax is generous.
          case GgmlType::kIQ4_NL: EXPECT_LE(err, amax / 4.0f) << i; break;
          // d = 2^floor(log2 amax) / 8 <= amax / 8; the widest gap is 8d -> 12d, and values
          // past 12d (up to 16d) clip to it: at most 4d.
          case GgmlType::kMXFP4: EXPECT_LE(err, amax / 2.0f) << i; break;
          default: FAIL();
        }
      }
    }
  }
  EXPECT_FALSE(CanQuantizeTo(GgmlType::kQ8_K));
}

TEST(Quantize, NonFiniteInputDoesNotCrash) {
  float x[32];
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j);
  x[3] = std::nanf("");
  x[4] = INFINITY;
  for (GgmlType t : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                     GgmlType::kIQ4_NL, GgmlType::kMXFP4}) {
    std::vector<uint8_t> buf(RowBytes(t, 32));
    QuantizeRow(t, x, buf.data(), 32);  // must be free of UB (checked under UBSan)
  }
}

}  // namespace
}  // namespace ridge
