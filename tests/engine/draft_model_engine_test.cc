// Draft-model speculation in the engine and the single-request generator:
// greedy output is token for token that of plain decoding (alone, batched,
// under preemption, with prefix caching) whatever the draft; stories260K
// drafting for itself accepts (nearly) everything, a random-weight draft of
// its vocabulary little; the draft's own KV cache holds the sequence's
// accepted positions after every step and gives every block back; a draft
// with another vocabulary is refused.
#include <gtest/gtest.h>

#include <algorithm>

#include "random_model.h"
#include "ridge/base/error.h"
#include "ridge/engine/engine.h"
#include "ridge/engine/generator.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/gguf_writer.h"
#include "ridge/gguf/model_generator.h"
#include "speculation_runs.h"
#include "stories_engine_fixture.h"
#include "test_paths.h"

namespace ridge {
namespace {

SpeculationOptions WithDraft(Model& draft, int64_t k) {
  SpeculationOptions s;
  s.method = SpeculationOptions::Method::kDraftModel;
  s.draft = &draft;
  s.num_tokens = k;
  return s;
}

// A random-weight llama written with stories260K's own vocabulary (512
// tokens), once per process under `name`: a draft whose guesses are mostly
// wrong. With `renamed_token` >= 0 that token's text is changed: a
// vocabulary of the right size that is still not the target's.
std::string StoriesVocabRandomGguf(const std::string& name, int32_t renamed_token) {
  const std::string path = testing::ScratchDir("random") + "/" + name + ".gguf";
  GgufFile vocab = GgufFile::Open(testing::Stories260kGguf());
  RandomModelOptions options;
  options.shape = {32, 96, 1, 4, 2, 512};
  options.seed = 11;
  GgufWriter writer = BuildRandomModelGguf(vocab, options, nullptr);
  if (renamed_token >= 0) {
    std::vector<GgufValue> tokens = *vocab.Find("tokenizer.ggml.tokens")->AsArray();
    tokens[static_cast<size_t>(renamed_token)] = GgufValue::String("<renamed>");
    writer.Set("tokenizer.ggml.tokens", GgufValue::Array(GgufValueType::kString, std::move(tokens)));
  }
  writer.Write(path);
  return path;
}

class DraftModelEngineTest : public StoriesEngineTest {
 protected:
  static void SetUpTestSuite() {
    StoriesEngineTest::SetUpTestSuite();
    self_draft_ = Model::Load(testing::Stories260kGguf()).release();
    random_draft_ = Model::Load(StoriesVocabRandomGguf("random-stories-vocab", -1)).release();
  }
  static void TearDownTestSuite() {
    delete random_draft_;
    delete self_draft_;
    StoriesEngineTest::TearDownTestSuite();
  }

  static std::vector<RequestParams> Requests(int64_t max_new) {
    const std::vector<std::string> texts = {"Lily had a red ball. She liked to play with it every day.",
                                            "Tom and Sam went to the park. They saw a big dog.", "Once upon a time",
                                            "The cat sat on the mat.", "Ben and his mom went to the store",
                                            "A little bird"};
    std::vector<RequestParams> requests;
    for (const std::string& text : texts) {
      RequestParams p;
      p.prompt = tokenizer_->Encode(text, true);
      p.max_new_tokens = max_new;
      requests.push_back(p);
    }
    return requests;
  }

  // Plain and draft-model runs give the same tokens; returns the speculative run.
  static RunOutcome ExpectSameAsPlain(EngineOptions options, Model& draft, const std::vector<RequestParams>& requests) {
    options.speculation = {};
    RunOutcome plain = RunAll(*model_, *tokenizer_, options, requests);
    options.speculation = WithDraft(draft, 4);
    RunOutcome spec = RunAll(*model_, *tokenizer_, options, requests);
    for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(spec.outputs[i], plain.outputs[i]) << "request " << i;
    EXPECT_GT(spec.stats.speculation.draft_tokens, 0);
    return spec;
  }

