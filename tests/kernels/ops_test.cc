// The small kernels on every dispatch target against their scalar twins
// (attention: attention_test.cc).
//
// Tolerances, with u = 2⁻²⁴ (float's unit roundoff):
//  * RmsNorm: the fast sum of squares runs in float over >= 16 lanes, so its
//    relative error is <= (n/16 + 8)·u (the twin's is in double); the inverse
//    square root halves that and adds a few u, two products add 2u:
//    |Δ| <= ((n/16 + 8)/2 + 8)·u·|want|.
//  * Rope: each output is a·c ∓ b·s, rounded once or twice by either version:
//    |Δ| <= 4u·(|a| + |b|).
//  * Exp (softmax, SwiGLU): the vector expf (Cephes polynomial) is within
//    2⁻²¹ relative (checked below against std::exp); below its underflow
//    threshold (AVX2: e^−86.6 ≈ 2.4e−38) it returns 0, hence an absolute 3e−38.
//  * Softmax: exp error on the term and in the sum, plus the float sum over
//    lanes: |Δ| <= (2·2⁻²¹ + (n/8 + 8)·u)·|want| + 3e−38.
//  * SwiGlu: g / (1 + e^−g) · up: exp error plus 3 roundings, and the twin's
//    own: |Δ| <= (2⁻²¹ + 8u)·|want| + 3e−38.
//  * StoreKv: bit for bit equal to QuantizeRow (NaNs with a payload excepted
//    for F16, where the hardware keeps payload bits).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ridge/base/cpu_features.h"
#include "ridge/base/half.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/kernels/ops.h"
#include "isa_test_util.h"

