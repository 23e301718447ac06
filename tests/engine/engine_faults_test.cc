// Requests that end early, and the engine going on after them: several
// requests cancelled in the same step.
#include <gtest/gtest.h>

#include "ridge/engine/engine.h"
#include "stories_model.h"

namespace ridge {
namespace {

struct Outcome {
  std::vector<TokenId> tokens;
  FinishKind kind = FinishKind::kNone;
  std::string error;
};

class EngineFaultsTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = LlamaModel::Load(testing::Stories260kGguf()).release();
    tokenizer_ = new Tokenizer(Tokenizer::FromGguf(model_->file()));
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete model_;
  }

  static EngineOptions Options() {
    EngineOptions o;
    o.n_threads = 2;
    o.kv_type = GgmlType::kF32;
    o.kv_block_tokens = 8;
    o.kv_tokens = 4096;
    return o;
  }

  // A greedy request that runs max_new tokens unless something ends it.
  static RequestParams Request(const std::string& text, int64_t max_new) {
    RequestParams p;
    p.prompt = tokenizer_->Encode(text, true);
    p.max_new_tokens = max_new;
    p.sampling.temperature = 0;
    p.ignore_eos = true;
    return p;
  }

  // Everything the stream carries until it finishes (the engine runs elsewhere).
  static Outcome Drain(RequestStream& stream) {
    Outcome out;
    StreamUpdate update;
    for (;;) {
      if (!stream.Wait(update, std::chrono::milliseconds(10))) continue;
      for (auto& t : update.tokens) out.tokens.push_back(t.token);
      if (update.finished) {
        out.kind = update.finish_kind;
        out.error = update.error;
        return out;
      }
    }
  }

  static void ExpectPoolEmpty(const Engine& engine) {
    EngineStats s = engine.Stats();
    EXPECT_EQ(s.running, 0);
    EXPECT_EQ(s.waiting, 0);
    EXPECT_EQ(s.kv.blocks_used, 0);
    EXPECT_EQ(s.kv.blocks_free, s.kv.blocks_total);
    EXPECT_EQ(s.kv.sequences, 0);
  }

  // Tokens of each prompt run together without faults: what the survivors must get.
  static std::vector<std::vector<TokenId>> Reference(const std::vector<std::string>& texts, int64_t max_new) {
    Engine engine(*model_, *tokenizer_, Options());
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (const auto& t : texts) streams.push_back(engine.Submit(Request(t, max_new)));
    engine.RunUntilIdle();
    std::vector<std::vector<TokenId>> out;
    for (auto& s : streams) out.push_back(Drain(*s).tokens);
    return out;
  }

  static const std::vector<std::string>& Texts() {
    static const std::vector<std::string> texts = {"Once upon a time", "The cat", "Tom and Lily went to the park",
                                                   "One day",          "The sun", "A little bird"};
    return texts;
  }

  static LlamaModel* model_;
  static Tokenizer* tokenizer_;
};

LlamaModel* EngineFaultsTest::model_ = nullptr;
Tokenizer* EngineFaultsTest::tokenizer_ = nullptr;

// The crash of issue 11: finishing a cancelled request published stats,
// which walked the running set while std::erase_if was compacting it.
TEST_F(EngineFaultsTest, SeveralRunningRequestsCancelledInOneStep) {
  const int64_t max_new = 60;
  const auto reference = Reference(Texts(), max_new);
  Engine engine(*model_, *tokenizer_, Options());
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& t : Texts()) streams.push_back(engine.Submit(Request(t, max_new)));
  // All six prefilled and decoding.
  for (int i = 0; i < 5; ++i) engine.Step();
  ASSERT_EQ(engine.Stats().running, 6);
  for (size_t i = 0; i < streams.size(); i += 2) streams[i]->Cancel();
  engine.Step();
  EXPECT_EQ(engine.Stats().running, 3);
  engine.RunUntilIdle();
  for (size_t i = 0; i < streams.size(); ++i) {
    Outcome o = Drain(*streams[i]);
    if (i % 2 == 0) {
      EXPECT_EQ(o.kind, FinishKind::kAbort) << "request " << i;
      EXPECT_LT(o.tokens.size(), static_cast<size_t>(max_new)) << "request " << i;
    } else {
      EXPECT_EQ(o.kind, FinishKind::kLength) << "request " << i;
      EXPECT_EQ(o.tokens, reference[i]) << "request " << i << " changed after its neighbours were cancelled";
    }
  }
  ExpectPoolEmpty(engine);
  EXPECT_EQ(engine.Stats().finished, 6);
}

}  // namespace
}  // namespace ridge