  // A self-draft accepts (nearly) every greedy draft token: the same model,
  // position by position, up to rounding between batch shapes.
  static void ExpectHighAcceptance(const RunOutcome& spec) {
    EXPECT_GT(spec.stats.speculation.AcceptanceRate(), 0.95);
  }
  // A random draft's tokens are mostly rejected, and rolled back.
  static void ExpectRejections(const RunOutcome& spec) {
    EXPECT_LT(spec.stats.speculation.accepted_tokens, spec.stats.speculation.draft_tokens / 2);
  }

  inline static Model* self_draft_ = nullptr;
  inline static Model* random_draft_ = nullptr;
};

TEST_F(DraftModelEngineTest, GreedyEqualsPlainAlone) {
  for (const RequestParams& p : Requests(60)) {
    RunOutcome self = ExpectSameAsPlain(F32Options(), *self_draft_, {p});
    ExpectHighAcceptance(self);
    EXPECT_LT(self.stats.steps, 60 / 3);  // ~K + 1 tokens a step
    ExpectSameAsPlain(F32Options(), *random_draft_, {p});
  }
}

TEST_F(DraftModelEngineTest, GreedyEqualsPlainBatchedWithChunkedPrefill) {
  EngineOptions options = F32Options();
  options.max_batch_tokens = 23;  // drafts compete with prefill chunks for the step's tokens
  ExpectHighAcceptance(ExpectSameAsPlain(options, *self_draft_, Requests(70)));
  ExpectRejections(ExpectSameAsPlain(options, *random_draft_, Requests(70)));
}

TEST_F(DraftModelEngineTest, GreedyEqualsPlainUnderPreemption) {
  EngineOptions options = F32Options();
  options.kv_tokens = 160;  // 20 blocks of 8 for 6 sequences of ~90 tokens
  options.prefix_caching = false;
  ExpectHighAcceptance(ExpectSameAsPlain(options, *self_draft_, Requests(80)));
  ExpectRejections(ExpectSameAsPlain(options, *random_draft_, Requests(80)));
  options.speculation = WithDraft(*self_draft_, 4);
  EXPECT_GT(RunAll(*model_, *tokenizer_, options, Requests(80)).stats.preemptions, 0);
}

TEST_F(DraftModelEngineTest, GreedyEqualsPlainWithPrefixCachingAndSmallPool) {
  EngineOptions options = F32Options();
  options.kv_tokens = 240;
  std::vector<RequestParams> requests = Requests(50);
  const std::vector<RequestParams> again = Requests(50);  // the same prompts twice: the second finds cached blocks
  requests.insert(requests.end(), again.begin(), again.end());
  ExpectHighAcceptance(ExpectSameAsPlain(options, *self_draft_, requests));
  ExpectSameAsPlain(options, *random_draft_, requests);
  options.speculation = WithDraft(*random_draft_, 4);
  EXPECT_GT(RunAll(*model_, *tokenizer_, options, requests).stats.kv.prefix_hit_blocks, 0);
}

// With temperature the drafts are drawn from the draft's q and verified
// against it (the sampler's chi-square tests show the distribution is the
// target's): the runs complete with every block back, a self draft (q = p)
// accepts most tokens and a random draft few, and each verifying step adds
// one token of the target's own.
TEST_F(DraftModelEngineTest, SamplingDraftsFromQ) {
  std::vector<RequestParams> requests = Requests(60);
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].sampling.temperature = 0.9f;
    requests[i].sampling.top_p = 0.95f;
    requests[i].sampling.seed = 100 + i;
  }
  EngineOptions options = F32Options();
  for (Model* draft : {self_draft_, random_draft_}) {
    options.speculation = WithDraft(*draft, 4);
    RunOutcome out = RunAll(*model_, *tokenizer_, options, requests);
    const SpecDecodeCounts& c = out.stats.speculation;
    if (draft == self_draft_) {
      EXPECT_GT(c.AcceptanceRate(), 0.9);
    } else {
      EXPECT_LT(c.AcceptanceRate(), 0.5);
    }
    EXPECT_GT(c.draft_tokens, 0);
    EXPECT_EQ(c.emitted_tokens - c.verify_steps, c.accepted_tokens);
  }
}