namespace ridge::kernels {
namespace {

using isa_test::ForEachIsa, isa_test::kExpRel, isa_test::kU, isa_test::Random;

const int64_t kSizes[] = {1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 64, 100, 257, 2048, 5632};

TEST(RmsNorm, MatchesScalarTwin) {
  std::mt19937 rng(1);
  for (int64_t n : kSizes) {
    auto x = Random(rng, n, -3.0f, 3.0f), w = Random(rng, n, 0.5f, 1.5f);
    std::vector<float> want(x.size());
    scalar::RmsNorm(x.data(), w.data(), n, 1e-5f, want.data());
    ForEachIsa([&](Isa isa) {
      std::vector<float> got(x.size() + 1, 99.0f);
      RmsNorm(x.data(), w.data(), n, 1e-5f, got.data());
      EXPECT_EQ(got[static_cast<size_t>(n)], 99.0f) << "wrote past the end, isa " << IsaName(isa);
      const double rel = ((static_cast<double>(n) / 16 + 8) / 2 + 8) * kU;
      for (int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(got[i], want[i], rel * std::fabs(want[i]) + 1e-30)
            << "n=" << n << " i=" << i << " " << IsaName(isa);
      // In place (out aliases x).
      std::vector<float> inplace = x;
      RmsNorm(inplace.data(), w.data(), n, 1e-5f, inplace.data());
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(inplace[i], got[i]);
    });
  }
}

TEST(Rope, MatchesScalarTwin) {
  std::mt19937 rng(2);
  struct Shape {
    int64_t n_heads, head_dim, rope_dim;
  };
  for (Shape s : {Shape{1, 2, 2}, Shape{3, 8, 8}, Shape{32, 64, 64}, Shape{4, 64, 32}, Shape{2, 128, 128},
                  Shape{5, 18, 18}, Shape{2, 100, 98}, Shape{1, 10, 6}}) {
    for (int64_t pos : {0, 1, 17, 1000, 32767}) {
      for (RopeStyle style : {RopeStyle::kAdjacentPairs, RopeStyle::kHalves}) {
        const auto x = Random(rng, s.n_heads * s.head_dim, -2.0f, 2.0f);
        std::vector<float> inv_freq(static_cast<size_t>(s.rope_dim / 2));
        RopeBaseFrequencies(10000.0f, s.rope_dim, inv_freq.data());
        const RopeFrequencies freqs{inv_freq.data(), s.rope_dim / 2, 1.0f, style};
        std::vector<float> want = x;
        scalar::Rope(want.data(), s.n_heads, s.head_dim, freqs, pos);
        ForEachIsa([&](Isa isa) {
          std::vector<float> got = x;
          Rope(got.data(), s.n_heads, s.head_dim, freqs, pos);
          for (int64_t h = 0; h < s.n_heads; ++h) {
            for (int64_t d = 0; d < s.head_dim; ++d) {
              // The pair's two elements (dims past rope_dim stay: their own "pair").
              const int64_t half = s.rope_dim / 2;
              const int64_t d0 = d >= s.rope_dim ? d : style == RopeStyle::kAdjacentPairs ? d - d % 2 : d % half;
              const int64_t d1 = d >= s.rope_dim ? d : style == RopeStyle::kAdjacentPairs ? d0 + 1 : d0 + half;
              const int64_t i = h * s.head_dim + d;
              const double tol = 4 * kU * (std::fabs(x[h * s.head_dim + d0]) + std::fabs(x[h * s.head_dim + d1]));
              ASSERT_NEAR(got[i], want[i], tol)
                  << "heads=" << s.n_heads << " dim=" << s.head_dim << " rope=" << s.rope_dim << " pos=" << pos
                  << " halves=" << (style == RopeStyle::kHalves) << " i=" << i << " " << IsaName(isa);
            }
          }
        });
      }
    }
  }
}

// The vector targets keep a call's angles for the next call at the same
// position: a table changed in place (a model freed and another loaded at the
// same address) must not reuse them.
TEST(Rope, AnglesFollowTheTableValuesNotItsAddress) {
  std::vector<float> inv_freq(32);
  const std::vector<float> x(4 * 64, 1.0f);
  for (float mscale : {1.0f, 0.5f}) {
    for (float base : {10000.0f, 1000000.0f, 500.0f}) {  // the same position, mscale and address
      RopeBaseFrequencies(base, 64, inv_freq.data());
      const RopeFrequencies freqs{inv_freq.data(), 32, mscale, RopeStyle::kHalves};
      std::vector<float> want = x;
      scalar::Rope(want.data(), 4, 64, freqs, 123);
      ForEachIsa([&](Isa isa) {
        std::vector<float> got = x;
        Rope(got.data(), 4, 64, freqs, 123);
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 1e-5) << "base=" << base << " mscale=" << mscale << " " << IsaName(isa);
      });
    }
  }
}

// Every style and scale against rotations computed here in double: the pairs
// a style names turn by position · inv_freq[i], with cos and sin × mscale.
TEST(Rope, StylesRotateTheirPairsByTheTableAngles) {
  std::mt19937 rng(12);
  const int64_t n_heads = 3, head_dim = 16, n_pairs = 6;  // rope over 12 of 16 dims
  const auto inv_freq = Random(rng, n_pairs, 0.001f, 1.0f);
  for (RopeStyle style : {RopeStyle::kAdjacentPairs, RopeStyle::kHalves}) {
    for (float mscale : {1.0f, 1.25f}) {
      const RopeFrequencies freqs{inv_freq.data(), n_pairs, mscale, style};
      const auto x = Random(rng, n_heads * head_dim, -2.0f, 2.0f);
      std::vector<double> want(x.begin(), x.end());
      for (int64_t h = 0; h < n_heads; ++h)
        for (int64_t i = 0; i < n_pairs; ++i) {
          const int64_t a = h * head_dim + (style == RopeStyle::kHalves ? i : 2 * i);
          const int64_t b = style == RopeStyle::kHalves ? a + n_pairs : a + 1;
          const double angle = static_cast<float>(37.0f * inv_freq[i]);  // the kernel's float angle
          const double c = std::cos(angle) * mscale, sn = std::sin(angle) * mscale;
          want[a] = x[a] * c - x[b] * sn;
          want[b] = x[a] * sn + x[b] * c;
        }
      ForEachIsa([&](Isa isa) {
        std::vector<float> got = x;
        Rope(got.data(), n_heads, head_dim, freqs, 37);
        for (size_t i = 0; i < got.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 1e-5) << "style " << static_cast<int>(style) << " mscale " << mscale << " i "
                                             << i << " " << IsaName(isa);
      });
    }
  }
}

TEST(Softmax, MatchesScalarTwin) {
  std::mt19937 rng(3);
  for (int64_t n : kSizes) {
    for (float spread : {1.0f, 30.0f, 200.0f}) {
      const auto x = Random(rng, n, -spread, spread);
      std::vector<float> want = x;
      scalar::SoftmaxInPlace(want.data(), n);
      ForEachIsa([&](Isa isa) {
        std::vector<float> got = x;
        got.push_back(42.0f);
        SoftmaxInPlace(got.data(), n);
        EXPECT_EQ(got.back(), 42.0f) << "wrote past the end";
        const double rel = 2 * kExpRel + (static_cast<double>(n) / 8 + 8) * kU;
        for (int64_t i = 0; i < n; ++i)
          ASSERT_NEAR(got[i], want[i], rel * want[i] + 3e-38)
              << "n=" << n << " spread=" << spread << " i=" << i << " " << IsaName(isa);
      });
    }
  }
}

TEST(Softmax, MinusInfinityGivesZeroWeight) {
  ForEachIsa([&](Isa isa) {
    std::vector<float> x(19, 0.5f);
    x[3] = x[17] = -std::numeric_limits<float>::infinity();
    SoftmaxInPlace(x.data(), 19);
    EXPECT_EQ(x[3], 0.0f) << IsaName(isa);
    EXPECT_EQ(x[17], 0.0f) << IsaName(isa);
    EXPECT_NEAR(x[0], 1.0f / 17, 1e-7) << IsaName(isa);
  });
}

TEST(Exp, VectorExpWithinStatedError) {
  // Softmax of {x, 0}: the weight of x is e^x / (e^x + 1); with x very negative
  // that is e^x itself to within the float sum, which isolates the exp error.
  ForEachIsa([&](Isa isa) {
    double worst = 0;
    for (float x = -80.0f; x < -20.0f; x += 0.01f) {
      float v[2] = {x, 0.0f};
      SoftmaxInPlace(v, 2);
      const double want = std::exp(static_cast<double>(x)) / (std::exp(static_cast<double>(x)) + 1.0);
      worst = std::fmax(worst, std::fabs(v[0] - want) / want);
    }
    EXPECT_LT(worst, kExpRel) << IsaName(isa);
  });
}

// gpt-oss's clamped SwiGLU at points worked out by hand: the gate is capped
// from above only, the up projection both ways.
TEST(SwigluOai, ClampsGateAboveAndUpBothWays) {
  const float gate[5] = {0.0f, 1.0f, 9.0f, -9.0f, 2.0f};
  const float up[5] = {3.0f, 0.0f, 1.0f, 0.0f, -10.0f};
  float out[5];
  SwigluOai(gate, up, 5, 1.702f, 7.0f, out);
  auto glu = [](double g) { return g / (1.0 + std::exp(-1.702 * g)); };
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_NEAR(out[1], glu(1.0) * 1.0, 1e-6);
  EXPECT_NEAR(out[2], glu(7.0) * 2.0, 1e-5);    // gate 9 -> 7
  EXPECT_NEAR(out[3], glu(-9.0) * 1.0, 1e-7);   // gate -9 stays
  EXPECT_NEAR(out[4], glu(2.0) * -6.0, 1e-5);   // up -10 -> -7
}

// The vector forms against the scalar twin: the gate's cap, the up
// projection's clamp both ways, overflow and underflow of the exponential,
// NaN (the limit, as std::fmin/fmax make it) and −∞ (NaN in both).
TEST(SwigluOai, MatchesScalarTwin) {
  std::mt19937 rng(5);
  const float kNan = std::numeric_limits<float>::quiet_NaN(), kInf = std::numeric_limits<float>::infinity();
  for (int64_t n : kSizes) {
    auto gate = Random(rng, n, -20.0f, 20.0f), up = Random(rng, n, -10.0f, 10.0f);
    if (n > 6) gate[1] = -100.0f, gate[2] = 100.0f, gate[3] = 0.0f, gate[4] = kNan, up[5] = kNan, gate[6] = -kInf;
    std::vector<float> want(gate.size());
    scalar::SwigluOai(gate.data(), up.data(), n, 1.702f, 7.0f, want.data());
    ForEachIsa([&](Isa isa) {
      std::vector<float> got(gate.size() + 1, 7.0f);
      SwigluOai(gate.data(), up.data(), n, 1.702f, 7.0f, got.data());
      EXPECT_EQ(got.back(), 7.0f) << "wrote past the end";
      for (int64_t i = 0; i < n; ++i) {
        if (std::isnan(want[i])) {
          ASSERT_TRUE(std::isnan(got[i])) << "n=" << n << " i=" << i << " " << IsaName(isa);
          continue;
        }
        ASSERT_NEAR(got[i], want[i], (kExpRel + 10 * kU) * std::fabs(want[i]) + 3e-38)
            << "n=" << n << " i=" << i << " gate=" << gate[i] << " up=" << up[i] << " " << IsaName(isa);
      }
      std::vector<float> inplace = gate;  // out aliases gate
      SwigluOai(inplace.data(), up.data(), n, 1.702f, 7.0f, inplace.data());
      for (int64_t i = 0; i < n; ++i) {
        if (std::isnan(got[i])) continue;
        ASSERT_EQ(inplace[i], got[i]);
      }
    });
  }
}

// Soft-capping against cap·tanh(x/cap) in double: Cephes' polynomial below
// |x/cap| = 0.625, 1 − 2/(e^2|x/cap| + 1) above, both within 2⁻²¹ relative
// (the exponential's error, damped by the division) plus a few roundings; the
// branches' seam, both signs, zeros, saturation, ±∞ and NaN.
TEST(SoftCap, MatchesDoubleReferenceOnEveryTarget) {
  std::mt19937 rng(6);
  const float kNan = std::numeric_limits<float>::quiet_NaN(), kInf = std::numeric_limits<float>::infinity();
  for (float cap : {50.0f, 30.0f, 1.0f}) {
    for (int64_t n : kSizes) {
      auto x = Random(rng, n, -4 * cap, 4 * cap);
      if (n > 8) {
        x[1] = 0.625f * cap, x[2] = -0.625f * cap, x[3] = std::nextafter(0.625f, 0.0f) * cap, x[4] = 0.0f;
        x[5] = -0.0f, x[6] = 1e-6f * cap, x[7] = 200 * cap, x[8] = -kInf;
      }
      if (n > 9) x[9] = kNan;
      ForEachIsa([&](Isa isa) {
        std::vector<float> got = x;
        got.push_back(42.0f);
        SoftCap(got.data(), n, cap);
        EXPECT_EQ(got.back(), 42.0f) << "wrote past the end";
        for (int64_t i = 0; i < n; ++i) {
          const double want = cap * std::tanh(static_cast<double>(x[i]) / cap);
          if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(got[i])) << IsaName(isa);
            continue;
          }
          ASSERT_NEAR(got[i], want, (kExpRel + 8 * kU) * std::fabs(want))
              << "cap=" << cap << " n=" << n << " i=" << i << " x=" << x[i] << " " << IsaName(isa);
          ASSERT_EQ(std::signbit(got[i]), std::signbit(x[i])) << "x=" << x[i] << " " << IsaName(isa);
        }
      });
    }
  }
}

