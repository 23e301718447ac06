// The continuous-batching engine: batched, chunked, preempted and
// prefix-cached generation gives every request exactly the tokens it gets
// alone, and every KV block comes back.
#include "ridge/engine/engine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <thread>

#include "ridge/base/cpu_features.h"
#include "ridge/engine/generator.h"
#include "drained_stream.h"
#include "random_model.h"
#include "stories_engine_fixture.h"

namespace ridge {
namespace {

class EngineTest : public StoriesEngineTest {
 protected:
  static std::vector<TokenId> Prompt(const std::string& text) { return tokenizer_->Encode(text, true); }

  // Greedy output of one prompt run alone through the single-request path.
  static std::vector<TokenId> Alone(const std::vector<TokenId>& prompt, int64_t max_new) {
    ThreadPool pool(1);
    Generator generator(*model_, *tokenizer_, pool);
    GenerateOptions options;
    options.sampling.temperature = 0;
    options.kv_type = GgmlType::kF32;
    options.max_new_tokens = max_new;
    return generator.GenerateFromTokens(prompt, options, nullptr, Clock::now()).output_tokens;
  }


  static const std::vector<std::string>& Texts() {
    static const std::vector<std::string> texts = {
        "Once upon a time", "The cat", "Tom and Lily went to the park and saw a big dog", "One day",
        "Lily had a red ball. She liked to play with it every day in the garden with her friend Sam", "The sun",
        "A little bird", "Ben and his mom went to the store to buy some food for dinner"};
    return texts;
  }
};

TEST_F(EngineTest, BatchedGreedyEqualsAloneWithChunkedPrefill) {
  EngineOptions options = F32Options();
  options.max_batch_tokens = 13;  // prompts are split into chunks and mixed with decodes
  Engine engine(*model_, *tokenizer_, options);
  std::vector<std::shared_ptr<RequestStream>> streams;
  std::vector<int64_t> max_new;
  for (size_t i = 0; i < Texts().size(); ++i) {
    RequestParams p;
    p.prompt = Prompt(Texts()[i]);
    p.max_new_tokens = 20 + 7 * static_cast<int64_t>(i);
    max_new.push_back(p.max_new_tokens);
    streams.push_back(engine.Submit(p));
  }
  engine.RunUntilIdle();
  for (size_t i = 0; i < streams.size(); ++i)
    EXPECT_EQ(testing::DrainStream(*streams[i]).tokens, Alone(Prompt(Texts()[i]), max_new[i])) << Texts()[i];
  EXPECT_GT(engine.Stats().steps, 0);
  ExpectPoolEmpty(engine);
}

TEST_F(EngineTest, CompletionPromptsParseSpecialTokenTexts) {
  const TokenId eos = tokenizer_->eos_id();
  ASSERT_GE(eos, 0);
  const std::string prompt = "The end." + tokenizer_->TokenPiece(eos) + "Once";
  ThreadPool pool(1);
  Generator generator(*model_, *tokenizer_, pool);
  GenerateOptions options;
  options.sampling.temperature = 0;
  options.max_new_tokens = 1;
  const GenerationResult r = generator.Generate(prompt, options, nullptr);
  EXPECT_EQ(r.prompt_tokens, tokenizer_->Encode(prompt, tokenizer_->add_bos(), /*parse_special=*/true));
  EXPECT_EQ(std::count(r.prompt_tokens.begin(), r.prompt_tokens.end(), eos), 1);
}

// Waiting prompts join a step only while its prefill holds fewer than
// join_below_tokens tokens: prompts longer than the limit go one a step, in
// order, each step ending with one more first token; shorter ones share a
// step until the limit. 0 fills the token budget. Outputs stay those alone.
TEST_F(EngineTest, WaitingPromptsJoinAStepOnlyBelowTheJoinLimit) {
  std::vector<RequestParams> requests;
  for (int i : {2, 4, 7, 0}) {
    RequestParams p;
    p.prompt = Prompt(Texts()[static_cast<size_t>(i)]);
    p.max_new_tokens = 12;
    requests.push_back(p);
  }
  const auto size = [&](size_t i) { return static_cast<int64_t>(requests[i].prompt.size()); };
  ASSERT_GT(size(0), 8);
  ASSERT_GT(size(1), 8);
  ASSERT_GT(size(2), 8);
  ASSERT_LE(size(0) + size(1) + size(2) + size(3), 512);
  for (const int64_t join_below : {int64_t{8}, size(0) + size(1) + 1, int64_t{0}}) {
    SCOPED_TRACE(join_below);
    EngineOptions options = F32Options();
    options.join_below_tokens = join_below;
    Engine engine(*model_, *tokenizer_, options);
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (const RequestParams& p : requests) streams.push_back(engine.Submit(p));
    ASSERT_TRUE(engine.Step());
    if (join_below == 8) {
      // One prompt a step, in order.
      EXPECT_EQ(engine.Stats().prefill_tokens, size(0));
      ASSERT_TRUE(engine.Step());
      EXPECT_EQ(engine.Stats().prefill_tokens, size(0) + size(1));
      EXPECT_EQ(engine.Stats().decode_tokens, 1);
    } else if (join_below == 0) {
      EXPECT_EQ(engine.Stats().prefill_tokens, size(0) + size(1) + size(2) + size(3));
    } else {
      // The first two stay below the limit, the third takes it past it.
      EXPECT_EQ(engine.Stats().prefill_tokens, size(0) + size(1) + size(2));
    }
    engine.RunUntilIdle();
    for (size_t i = 0; i < requests.size(); ++i)
      EXPECT_EQ(testing::DrainStream(*streams[i]).tokens, Alone(requests[i].prompt, 12)) << i;
    ExpectPoolEmpty(engine);
  }
}

TEST_F(EngineTest, RejectsANegativeJoinLimit) {
  EngineOptions options = F32Options();
  options.join_below_tokens = -1;
  EXPECT_THROW(Engine(*model_, *tokenizer_, options), Error);
}

// While a sequence decodes, a new prompt goes in chunks of at most
// max_prefill_tokens_while_decoding (no step makes the running stream wait
// for more), and both outputs stay those they get alone.
TEST_F(EngineTest, PrefillChunksAreCappedWhileSequencesDecode) {
  EngineOptions options = F32Options();
  options.max_prefill_tokens_while_decoding = 3;
  Engine engine(*model_, *tokenizer_, options);
  RequestParams first;
  first.prompt = Prompt("The cat");
  first.max_new_tokens = 40;
  auto first_stream = engine.Submit(first);
  engine.Step();  // nothing decodes yet: the whole prompt at once
  const auto first_prompt = static_cast<int64_t>(first.prompt.size());
  ASSERT_EQ(engine.Stats().prefill_tokens, first_prompt);
  RequestParams second;
  second.prompt = Prompt(Texts()[4]);
  second.max_new_tokens = 10;
  auto second_stream = engine.Submit(second);
  const auto second_prompt = static_cast<int64_t>(second.prompt.size());
  int64_t prefill_steps = 0;
  while (engine.Stats().prefill_tokens < first_prompt + second_prompt) {
    const int64_t before = engine.Stats().prefill_tokens;
    ASSERT_TRUE(engine.Step());
    const int64_t fed = engine.Stats().prefill_tokens - before;
    EXPECT_LE(fed, 3);
    prefill_steps += fed > 0 ? 1 : 0;
  }
  EXPECT_GE(prefill_steps, (second_prompt + 2) / 3);
  engine.RunUntilIdle();
  EXPECT_EQ(testing::DrainStream(*first_stream).tokens, Alone(first.prompt, 40));
  EXPECT_EQ(testing::DrainStream(*second_stream).tokens, Alone(second.prompt, 10));
  ExpectPoolEmpty(engine);
}

TEST_F(EngineTest, PreemptionRecomputesAndGivesIdenticalOutput) {
  EngineOptions options = F32Options();
  options.kv_tokens = 160;  // 20 blocks of 8: far less than 8 sequences of ~90 tokens need
  options.prefix_caching = false;
  Engine engine(*model_, *tokenizer_, options);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const std::string& text : Texts()) {
    RequestParams p;
    p.prompt = Prompt(text);
    p.max_new_tokens = 70;
    streams.push_back(engine.Submit(p));
  }
  engine.RunUntilIdle();
  EXPECT_GT(engine.Stats().preemptions, 0);
  for (size_t i = 0; i < streams.size(); ++i)
    EXPECT_EQ(testing::DrainStream(*streams[i]).tokens, Alone(Prompt(Texts()[i]), 70)) << Texts()[i];
  ExpectPoolEmpty(engine);
}

TEST_F(EngineTest, PrefixCachingReusesBlocksAndKeepsOutput) {
  EngineOptions options = F32Options();
  Engine engine(*model_, *tokenizer_, options);
  const std::string shared = "Lily had a red ball. She liked to play with it every day in the garden with her friend";
  std::vector<std::string> texts = {shared + " Sam", shared + " Tom and", shared + " the dog"};
  std::vector<std::vector<TokenId>> outputs;
  for (const std::string& text : texts) {  // one after another: later ones find the first one's blocks
    RequestParams p;
    p.prompt = Prompt(text);
    p.max_new_tokens = 30;
    auto stream = engine.Submit(p);
    engine.RunUntilIdle();
    EXPECT_EQ(testing::DrainStream(*stream).tokens, Alone(p.prompt, 30)) << text;
  }
  EngineStats s = engine.Stats();
  EXPECT_GE(s.kv.prefix_hit_blocks, 2 * 2);  // the shared prefix spans at least 2 full blocks of 8
  EXPECT_GT(s.kv.blocks_cached, 0);
  ExpectPoolEmpty(engine);
}

TEST_F(EngineTest, RejectsRequestsThatCanNeverRun) {
  EngineOptions options = F32Options();
  options.kv_tokens = 16;  // two blocks of 8
  Engine engine(*model_, *tokenizer_, options);
  RequestParams p;
  p.prompt = Prompt(Texts()[4]);  // longer than 16 tokens
  try {
    engine.Submit(p);
    FAIL() << "a prompt larger than the whole pool was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("can never run"), std::string::npos) << e.what();
  }
  p.prompt.clear();
  EXPECT_THROW(engine.Submit(p), Error);
  p.prompt = std::vector<TokenId>(600, 5);  // beyond the model's 512-token context
  EXPECT_THROW(engine.Submit(p), Error);
  p.prompt = {1, 9999};
  EXPECT_THROW(engine.Submit(p), Error);
}

TEST_F(EngineTest, QueueLimitRefusesWithQueueFullError) {
  EngineOptions options = F32Options();
  options.max_waiting = 2;
  Engine engine(*model_, *tokenizer_, options);
  RequestParams p;
  p.prompt = Prompt("The cat");
  engine.Submit(p);
  engine.Submit(p);
  EXPECT_THROW(engine.Submit(p), QueueFullError);
  engine.RunUntilIdle();
  EXPECT_NO_THROW(engine.Submit(p));
  engine.RunUntilIdle();
}

// Random traces: arrivals between steps, cancellations, a small pool (so
// preemptions happen), shared prefixes, sampling. Whatever happens, every
// block is back in the pool with reference count zero at the end.
TEST_F(EngineTest, RandomTracesReturnEveryBlock) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    std::mt19937_64 rng(seed);
    EngineOptions options = F32Options();
    options.kv_tokens = 8 * static_cast<int64_t>(12 + rng() % 20);
    options.max_batch_tokens = static_cast<int64_t>(8 + rng() % 40);
    options.prefix_caching = rng() % 4 != 0;
    if (seed % 2 == 0) {  // speculation: whatever its drafts' fate, every block comes back
      options.speculation.method = SpeculationOptions::Method::kNgram;
      options.speculation.num_tokens = static_cast<int64_t>(1 + rng() % 6);
      options.speculation.ngram_min = 1;
    }
    Engine engine(*model_, *tokenizer_, options);
    std::vector<std::shared_ptr<RequestStream>> streams;
    int submitted = 0;
    for (int step = 0; step < 400 && (submitted < 24 || engine.Step()); ++step) {
      if (submitted < 24 && rng() % 3 == 0) {
        RequestParams p;
        p.prompt = Prompt(Texts()[rng() % Texts().size()] + (rng() % 2 ? " and then" : ""));
        p.max_new_tokens = static_cast<int64_t>(1 + rng() % 60);
        p.sampling.temperature = rng() % 2 ? 0.0f : 0.9f;
        p.sampling.seed = rng();
        streams.push_back(engine.Submit(p));
        ++submitted;
      }
      if (!streams.empty() && rng() % 9 == 0) streams[rng() % streams.size()]->Cancel();
      engine.Step();
      ASSERT_EQ(engine.Stats().kv.blocks_used + engine.Stats().kv.blocks_free, engine.Stats().kv.blocks_total);
    }
    engine.RunUntilIdle();
    for (auto& s : streams) EXPECT_TRUE(s->finished());
    ExpectPoolEmpty(engine);
    EXPECT_EQ(engine.Stats().finished, submitted) << "seed " << seed;
    if (options.speculation.enabled()) {
      EXPECT_GT(engine.Stats().speculation.draft_tokens, 0) << "seed " << seed;
    }
  }
}

