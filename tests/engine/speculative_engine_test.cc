// Speculative decoding (prompt lookup) in the engine and the single-request
// generator: greedy output is token for token that of plain decoding (alone,
// batched, under preemption and with prefix caching), drafts are really
// accepted and rejected along the way, and the KV blocks held follow the
// formula after every step and all come back.
#include <gtest/gtest.h>

#include "random_model.h"
#include "ridge/engine/engine.h"
#include "ridge/engine/generator.h"
#include "ridge/grammar/gbnf.h"
#include "speculation_runs.h"
#include "stories_engine_fixture.h"

namespace ridge {
namespace {

SpeculationOptions Ngram(int64_t k) {
  SpeculationOptions s;
  s.method = SpeculationOptions::Method::kNgram;
  s.num_tokens = k;
  s.ngram_min = 1;
  s.ngram_max = 3;
  return s;
}

class SpeculativeEngineTest : public StoriesEngineTest {
 protected:
  // Prompts that invite copying: a story, then its beginning again, as in
  // "repeat this text", and a few plain ones.
  static std::vector<RequestParams> Requests(int64_t max_new) {
    const std::vector<std::string> texts = {
        "Lily had a red ball. She liked to play with it every day. Lily had a red ball. She",
        "Tom and Sam went to the park. They saw a big dog. Tom and Sam went to the",
        "Once upon a time", "The cat sat on the mat. The cat sat on the",
        "Ben and his mom went to the store to buy some food. Ben and his mom", "A little bird"};
    std::vector<RequestParams> requests;
    for (const std::string& text : texts) {
      RequestParams p;
      p.prompt = tokenizer_->Encode(text, true);
      p.max_new_tokens = max_new;
      requests.push_back(p);
    }
    return requests;
  }