TEST(SwiGlu, MatchesScalarTwin) {
  std::mt19937 rng(4);
  for (int64_t n : kSizes) {
    auto gate = Random(rng, n, -20.0f, 20.0f), up = Random(rng, n, -3.0f, 3.0f);
    if (n > 4) gate[1] = -100.0f, gate[2] = 100.0f, gate[3] = 0.0f;  // e^100 overflows, e^-100 underflows
    std::vector<float> want(gate.size());
    scalar::SwiGlu(gate.data(), up.data(), n, want.data());
    ForEachIsa([&](Isa isa) {
      std::vector<float> got(gate.size() + 1, 7.0f);
      SwiGlu(gate.data(), up.data(), n, got.data());
      EXPECT_EQ(got.back(), 7.0f) << "wrote past the end";
      for (int64_t i = 0; i < n; ++i)
        ASSERT_NEAR(got[i], want[i], (kExpRel + 8 * kU) * std::fabs(want[i]) + 3e-38)
            << "n=" << n << " i=" << i << " gate=" << gate[i] << " " << IsaName(isa);
      std::vector<float> inplace = gate;  // out aliases gate
      SwiGlu(inplace.data(), up.data(), n, inplace.data());
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(inplace[i], got[i]);
    });
  }
}

// GeGLU (Gemma's FFN) against gelu_tanh computed in double: the SIMD form
// g / (1 + e^(−2u)) is the same function as ½g(1 + tanh u), rounded differently.
TEST(GeGlu, MatchesDoubleReferenceOnEveryTarget) {
  std::mt19937 rng(14);
  for (int64_t n : kSizes) {
    auto gate = Random(rng, n, -12.0f, 12.0f), up = Random(rng, n, -3.0f, 3.0f);
    if (n > 4) gate[1] = -100.0f, gate[2] = 100.0f, gate[3] = 0.0f;
    auto check = [&](const std::vector<float>& got, const std::string& where) {
      for (int64_t i = 0; i < n; ++i) {
        const double g = gate[i];
        const double want = 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (g + 0.044715 * g * g * g))) * up[i];
        ASSERT_NEAR(got[i], want, 1e-5 * std::fabs(want) + 1e-6) << where << " n=" << n << " gate=" << gate[i];
      }
    };
    std::vector<float> want(gate.size());
    scalar::GeGlu(gate.data(), up.data(), n, want.data());
    check(want, "scalar");
    ForEachIsa([&](Isa isa) {
      std::vector<float> got(gate.size() + 1, 7.0f);
      GeGlu(gate.data(), up.data(), n, got.data());
      EXPECT_EQ(got.back(), 7.0f) << "wrote past the end";
      check(got, IsaName(isa));
    });
  }
}