TEST_F(EngineTest, EngineThreadServesConcurrentSubmitters) {
  EngineOptions options = F32Options();
  Engine engine(*model_, *tokenizer_, options);
  engine.Start();
  std::vector<std::thread> clients;
  std::vector<std::vector<TokenId>> got(Texts().size());
  for (size_t i = 0; i < Texts().size(); ++i)
    clients.emplace_back([&, i] {
      RequestParams p;
      p.prompt = Prompt(Texts()[i]);
      p.max_new_tokens = 25;
      got[i] = testing::DrainStream(*engine.Submit(p)).tokens;
    });
  for (auto& c : clients) c.join();
  engine.Stop();
  for (size_t i = 0; i < Texts().size(); ++i) EXPECT_EQ(got[i], Alone(Prompt(Texts()[i]), 25)) << Texts()[i];
  ExpectPoolEmpty(engine);
}

TEST_F(EngineTest, CancelledRequestFreesItsBlocks) {
  EngineOptions options = F32Options();
  Engine engine(*model_, *tokenizer_, options);
  RequestParams p;
  p.prompt = Prompt(Texts()[2]);
  p.max_new_tokens = 200;
  auto stream = engine.Submit(p);
  for (int i = 0; i < 5; ++i) engine.Step();
  EXPECT_GT(engine.Stats().kv.blocks_used, 0);
  stream->Cancel();
  engine.Step();
  EXPECT_EQ(testing::DrainStream(*stream).kind, FinishKind::kAbort);
  ExpectPoolEmpty(engine);
}