  // Plain and speculative runs of the same requests give the same tokens;
  // the speculative run accepted some draft tokens and rejected others.
  static void ExpectSameAsPlain(EngineOptions options, const std::vector<RequestParams>& requests) {
    options.speculation = {};
    RunOutcome plain = RunAll(*model_, *tokenizer_, options, requests);
    options.speculation = Ngram(4);
    RunOutcome spec = RunAll(*model_, *tokenizer_, options, requests);
    for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(spec.outputs[i], plain.outputs[i]) << "request " << i;
    EXPECT_EQ(plain.stats.speculation.draft_tokens, 0);
    EXPECT_GT(spec.stats.speculation.accepted_tokens, 0);
    EXPECT_LT(spec.stats.speculation.accepted_tokens, spec.stats.speculation.draft_tokens);  // rollbacks happened
    EXPECT_LT(spec.stats.steps, plain.stats.steps);
  }
};

TEST_F(SpeculativeEngineTest, GreedyEqualsPlainAlone) {
  for (const RequestParams& p : Requests(60)) ExpectSameAsPlain(F32Options(), {p});
}

TEST_F(SpeculativeEngineTest, GreedyEqualsPlainBatchedWithChunkedPrefill) {
  EngineOptions options = F32Options();
  options.max_batch_tokens = 23;  // drafts compete with prefill chunks for the step's tokens
  ExpectSameAsPlain(options, Requests(70));
}

TEST_F(SpeculativeEngineTest, GreedyEqualsPlainUnderPreemption) {
  EngineOptions options = F32Options();
  options.kv_tokens = 160;  // 20 blocks of 8 for 6 sequences of ~100 tokens
  options.prefix_caching = false;
  ExpectSameAsPlain(options, Requests(80));
  options.speculation = Ngram(4);
  EXPECT_GT(RunAll(*model_, *tokenizer_, options, Requests(80)).stats.preemptions, 0);
}

TEST_F(SpeculativeEngineTest, GreedyEqualsPlainWithPrefixCachingAndSmallPool) {
  EngineOptions options = F32Options();
  options.kv_tokens = 240;
  std::vector<RequestParams> requests = Requests(50);
  const std::vector<RequestParams> again = Requests(50);  // the same prompts twice: the second finds cached blocks
  requests.insert(requests.end(), again.begin(), again.end());
  ExpectSameAsPlain(options, requests);
  options.speculation = Ngram(4);
  EXPECT_GT(RunAll(*model_, *tokenizer_, options, requests).stats.kv.prefix_hit_blocks, 0);
}

TEST_F(SpeculativeEngineTest, GreedyWithPenaltiesEqualsPlain) {
  std::vector<RequestParams> requests = Requests(50);
  for (RequestParams& p : requests) {
    p.sampling.repetition_penalty = 1.3f;  // each verified position sees the accepted tokens before it
    p.sampling.frequency_penalty = 0.2f;
  }
  EngineOptions options = F32Options();
  options.speculation = {};
  RunOutcome plain = RunAll(*model_, *tokenizer_, options, requests);
  options.speculation = Ngram(4);
  RunOutcome spec = RunAll(*model_, *tokenizer_, options, requests);
  EXPECT_EQ(spec.outputs, plain.outputs);
  EXPECT_GT(spec.stats.speculation.draft_tokens, 0);
}

// Adaptive K drafts less where drafts fail, for the same output, and
// accepts a larger share of what it drafts.
TEST_F(SpeculativeEngineTest, AdaptiveKDraftsLessForTheSameOutput) {
  EngineOptions options = F32Options();
  options.speculation = Ngram(6);
  options.speculation.adaptive = false;
  RunOutcome fixed = RunAll(*model_, *tokenizer_, options, Requests(70));
  options.speculation.adaptive = true;
  RunOutcome adaptive = RunAll(*model_, *tokenizer_, options, Requests(70));
  EXPECT_EQ(adaptive.outputs, fixed.outputs);
  EXPECT_LT(adaptive.stats.speculation.draft_tokens, fixed.stats.speculation.draft_tokens);
  EXPECT_GT(adaptive.stats.speculation.AcceptanceRate(), fixed.stats.speculation.AcceptanceRate());
}

// Past max_decode_tokens (the roofline's compute-bound batch) no step holds
// more decode tokens: with a cap of 3, a step's drafts are at most 3 minus
// its decoding sequences; a cap of 1 turns speculation off for any batch.
TEST_F(SpeculativeEngineTest, NoDraftsPastTheDecodeTokenCap) {
  EngineOptions options = F32Options();
  options.max_batch_tokens = 512;
  options.speculation = Ngram(4);
  options.speculation.max_decode_tokens = 1;
  RunOutcome off = RunAll(*model_, *tokenizer_, options, Requests(40));
  EXPECT_EQ(off.stats.speculation.draft_tokens, 0);
  options.speculation.max_decode_tokens = 3;
  Engine engine(*model_, *tokenizer_, options);
  std::vector<std::shared_ptr<RequestStream>> streams;
  std::vector<RequestParams> requests = Requests(20);
  for (size_t i = 0; i < requests.size(); ++i) {
    requests[i].max_new_tokens = 20 + 15 * static_cast<int64_t>(i);  // the last ones end up decoding alone
    streams.push_back(engine.Submit(requests[i]));
  }
  int64_t drafted_before = 0, steps_with_drafts = 0;
  for (int step = 0; engine.Step(); ++step) {
    const EngineStats s = engine.Stats();
    const int64_t drafted = s.speculation.draft_tokens - drafted_before;
    drafted_before = s.speculation.draft_tokens;
    EXPECT_LE(drafted, 2) << "step " << step;  // at least one sequence decodes
    // Every prompt is prefilled in step 0; later, 3 sequences still running
    // after a step all decoded in it, filling the cap alone.
    if (step > 0 && s.running >= 3) {
      EXPECT_EQ(drafted, 0) << "step " << step;
    }
    steps_with_drafts += drafted > 0;
  }
  EXPECT_GT(steps_with_drafts, 0);  // once few sequences are left, they speculate
  ExpectPoolEmpty(engine);
}

TEST_F(SpeculativeEngineTest, GrammarRequestsDoNotSpeculate) {
  EngineOptions options = F32Options();
  options.speculation = Ngram(4);
  RequestParams p = Requests(30)[0];
  p.grammar = grammar::ParseGbnf("root ::= (\"a\" | \"b\" | \" \")+");
  RunOutcome out = RunAll(*model_, *tokenizer_, options, {p});
  EXPECT_EQ(out.stats.speculation.draft_tokens, 0);
  EXPECT_FALSE(out.outputs[0].empty());
}

// After every step, each decoding sequence holds exactly the blocks of its
// computed positions (prompt + generated - 1, its last token not yet fed),
// whatever its drafts' fate; cancelling mid-way and finishing return them all.
TEST_F(SpeculativeEngineTest, BlocksFollowTheFormulaAfterEveryStep) {
  EngineOptions options = F32Options();
  options.prefix_caching = false;  // no block shared: the formula is a plain sum
  options.speculation = Ngram(5);
  Engine engine(*model_, *tokenizer_, options);
  std::vector<RequestParams> requests = Requests(90);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const RequestParams& p : requests) streams.push_back(engine.Submit(p));
  std::vector<int64_t> generated(streams.size(), 0);
  int64_t checked_steps = 0;
  for (int step = 0; engine.Step(); ++step) {
    if (step == 12) streams[1]->Cancel();
    int64_t expected_blocks = 0;
    bool all_decoding = true;
    for (size_t i = 0; i < streams.size(); ++i) {
      generated[i] += static_cast<int64_t>(DrainNow(*streams[i]).size());
      if (streams[i]->finished()) continue;
      all_decoding &= generated[i] > 0;
      const int64_t computed = static_cast<int64_t>(requests[i].prompt.size()) + generated[i] - 1;
      expected_blocks += (computed + options.kv_block_tokens - 1) / options.kv_block_tokens;
    }
    if (!all_decoding) continue;  // prompts still in prefill hold their whole prompt's blocks
    ASSERT_EQ(engine.Stats().kv.blocks_used, expected_blocks) << "step " << step;
    ++checked_steps;
  }
  EXPECT_GT(checked_steps, 20);
  const EngineStats s = engine.Stats();
  EXPECT_GT(s.speculation.accepted_tokens, 0);
  EXPECT_LT(s.speculation.accepted_tokens, s.speculation.draft_tokens);
  // One token of the target's own per verifying step.
  EXPECT_GT(s.speculation.emitted_tokens, s.speculation.accepted_tokens);
  // Each request's tally (its usage extras and /metrics) adds up to the engine's.
  SpecDecodeCounts per_request;
  for (auto& stream : streams) {
    const SpecDecodeCounts c = stream->trace().speculation();
    per_request.draft_tokens += c.draft_tokens;
    per_request.accepted_tokens += c.accepted_tokens;
    per_request.emitted_tokens += c.emitted_tokens;
  }
  EXPECT_EQ(per_request.draft_tokens, s.speculation.draft_tokens);
  EXPECT_EQ(per_request.accepted_tokens, s.speculation.accepted_tokens);
  EXPECT_EQ(per_request.emitted_tokens, s.speculation.emitted_tokens);
  ExpectPoolEmpty(engine);
}

TEST_F(SpeculativeEngineTest, GeneratorGreedyEqualsPlain) {
  ThreadPool pool(2);
  Generator generator(*model_, *tokenizer_, pool);
  int64_t accepted = 0;
  for (const RequestParams& p : Requests(80)) {
    GenerateOptions options;
    options.sampling.temperature = 0;
    options.max_new_tokens = p.max_new_tokens;
    GenerationResult plain = generator.GenerateFromTokens(p.prompt, options, nullptr, Clock::now());
    options.speculation = Ngram(4);
    GenerationResult spec = generator.GenerateFromTokens(p.prompt, options, nullptr, Clock::now());
    EXPECT_EQ(spec.output_tokens, plain.output_tokens);
    EXPECT_EQ(spec.text, plain.text);
    EXPECT_EQ(spec.kv.tokens_stored, plain.kv.tokens_stored);
    EXPECT_LE(spec.decode_passes, plain.decode_passes);
    EXPECT_EQ(spec.speculation.emitted_tokens - spec.speculation.verify_steps, spec.speculation.accepted_tokens);
    accepted += spec.speculation.accepted_tokens;
  }
  EXPECT_GT(accepted, 0);
}

// A random-weight model with the 32,000-token Llama 2 vocabulary, Q8_0
// weights: batched verification passes give the tokens of plain decoding.
TEST(SpeculativeEngineRandomModel, GreedyEqualsPlainOnQ8_0) {
  auto model = Model::Load(testing::RandomModelGguf(GgmlType::kQ8_0));
  Tokenizer tokenizer = Tokenizer::FromGguf(model->file());
  EngineOptions options;
  options.n_threads = 2;
  options.kv_type = GgmlType::kF32;
  options.kv_block_tokens = 8;
  options.kv_tokens = 2048;
  options.max_batch_tokens = 40;
  std::vector<RequestParams> requests;
  for (const char* text : {"Hello world hello world hello world", "The quick brown fox jumps over the lazy dog",
                           "a b c a b c a b c", "Lorem ipsum dolor sit amet, consectetur"}) {
    RequestParams p;
    p.prompt = tokenizer.Encode(text, true);
    p.max_new_tokens = 40;
    p.ignore_eos = true;
    requests.push_back(p);
  }
  RunOutcome plain = RunAll(*model, tokenizer, options, requests);
  options.speculation = Ngram(4);
  RunOutcome spec = RunAll(*model, tokenizer, options, requests);
  for (size_t i = 0; i < requests.size(); ++i) EXPECT_EQ(spec.outputs[i], plain.outputs[i]) << "request " << i;
  EXPECT_GT(spec.stats.speculation.draft_tokens, 0);
  // Alone too: batch 1.
  RunOutcome alone = RunAll(*model, tokenizer, options, {requests[2]});
  EXPECT_EQ(alone.outputs[0], plain.outputs[2]);
}

}  // namespace
}  // namespace ridge