// After every step (every request decoding), the draft's cache holds each
// sequence's computed positions, less one where the whole draft was
// accepted (its last token was never fed to the draft): so between
// sum(blocks(c - 1)) and sum(blocks(c)); the target's holds exactly
// sum(blocks(c)). Cancelling mid-way and finishing return both caches' blocks.
TEST_F(DraftModelEngineTest, BothCachesFollowTheFormulaAfterEveryStep) {
  for (Model* draft : {self_draft_, random_draft_}) {
    EngineOptions options = F32Options();
    options.prefix_caching = false;  // no block shared: the formula is a plain sum
    options.speculation = WithDraft(*draft, 5);
    Engine engine(*model_, *tokenizer_, options);
    EXPECT_EQ(engine.Stats().draft_kv.blocks_total, engine.Stats().kv.blocks_total);
    std::vector<RequestParams> requests = Requests(90);
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (const RequestParams& p : requests) streams.push_back(engine.Submit(p));
    std::vector<int64_t> generated(streams.size(), 0);
    int64_t checked_steps = 0;
    for (int step = 0; engine.Step(); ++step) {
      if (step == 6) streams[1]->Cancel();
      int64_t target_blocks = 0, draft_min_blocks = 0, draft_min_tokens = 0, target_tokens = 0;
      bool all_decoding = true;
      for (size_t i = 0; i < streams.size(); ++i) {
        generated[i] += static_cast<int64_t>(DrainNow(*streams[i]).size());
        if (streams[i]->finished()) continue;
        all_decoding &= generated[i] > 1;  // the draft has seen it: it drafted once
        const int64_t computed = static_cast<int64_t>(requests[i].prompt.size()) + generated[i] - 1;
        target_blocks += (computed + options.kv_block_tokens - 1) / options.kv_block_tokens;
        draft_min_blocks += (computed - 1 + options.kv_block_tokens - 1) / options.kv_block_tokens;
        target_tokens += computed;
        draft_min_tokens += computed - 1;
      }
      if (!all_decoding) continue;
      const EngineStats s = engine.Stats();
      ASSERT_EQ(s.kv.blocks_used, target_blocks) << "step " << step;
      ASSERT_GE(s.draft_kv.blocks_used, draft_min_blocks) << "step " << step;
      ASSERT_LE(s.draft_kv.blocks_used, target_blocks) << "step " << step;
      ASSERT_GE(s.draft_kv.tokens_stored, draft_min_tokens) << "step " << step;
      ASSERT_LE(s.draft_kv.tokens_stored, target_tokens) << "step " << step;
      ASSERT_EQ(s.draft_kv.sequences, s.kv.sequences) << "step " << step;
      ++checked_steps;
    }
    EXPECT_GT(checked_steps, 5);
    const EngineStats s = engine.Stats();
    // The self draft has its whole drafts accepted (the draft then lags one
    // position), the random one has them rejected (rolled back to the target's length).
    if (draft == self_draft_) {
      EXPECT_GT(s.speculation.AcceptanceRate(), 0.95);
    } else {
      EXPECT_LT(s.speculation.accepted_tokens, s.speculation.draft_tokens / 2);
    }
    EXPECT_TRUE(streams[1]->finished());
    ExpectPoolEmpty(engine);
    EXPECT_EQ(s.draft_kv.blocks_used, 0);
    EXPECT_EQ(s.draft_kv.blocks_free, s.draft_kv.blocks_total);
    EXPECT_EQ(s.draft_kv.sequences, 0);
  }
}