// The same on a random-weight Q8_0 model with the Llama-2 vocabulary: int8
// activation quantization and prefill tiling must not make a token's result
// depend on what else is in its batch.
TEST(EngineRandomModel, BatchedGreedyEqualsAloneOnQ8_0) {
  auto model = Model::Load(testing::RandomModelGguf(GgmlType::kQ8_0));
  Tokenizer tokenizer = Tokenizer::FromGguf(model->file());
  EngineOptions options;
  options.n_threads = 2;
  options.kv_type = GgmlType::kF32;
  options.kv_tokens = 2048;
  options.max_batch_tokens = 40;
  const std::vector<std::string> texts = {"Hello world", "The quick brown fox jumps over the lazy dog",
                                          "In 1492, Columbus sailed", "a", "Lorem ipsum dolor sit amet, consectetur"};
  std::vector<std::vector<TokenId>> alone;
  for (const std::string& text : texts) {
    Engine single(*model, tokenizer, options);
    RequestParams p;
    p.prompt = tokenizer.Encode(text, true);
    p.max_new_tokens = 24;
    p.ignore_eos = true;
    auto stream = single.Submit(p);
    single.RunUntilIdle();
    std::vector<TokenId> out;
    StreamUpdate u;
    while (stream->Wait(u, std::chrono::milliseconds(0)))
      for (auto& t : u.tokens) out.push_back(t.token);
    ASSERT_EQ(out.size(), 24u);
    alone.push_back(out);
  }
  Engine batched(*model, tokenizer, options);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const std::string& text : texts) {
    RequestParams p;
    p.prompt = tokenizer.Encode(text, true);
    p.max_new_tokens = 24;
    p.ignore_eos = true;
    streams.push_back(batched.Submit(p));
  }
  batched.RunUntilIdle();
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<TokenId> out;
    StreamUpdate u;
    while (streams[i]->Wait(u, std::chrono::milliseconds(0)))
      for (auto& t : u.tokens) out.push_back(t.token);
    EXPECT_EQ(out, alone[i]) << texts[i];
  }
  EXPECT_EQ(batched.Stats().kv.blocks_used, 0);
}

}  // namespace
}  // namespace ridge
