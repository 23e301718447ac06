// Model::Forward's step profile (op_profile.h): every step of the pass is
// timed once per layer, the steps' arithmetic adds up to ForwardFlops and
// their bytes to the weights and cached K and V they read, and timing a pass
// does not change its logits.
#include "ridge/model/op_profile.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "random_model.h"
#include "ridge/base/thread_pool.h"
#include "ridge/gguf/model_generator.h"
#include "ridge/kv/paged_kv_cache.h"
#include "ridge/model/model.h"

namespace ridge {
namespace {

constexpr int64_t kPromptTokens = 19;

double Bytes(const kernels::WeightMatrix& w) { return static_cast<double>(w.n_rows * w.row_bytes); }

// Logits of every token of a kPromptTokens-token prompt in one pass, into
// `profile` when it is set.
std::vector<float> PromptLogits(Model& model, OpProfile* profile) {
  ThreadPool pool(2);
  PagedKvCache cache(model.KvShape(GgmlType::kF32, 4), 8);
  EXPECT_TRUE(cache.Reserve(0, kPromptTokens));
  Batch batch;
  for (int64_t i = 0; i < kPromptTokens; ++i) batch.Add(static_cast<TokenId>(100 + 7 * i), i, 0, true);
  std::vector<float> logits(static_cast<size_t>(kPromptTokens * model.config().n_vocab));
  model.set_op_profile(profile);
  model.Forward(batch, cache, logits.data(), pool);
  model.set_op_profile(nullptr);
  return logits;
}

TEST(OpProfile, EveryStepOfADenseForwardPassTimedWithItsWork) {
  auto model = Model::Load(testing::RandomModelGguf(GgmlType::kQ8_0));
  const ModelConfig& c = model->config();
  const std::vector<float> plain = PromptLogits(*model, nullptr);
  OpProfile profile;
  const std::vector<float> timed = PromptLogits(*model, &profile);
  ASSERT_EQ(plain.size(), timed.size());
  EXPECT_EQ(std::memcmp(plain.data(), timed.data(), plain.size() * sizeof(float)), 0) << "timing changed the logits";

  EXPECT_EQ(profile.forwards(), 1);
  const int64_t L = c.n_layers;
  const std::pair<OpKind, int64_t> calls[] = {
      {OpKind::kEmbed, 1},         {OpKind::kNorm, 2 * L}, {OpKind::kQkv, L},          {OpKind::kRopeStoreKv, L},
      {OpKind::kAttention, L},     {OpKind::kAttnOut, L},  {OpKind::kResidual, 2 * L}, {OpKind::kFfnGateUp, L},
      {OpKind::kFfnActivation, L}, {OpKind::kFfnDown, L},  {OpKind::kExperts, 0},      {OpKind::kLogits, 1}};
  double steps_s = 0, weight_flops = 0, weight_bytes = 0;
  for (const auto& [kind, n] : calls) {
    const OpTotals& t = profile.op(kind);
    EXPECT_EQ(t.calls, n) << OpName(kind);
    EXPECT_GE(t.seconds, 0) << OpName(kind);
    steps_s += t.seconds;
    if (IsWeightOp(kind)) {
      weight_flops += t.flops;
      weight_bytes += t.bytes;
    } else if (kind != OpKind::kAttention) {
      EXPECT_EQ(t.flops, 0) << OpName(kind);
      EXPECT_EQ(t.bytes, 0) << OpName(kind);
    }
  }
  EXPECT_LE(steps_s, profile.forward_seconds());

  // Every token attends over positions 0..itself: Σ (t + 1).
  const int64_t attended = kPromptTokens * (kPromptTokens + 1) / 2;
  const double attention_flops = profile.op(OpKind::kAttention).flops;
  EXPECT_DOUBLE_EQ(attention_flops, 4.0 * static_cast<double>(L * c.q_dim() * attended));
  // Its K and V are read from memory once, however many tiles of tokens read them: the prompt's positions, F32.
  EXPECT_DOUBLE_EQ(profile.op(OpKind::kAttention).bytes, static_cast<double>(L * 2 * c.kv_dim() * 4 * kPromptTokens));
  // Every token wants logits, so the LM head runs for all, as ForwardFlops counts it.
  EXPECT_NEAR(weight_flops + attention_flops, model->ForwardFlops(kPromptTokens, attended),
              1e-12 * model->ForwardFlops(kPromptTokens, attended));

  double expected_bytes = Bytes(model->weights().output);
  for (const LayerWeights& w : model->weights().layers)
    expected_bytes +=
        Bytes(w.wq) + Bytes(w.wk) + Bytes(w.wv) + Bytes(w.wo) + Bytes(w.w_gate) + Bytes(w.w_up) + Bytes(w.w_down);
  EXPECT_DOUBLE_EQ(weight_bytes, expected_bytes);
}

// A decode step at position p reads the cached K and V of p + 1 positions in
// every layer, once for all of its heads.
TEST(OpProfile, ADecodeStepsAttentionReadsItsCachedKeysAndValues) {
  auto model = Model::Load(testing::RandomModelGguf(GgmlType::kQ8_0));
  const ModelConfig& c = model->config();
  ThreadPool pool(1);
  PagedKvCache cache(model->KvShape(GgmlType::kF16, 4), 8);
  ASSERT_TRUE(cache.Reserve(0, 12));
  std::vector<float> logits(static_cast<size_t>(12 * c.n_vocab));
  Batch prompt;
  for (int64_t i = 0; i < 11; ++i) prompt.Add(static_cast<TokenId>(50 + i), i, 0, i == 10);
  model->Forward(prompt, cache, logits.data(), pool);
  OpProfile profile;
  Batch step;
  step.Add(7, 11, 0, true);
  model->set_op_profile(&profile);
  model->Forward(step, cache, logits.data(), pool);
  model->set_op_profile(nullptr);
  const OpTotals& a = profile.op(OpKind::kAttention);
  EXPECT_DOUBLE_EQ(a.bytes, static_cast<double>(c.n_layers * 2 * c.kv_dim() * 2 * 12));  // F16: 2 bytes
  EXPECT_DOUBLE_EQ(a.flops, 4.0 * static_cast<double>(c.n_layers * c.q_dim() * 12));
}

// A mixture's FFN is one step: what its routing made the experts read, plus
// the router's bytes.
TEST(OpProfile, AMixturesFfnIsOneStepWithTheExpertsItHit) {
  RandomModelShape s{64, 128, 2, 4, 2, 256};
  s.architecture = "qwen3moe";
  s.head_dim = 32;
  s.n_expert = 8;
  s.n_expert_used = 2;
  s.n_ff_exp = 64;
  RandomModelOptions options;
  options.shape = s;
  options.seed = 5;
  auto model = Model::Load(testing::WriteRandomModelGguf(options, "op-profile-moe"));
  model->ResetExpertReads();
  OpProfile profile;
  PromptLogits(*model, &profile);
  const OpTotals& experts = profile.op(OpKind::kExperts);
  EXPECT_EQ(experts.calls, s.n_layers);
  EXPECT_EQ(profile.op(OpKind::kFfnGateUp).calls, 0);
  EXPECT_EQ(profile.op(OpKind::kFfnDown).calls, 0);
  double router_bytes = 0;
  for (const LayerWeights& w : model->weights().layers) router_bytes += Bytes(w.router);
  EXPECT_DOUBLE_EQ(experts.bytes, router_bytes + static_cast<double>(model->expert_reads().bytes));
  EXPECT_GT(model->expert_reads().bytes, 0);
  const double per_token = static_cast<double>(s.n_embd * s.n_expert + 3 * s.n_embd * s.n_ff_exp * s.n_expert_used);
  EXPECT_DOUBLE_EQ(experts.flops, 2.0 * per_token * static_cast<double>(s.n_layers * kPromptTokens));
}

}  // namespace
}  // namespace ridge
