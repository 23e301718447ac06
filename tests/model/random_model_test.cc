// Random-weight models of every weight type (ridge gen-model) run through the
// SIMD kernels give finite logits that agree with the scalar reference path,
// in prefill and in decode.
#include <gtest/gtest.h>

#include <cmath>

#include "random_model.h"
#include "ridge/base/cpu_features.h"
#include "ridge/model/model.h"

namespace ridge {
namespace {

// Logits of an N-token prefill followed by decode steps, on the active ISA.
std::vector<float> RunLogits(Model& model, const std::vector<TokenId>& tokens, int64_t n_prefill) {
  const int64_t n_vocab = model.config().n_vocab;
  ThreadPool pool(2);
  PagedKvCache cache(model.KvShape(GgmlType::kF32, 16), 4);
  EXPECT_TRUE(cache.Reserve(0, static_cast<int64_t>(tokens.size())));
  std::vector<float> all;
  std::vector<float> logits(static_cast<size_t>(n_prefill * n_vocab));
  Batch prefill;
  for (int64_t i = 0; i < n_prefill; ++i) prefill.Add(tokens[static_cast<size_t>(i)], i, 0, true);
  model.Forward(prefill, cache, logits.data(), pool);
  all.insert(all.end(), logits.begin(), logits.end());
  for (int64_t i = n_prefill; i < static_cast<int64_t>(tokens.size()); ++i) {
    Batch one;
    one.Add(tokens[static_cast<size_t>(i)], i, 0, true);
    model.Forward(one, cache, logits.data(), pool);
    all.insert(all.end(), logits.begin(), logits.begin() + n_vocab);
  }
  return all;
}

class RandomModelTest : public ::testing::TestWithParam<GgmlType> {};

TEST_P(RandomModelTest, SimdAgreesWithScalarAndLogitsAreFinite) {
  auto model = Model::Load(testing::RandomModelGguf(GetParam()));
  std::vector<TokenId> tokens;
  for (int i = 0; i < 40; ++i) tokens.push_back(static_cast<TokenId>((i * 7919 + 13) % 32000));
  SetIsaOverride(Isa::kScalar);
  const std::vector<float> reference = RunLogits(*model, tokens, 33);
  ClearIsaOverride();
  float max_abs = 0;
  for (float v : reference) {
    ASSERT_TRUE(std::isfinite(v));
    max_abs = std::max(max_abs, std::fabs(v));
  }
  ASSERT_GT(max_abs, 0.1f);  // the model computes something
  // Tolerance, relative to the largest logit: F32 and F16 weights keep FP32
  // activations (sums reordered: ~1e-5); BF16 dot products round activations
  // to 8 mantissa bits (~0.4 % per element); Q8_0/Q4_0 quantize every matmul
  // input to int8 per block of 32 (up to 0.4 % per element). Through seven
  // quantized matmuls per layer, two layers and the LM head, the largest
  // deviation measured is 1.9 % (Q4_0, AVX2 and AVX-512); 3 % leaves room for
  // other CPUs while a real fault (a wrong scale, block or row) moves logits
  // by tens of percent.
  const GgmlType type = GetParam();
  const float tolerance = (type == GgmlType::kF32 || type == GgmlType::kF16) ? 1e-3f : 3e-2f;
  for (Isa isa : SupportedIsas()) {
    if (isa == Isa::kScalar) continue;
    SetIsaOverride(isa);
    const std::vector<float> got = RunLogits(*model, tokens, 33);
    ClearIsaOverride();
    ASSERT_EQ(got.size(), reference.size());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << IsaName(isa) << " logit " << i;
      ASSERT_NEAR(got[i], reference[i], tolerance * max_abs) << IsaName(isa) << " logit " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryWeightType, RandomModelTest,
                         ::testing::Values(GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0,
                                           GgmlType::kQ4_0),
                         [](const auto& info) { return std::string(GgmlTypeName(info.param)); });

}  // namespace
}  // namespace ridge
