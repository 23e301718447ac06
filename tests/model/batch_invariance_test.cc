// Batch invariance of the whole forward pass: a sequence's logits are the
// same bits however its tokens are scheduled (one at a time, the whole prompt
// at once, chunks of any size) and whatever other sequences share each step,
// on every dispatch target and weight type. Chunked prefill, continuous
// batching, prefix caching and recompute after preemption all rest on this.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ridge/base/cpu_features.h"
#include "ridge/gguf/model_generator.h"
#include "ridge/model/model.h"
#include "random_model.h"

namespace ridge {
namespace {

constexpr SeqId kTraced = 0;

// Runs `tokens` of sequence kTraced through the model in steps whose sizes
// `chunk` picks, each step padded with tokens of other sequences (`others`
// of them, `extra` tokens a step in all); returns the traced sequence's
// logits at every position, [n][n_vocab], on n_threads threads, with a KV
// cache of kv_type.
template <typename Chunk, typename Extra>
std::vector<float> TracedLogits(Model& model, const std::vector<TokenId>& tokens, int others, Chunk chunk,
                                Extra extra, std::mt19937& rng, int n_threads = 2, GgmlType kv_type = GgmlType::kF16) {
  const ModelConfig& c = model.config();
  const auto n = static_cast<int64_t>(tokens.size());
  ThreadPool pool(n_threads);
  PagedKvCache cache(model.KvShape(kv_type, 16), (n + 200 * others) / 16 + 8);
  std::uniform_int_distribution<TokenId> any_token(3, static_cast<TokenId>(c.n_vocab - 1));
  std::vector<int64_t> other_len(static_cast<size_t>(others), 0);
  std::vector<float> out(static_cast<size_t>(n * c.n_vocab));
  std::vector<float> step_logits;
  for (int64_t done = 0; done < n;) {
    const int64_t take = std::min(n - done, chunk());
    Batch batch;
    // The traced tokens go anywhere in the step: first, last or between others.
    const int64_t before = extra();
    const int64_t after = extra();
    auto add_others = [&](int64_t count) {
      for (int64_t i = 0; i < count && others > 0; ++i) {
        const SeqId seq = 1 + static_cast<SeqId>(rng() % static_cast<unsigned>(others));
        int64_t& len = other_len[static_cast<size_t>(seq - 1)];
        if (len + 1 >= 200) continue;  // stay inside the random model's context
        ASSERT_TRUE(cache.Reserve(seq, len + 1));
        batch.Add(any_token(rng), len++, seq, rng() % 2 == 0);
      }
    };
    add_others(before);
    EXPECT_TRUE(cache.Reserve(kTraced, done + take));
    for (int64_t i = 0; i < take; ++i) batch.Add(tokens[static_cast<size_t>(done + i)], done + i, kTraced, true);
    add_others(after);
    step_logits.resize(static_cast<size_t>(batch.n_logits() * c.n_vocab));
    model.Forward(batch, cache, step_logits.data(), pool);
    int64_t row = 0;
    for (int64_t t = 0; t < batch.size(); ++t) {
      if (!batch.want_logits[static_cast<size_t>(t)]) continue;
      if (batch.seq_ids[static_cast<size_t>(t)] == kTraced)
        std::memcpy(out.data() + batch.positions[static_cast<size_t>(t)] * c.n_vocab,
                    step_logits.data() + row * c.n_vocab, static_cast<size_t>(c.n_vocab) * 4);
      ++row;
    }
    done += take;
  }
  return out;
}

class ForwardBatchInvariance : public ::testing::TestWithParam<GgmlType> {};

TEST_P(ForwardBatchInvariance, LogitsAreTheSameBitsUnderAnySchedule) {
  auto model = Model::Load(testing::RandomModelGguf(GetParam()));
  const int64_t n_vocab = model->config().n_vocab;
  std::mt19937 rng(42);
  std::uniform_int_distribution<TokenId> any_token(3, static_cast<TokenId>(n_vocab - 1));
  std::vector<TokenId> tokens(60);
  for (TokenId& t : tokens) t = any_token(rng);
  for (Isa isa : SupportedIsas()) {
    SetIsaOverride(isa);
    // Reference: one token a step, alone (decode's schedule).
    const std::vector<float> want = TracedLogits(*model, tokens, 0, [] { return int64_t{1}; },
                                                 [] { return int64_t{0}; }, rng);
    // The whole prompt in one step, alone (prefill's schedule).
    EXPECT_EQ(want, TracedLogits(*model, tokens, 0, [] { return int64_t{1000}; }, [] { return int64_t{0}; }, rng))
        << IsaName(isa) << ": one prefill step differs from token-by-token";
    // Random traces: chunks of 1-40 tokens among 0-40 tokens of 1-4 other sequences.
    for (int trace = 0; trace < 4; ++trace) {
      std::uniform_int_distribution<int64_t> chunk(1, 40), extra(0, 20);
      const int others = 1 + trace;
      const std::vector<float> got = TracedLogits(*model, tokens, others, [&] { return chunk(rng); },
                                                  [&] { return extra(rng); }, rng);
      for (size_t pos = 0; pos < tokens.size(); ++pos)
        ASSERT_EQ(0, std::memcmp(got.data() + pos * n_vocab, want.data() + pos * n_vocab,
                                 static_cast<size_t>(n_vocab) * 4))
            << GgmlTypeName(GetParam()) << " " << IsaName(isa) << " trace " << trace << ": logits at position "
            << pos << " depend on the schedule";
    }
    ClearIsaOverride();
  }
}

// Attention over more than kernels::kAttentionSplitPositions positions is
// split at fixed positions; decode with few KV heads spreads the splits over
// the threads (Model::AttendSplit) where one thread or a prefill tile takes a
// whole group: the same bits whatever the thread count and the schedule, with
// an F16 cache and a BF16 one (the BF16 dot on AVX-512).
TEST(ForwardBatchInvarianceLong, SplitAttentionSameBitsOnAnyThreadCount) {
  RandomModelOptions options;
  options.shape = {128, 352, 2, 4, 2, 1024};  // 2 KV heads: a decode step has 2 groups
  options.seed = 11;
  auto model = Model::Load(testing::WriteRandomModelGguf(options, "random", "random-long-context.gguf"));
  const int64_t n_vocab = model->config().n_vocab;
  std::mt19937 rng(43);
  std::uniform_int_distribution<TokenId> any_token(3, static_cast<TokenId>(n_vocab - 1));
  std::vector<TokenId> tokens(2 * kernels::kAttentionSplitPositions + 90);  // 3 splits at the end
  for (TokenId& t : tokens) t = any_token(rng);
  const auto n = static_cast<int64_t>(tokens.size());
  for (Isa isa : SupportedIsas()) {
    SetIsaOverride(isa);
    for (GgmlType kv : {GgmlType::kF16, GgmlType::kBF16}) {
      // Reference: the whole prompt in one step on one thread (a tile per group, no thread split).
      const std::vector<float> want = TracedLogits(*model, tokens, 0, [] { return int64_t{100000}; },
                                                   [] { return int64_t{0}; }, rng, 1, kv);
      for (int n_threads : {2, 3}) {
        // Prefill to 40 short of the end, then decode alone: the split path.
        int64_t step = 0;
        const std::vector<float> decoded = TracedLogits(
            *model, tokens, 0, [&] { return step++ == 0 ? n - 40 : int64_t{1}; }, [] { return int64_t{0}; }, rng,
            n_threads, kv);
        // Chunks of 1-40 tokens among other sequences' tokens.
        std::uniform_int_distribution<int64_t> chunk(1, 40), extra(0, 6);
        const std::vector<float> mixed = TracedLogits(*model, tokens, 2, [&] { return chunk(rng); },
                                                      [&] { return extra(rng); }, rng, n_threads, kv);
        for (const auto* got : {&decoded, &mixed})
          for (int64_t pos = 0; pos < n; ++pos)
            ASSERT_EQ(0, std::memcmp(got->data() + pos * n_vocab, want.data() + pos * n_vocab,
                                     static_cast<size_t>(n_vocab) * 4))
                << IsaName(isa) << " " << GgmlTypeName(kv) << " cache, " << n_threads << " threads, "
                << (got == &decoded ? "decoded" : "mixed") << ": logits at position " << pos
                << " depend on the schedule";
      }
    }
    ClearIsaOverride();
  }
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, ForwardBatchInvariance,
                         ::testing::Values(GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0,
                                           GgmlType::kQ4_0, GgmlType::kQ5_1, GgmlType::kIQ4_NL),
                         [](const auto& info) { return std::string(GgmlTypeName(info.param)); });

}  // namespace
}  // namespace ridge