std::vector<float> KvStoreInputs(std::mt19937& rng, int64_t n, bool with_nan) {
  auto x = Random(rng, n, -4.0f, 4.0f);
  const float specials[] = {0.0f,
                            -0.0f,
                            1e-40f,
                            -3e-39f,
                            65504.0f,
                            65520.0f,
                            -1e6f,
                            1e-8f,
                            0.5f,
                            -1.5f,
                            2.5f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity()};
  for (size_t i = 0; i < x.size(); i += 3) x[i] = specials[(i / 3) % std::size(specials)];
  if (with_nan && n > 5) x[5] = std::numeric_limits<float>::quiet_NaN();
  return x;
}

TEST(StoreKv, BitExactWithQuantizeRow) {
  std::mt19937 rng(6);
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0}) {
    for (int64_t head_dim : {1, 7, 8, 16, 17, 32, 64, 96, 128}) {
      if (type == GgmlType::kQ8_0 && head_dim % 32 != 0) continue;
      for (int variant = 0; variant < 4; ++variant) {
        std::vector<float> x = KvStoreInputs(rng, head_dim, variant == 1);
        if (variant == 2) {  // a block whose values hit exact rounding ties after scaling by 127/max
          for (int64_t i = 0; i < head_dim; ++i) x[i] = static_cast<float>(i % 9) - 4.0f + 0.5f;
          x[0] = 127.0f;
        }
        if (variant == 3) x = Random(rng, head_dim, -1e-3f, 1e-3f);
        const int64_t bytes = KvHeadBytes(type, head_dim);
        std::vector<uint8_t> want(static_cast<size_t>(bytes));
        QuantizeRow(type, x.data(), want.data(), head_dim);
        ForEachIsa([&](Isa isa) {
          std::vector<uint8_t> got(static_cast<size_t>(bytes) + 1, 0x5A);
          StoreKv(x.data(), head_dim, type, got.data());
          EXPECT_EQ(got.back(), 0x5A) << "wrote past the end";
          got.pop_back();
          EXPECT_EQ(got, want) << GgmlTypeName(type) << " head_dim=" << head_dim << " variant=" << variant << " "
                               << IsaName(isa);
        });
      }
    }
  }
}

}  // namespace
}  // namespace ridge::kernels
