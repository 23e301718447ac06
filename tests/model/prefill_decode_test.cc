// Prefill (all prompt tokens in one matrix-matrix pass) and decode (one token
// per pass) are two schedules of the same computation: they must give the
// same next-token logits and the same KV-cache contents.
#include <gtest/gtest.h>

#include <cmath>

#include "ridge/base/cpu_features.h"
#include "ridge/base/error.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/model/model.h"
#include "stories_model.h"

namespace ridge {
namespace {

// Float sums in a different order (tiled prefill kernels vs matrix-vector)
// differ by a few ulps per dot product; through 5 layers that stays far below
// 1e-3 relative to the logits' range (~20), while a wrong mask, position or
// cache slot changes logits by whole units.
constexpr float kLogitTolerance = 2e-3f;
constexpr float kKvTolerance = 1e-4f;

class PrefillDecodeTest : public ::testing::TestWithParam<Isa> {
 protected:
  void SetUp() override { SetIsaOverride(GetParam()); }
  void TearDown() override { ClearIsaOverride(); }
};

TEST_P(PrefillDecodeTest, SameLogitsAndKvAsOneTokenAtATime) {
  auto model = Model::Load(testing::Stories260kGguf());
  const ModelConfig& c = model->config();
  ThreadPool pool(2);
  const std::vector<TokenId> prompt = {1, 403, 407, 261, 378, 11, 300, 290, 263, 310, 299, 280, 260, 401, 305, 270, 280, 30, 40};
  const int64_t n = static_cast<int64_t>(prompt.size());
  KvCacheShape shape = model->KvShape(GgmlType::kF32, 4);  // blocks of 4: the prompt spans several
  PagedKvCache batched(shape, 8), stepped(shape, 8);
  ASSERT_TRUE(batched.Reserve(0, n));
  ASSERT_TRUE(stepped.Reserve(0, n));

  std::vector<float> logits_batched(static_cast<size_t>(n * c.n_vocab));
  Batch all;
  for (int64_t i = 0; i < n; ++i) all.Add(prompt[static_cast<size_t>(i)], i, 0, true);
  model->Forward(all, batched, logits_batched.data(), pool);

  std::vector<float> logits_step(static_cast<size_t>(c.n_vocab));
  for (int64_t i = 0; i < n; ++i) {
    Batch one;
    one.Add(prompt[static_cast<size_t>(i)], i, 0, true);
    model->Forward(one, stepped, logits_step.data(), pool);
    for (int64_t v = 0; v < c.n_vocab; ++v)
      ASSERT_NEAR(logits_step[static_cast<size_t>(v)], logits_batched[static_cast<size_t>(i * c.n_vocab + v)], kLogitTolerance)
          << "position " << i << " token " << v;
  }
  const int64_t kv_floats = c.n_kv_heads * c.head_dim;
  std::vector<float> a(static_cast<size_t>(kv_floats)), b(a.size());
  for (int64_t layer = 0; layer < c.n_layers; ++layer)
    for (int64_t pos = 0; pos < n; ++pos)
      for (bool value : {false, true}) {
        batched.LoadKv(value, 0, layer, pos, a.data());
        stepped.LoadKv(value, 0, layer, pos, b.data());
        for (size_t i = 0; i < a.size(); ++i)
          ASSERT_NEAR(a[i], b[i], kKvTolerance * std::max(1.0f, std::fabs(b[i])))
              << (value ? "V" : "K") << " layer " << layer << " position " << pos;
      }
}

TEST(Model, RejectsTokensOutsideTheVocabularyAndContext) {
  auto model = Model::Load(testing::Stories260kGguf());
  ThreadPool pool(1);
  PagedKvCache cache(model->KvShape(GgmlType::kF32, 16), 2);
  ASSERT_TRUE(cache.Reserve(0, 2));
  std::vector<float> logits(static_cast<size_t>(model->config().n_vocab));
  Batch bad_token;
  bad_token.Add(512, 0, 0, true);
  EXPECT_THROW(model->Forward(bad_token, cache, logits.data(), pool), Error);
  Batch bad_position;
  bad_position.Add(1, model->config().n_ctx_train, 0, true);
  EXPECT_THROW(model->Forward(bad_position, cache, logits.data(), pool), Error);
}

INSTANTIATE_TEST_SUITE_P(EveryTarget, PrefillDecodeTest, ::testing::ValuesIn(SupportedIsas()),
                         [](const auto& info) { return std::string(IsaName(info.param)); });

}  // namespace
}  // namespace ridge