TEST_F(DraftModelEngineTest, GeneratorGreedyEqualsPlain) {
  ThreadPool pool(2);
  Generator generator(*model_, *tokenizer_, pool);
  for (Model* draft : {self_draft_, random_draft_}) {
    SpecDecodeCounts total;
    for (const RequestParams& p : Requests(80)) {
      GenerateOptions options;
      options.sampling.temperature = 0;
      options.max_new_tokens = p.max_new_tokens;
      GenerationResult plain = generator.GenerateFromTokens(p.prompt, options, nullptr, Clock::now());
      options.speculation = WithDraft(*draft, 4);
      GenerationResult spec = generator.GenerateFromTokens(p.prompt, options, nullptr, Clock::now());
      EXPECT_EQ(spec.output_tokens, plain.output_tokens);
      EXPECT_EQ(spec.text, plain.text);
      EXPECT_EQ(spec.kv.tokens_stored, plain.kv.tokens_stored);
      // The draft holds at most the target's positions at the end.
      EXPECT_LE(spec.draft_kv.tokens_stored, spec.kv.tokens_stored);
      EXPECT_GT(spec.draft_kv.tokens_stored, 0);
      total.draft_tokens += spec.speculation.draft_tokens;
      total.accepted_tokens += spec.speculation.accepted_tokens;
    }
    if (draft == self_draft_) {
      EXPECT_GT(total.AcceptanceRate(), 0.95);
    } else {
      EXPECT_LT(total.AcceptanceRate(), 0.5);
    }
  }
}

// A draft with another vocabulary (the Llama 2 one, 32,000 tokens, or
// stories260K's with one token renamed) is refused when the engine is made,
// naming both sizes or the first token that differs.
TEST_F(DraftModelEngineTest, AnotherVocabularyIsAClearError) {
  auto other = Model::Load(testing::RandomModelGguf(GgmlType::kF32));
  EngineOptions options = F32Options();
  options.speculation = WithDraft(*other, 4);
  try {
    Engine engine(*model_, *tokenizer_, options);
    FAIL() << "a draft with 32000 tokens was accepted for a 512-token target";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("32000"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("512"), std::string::npos) << e.what();
  }
  ThreadPool pool(1);
  Generator generator(*model_, *tokenizer_, pool);
  GenerateOptions g;
  g.speculation = WithDraft(*other, 4);
  EXPECT_THROW(generator.GenerateFromTokens(Requests(5)[0].prompt, g, nullptr, Clock::now()), Error);
  // The same size is not enough: every token's text must match.
  auto renamed = Model::Load(StoriesVocabRandomGguf("renamed-token-300", 300));
  options.speculation = WithDraft(*renamed, 4);
  try {
    Engine engine(*model_, *tokenizer_, options);
    FAIL() << "a draft with another token 300 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("differs from the target's at token 300"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(CheckDraftVocabulary(*random_draft_, *tokenizer_));
}

// A target drafted by a Q8_0 copy of itself (random weights, the Llama 2
// vocabulary): the same greedy tokens, batched and alone.
TEST(DraftModelRandomModel, QuantizedCopyDraftGreedyEqualsPlain) {
  auto target = Model::Load(testing::RandomModelGguf(GgmlType::kF32));
  auto draft = Model::Load(testing::RandomModelGguf(GgmlType::kQ8_0));
  Tokenizer tokenizer = Tokenizer::FromGguf(target->file());
  EngineOptions options;
  options.n_threads = 2;
  options.kv_type = GgmlType::kF32;
  options.kv_block_tokens = 8;
  options.kv_tokens = 2048;
  options.max_batch_tokens = 40;
  std::vector<RequestParams> requests;
  for (const char* text : {"Hello world", "The quick brown fox jumps over the lazy dog", "a b c",
                                  "Lorem ipsum dolor sit amet, consectetur"}) {
    RequestParams p;
    p.prompt = tokenizer.Encode(text, true);
    p.max_new_tokens = 40;
    p.ignore_eos = true;
    requests.push_back(p);
  }
  RunOutcome plain = RunAll(*target, tokenizer, options, requests);
  options.speculation = WithDraft(*draft, 4);
  RunOutcome spec = RunAll(*target, tokenizer, options, requests);
  for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(spec.outputs[i], plain.outputs[i]) << "request " << i;
  EXPECT_GT(spec.stats.speculation.AcceptanceRate(), 0.5);
  RunOutcome alone = RunAll(*target, tokenizer, options, {requests[2]});
  EXPECT_EQ(alone.outputs[0], plain.outputs[2]);
}

}  // namespace
}  // namespace ridge
