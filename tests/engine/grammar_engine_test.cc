// Constrained decoding in the engine: on stories260K and on random-weight
// models with the 32,000-token Llama 2 vocabulary and the byte-level BPE GPT-2
// vocabulary, at temperature 0 and 1, with several sequences batched (each
// with its own grammar), a KV pool small enough that sequences are preempted
// and recomputed, and prefix caching on: every request that ends by the model
// (stop) is a whole sentence of its grammar, every request cut by max_tokens
// is a prefix of one.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "constrained_test_models.h"
#include "ridge/engine/engine.h"
#include "ridge/engine/generator.h"
#include "ridge/grammar/gbnf.h"
#include "ridge/grammar/matcher.h"
#include "test_paths.h"

namespace ridge {
namespace {

// Grammars the requests take turns with: some end within a few tokens, some
// recurse, one is the JSON grammar.
const std::vector<std::string>& Grammars() {
  static const std::vector<std::string> grammars = {
      "root ::= \"yes\" | \"no\"",
      R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ( string ":" value ("," string ":" value)* )? "}"
array  ::= "[" ( value ("," value)* )? "]"
string ::= "\"" [a-z ]{0,8} "\""
number ::= "-"? [0-9]{1,4})",
      "root ::= [A-Z] [a-z]{1,6} (\" \" [a-z]{1,6}){0,4} \".\"",
      "root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\nterm ::= [0-9]+ | \"(\" expr \")\"",
      "root ::= (\"- \" [a-z]+ \"\\n\"){1,3}",
      "root ::= \"Once upon a time\" [^.]{0,30} \".\"",
      "root ::= [a-z ]{30,40} \".\"",  // long whatever the weights: keeps the pool under pressure
  };
  return grammars;
}

const std::vector<std::string>& Prompts() {
  static const std::vector<std::string> prompts = {"Once upon a time", "The cat", "Lily and Tom went to the park",
                                                   "One day", "A big red ball"};
  return prompts;
}

// The output text as the server shows it: chat answers (text_starts_fresh)
// are decoded as a fresh text, completions continue the prompt.
std::string OutputText(const Tokenizer& tokenizer, const std::vector<TokenId>& ids, bool text_starts_fresh) {
  if (text_starts_fresh) return tokenizer.Decode(ids);
  std::string text;
  for (TokenId id : ids) text += tokenizer.TokenBytes(id);
  return text;
}

void ExpectInGrammar(const grammar::Grammar& g, const std::string& text, FinishKind kind, const std::string& what) {
  if (kind == FinishKind::kStop) {
    EXPECT_TRUE(grammar::MatchesWhole(g, text)) << what << "\nstopped with text: " << text;
  } else {
    ASSERT_EQ(kind, FinishKind::kLength) << what;
    grammar::GrammarMatcher matcher(std::shared_ptr<const grammar::Grammar>(&g, [](const grammar::Grammar*) {}));
    EXPECT_TRUE(matcher.AcceptBytes(text)) << what << "\ncut with text that leaves the grammar: " << text;
  }
}

EngineOptions SmallPoolOptions() {
  EngineOptions o;
  o.n_threads = 2;
  o.kv_type = GgmlType::kF32;
  o.kv_block_tokens = 8;
  o.kv_tokens = 96;  // 12 blocks: far less than 10 sequences of up to ~50 tokens need
  o.max_batch_tokens = 48;
  return o;
}

struct Case {
  std::string model;
  float temperature;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " at temperature " << c.temperature; }

class GrammarEngineTest : public ::testing::TestWithParam<Case> {};

TEST_P(GrammarEngineTest, BatchedPreemptedOutputsStayInTheirGrammars) {
  const testing::LoadedModel& m = testing::ConstrainedTestModel(GetParam().model);
  Engine engine(*m.model, *m.tokenizer, SmallPoolOptions());
  struct Submitted {
    std::shared_ptr<RequestStream> stream;
    std::shared_ptr<const grammar::Grammar> grammar;
    bool fresh;
    std::string what;
  };
  std::vector<Submitted> submitted;
  for (int i = 0; i < 10; ++i) {
    RequestParams p;
    p.prompt = m.tokenizer->Encode(Prompts()[i % Prompts().size()], true);
    p.max_new_tokens = 40;
    p.sampling.temperature = GetParam().temperature;
    p.sampling.seed = static_cast<uint64_t>(i);
    p.grammar = grammar::ParseGbnf(Grammars()[i % Grammars().size()]);
    p.text_starts_fresh = i % 2 == 1;
    submitted.push_back({engine.Submit(p), p.grammar, p.text_starts_fresh,
                         "request " + std::to_string(i) + ", grammar:\n" + Grammars()[i % Grammars().size()]});
  }
  engine.RunUntilIdle();
  int n_stopped = 0;
  for (const Submitted& s : submitted) {
    const auto [ids, kind, error, request_fault] = testing::DrainStream(*s.stream);
    ASSERT_NE(kind, FinishKind::kError) << error << "\n" << s.what;
    ExpectInGrammar(*s.grammar, OutputText(*m.tokenizer, ids, s.fresh), kind, s.what);
    n_stopped += kind == FinishKind::kStop;
  }
  EXPECT_GE(n_stopped, 2);  // the yes/no requests at least end by the grammar
  EXPECT_GT(engine.Stats().preemptions, 0);
  const EngineStats stats = engine.Stats();
  EXPECT_EQ(stats.kv.blocks_used, 0);
  EXPECT_EQ(stats.running, 0);
}

INSTANTIATE_TEST_SUITE_P(Models, GrammarEngineTest,
                         ::testing::Values(Case{"stories260K", 0.0f}, Case{"stories260K", 1.0f},
                                           Case{"llama-spm", 0.0f}, Case{"llama-spm", 1.0f},
                                           Case{"gpt-2", 0.0f}, Case{"gpt-2", 1.0f}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = info.param.model + (info.param.temperature == 0 ? "_greedy" : "_temp1");
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

// Greedy constrained output does not depend on batching, preemption or
// prefix caching: each request gives the tokens it gets alone.
TEST(GrammarEngineAloneTest, BatchedGreedyEqualsAlone) {
  const testing::LoadedModel& m = testing::ConstrainedTestModel("stories260K");
  auto run = [&](const std::vector<int>& which, const EngineOptions& options) {
    Engine engine(*m.model, *m.tokenizer, options);
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (int i : which) {
      RequestParams p;
      p.prompt = m.tokenizer->Encode(Prompts()[i % Prompts().size()], true);
      p.max_new_tokens = 40;
      p.grammar = grammar::ParseGbnf(Grammars()[i % Grammars().size()]);
      streams.push_back(engine.Submit(p));
    }
    engine.RunUntilIdle();
    std::vector<std::vector<TokenId>> outputs;
    for (auto& s : streams) {
      outputs.push_back(testing::DrainStream(*s).tokens);
    }
    return std::make_pair(outputs, engine.Stats().preemptions);
  };
  EngineOptions roomy = SmallPoolOptions();
  roomy.kv_tokens = 4096;
  const std::vector<int> all = {0, 1, 2, 3, 4, 5, 6, 7};
  const auto [batched, preemptions] = run(all, SmallPoolOptions());
  EXPECT_GT(preemptions, 0);
  for (int i : all) EXPECT_EQ(batched[static_cast<size_t>(i)], run({i}, roomy).first[0]) << "request " << i;
}

TEST(GrammarEngineAloneTest, EndOfGrammarEndsTheRequestEvenWithIgnoreEos) {
  const testing::LoadedModel& m = testing::ConstrainedTestModel("llama-spm");
  Engine engine(*m.model, *m.tokenizer, SmallPoolOptions());
  RequestParams p;
  p.prompt = m.tokenizer->Encode("Answer:", true);
  p.max_new_tokens = 30;
  p.ignore_eos = true;
  p.grammar = grammar::ParseGbnf("root ::= \"yes\" | \"no\"");
  auto stream = engine.Submit(p);
  engine.RunUntilIdle();
  const auto [ids, kind, error, request_fault] = testing::DrainStream(*stream);
  EXPECT_EQ(kind, FinishKind::kStop);
  const std::string text = OutputText(*m.tokenizer, ids, false);
  EXPECT_TRUE(text == "yes" || text == "no") << text;
}

// A grammar too ambiguous to mask within TokenMasker::kMaxStepsPerMask ends
// its own request with that error; the request beside it runs to its end.
TEST(GrammarEngineAloneTest, TooAmbiguousGrammarEndsOnlyItsRequest) {
  const testing::LoadedModel& m = testing::ConstrainedTestModel("llama-spm");
  Engine engine(*m.model, *m.tokenizer, SmallPoolOptions());
  std::string ambiguous = "root ::= a0";
  for (int i = 1; i < 1000; ++i) ambiguous += " | a" + std::to_string(i);
  ambiguous += "\n";
  for (int i = 0; i < 1000; ++i) ambiguous += "a" + std::to_string(i) + " ::= [a-z ]* \"q\" [a-z ]*\n";
  RequestParams p;
  p.prompt = m.tokenizer->Encode("Answer:", true);
  p.max_new_tokens = 8;
  p.grammar = grammar::ParseGbnf(ambiguous);
  auto ambiguous_stream = engine.Submit(p);
  p.grammar = grammar::ParseGbnf("root ::= \"yes\" | \"no\"");
  auto plain_stream = engine.Submit(p);
  engine.RunUntilIdle();
  const auto [ambiguous_ids, ambiguous_kind, ambiguous_error, ambiguous_fault] =
      testing::DrainStream(*ambiguous_stream);
  EXPECT_EQ(ambiguous_kind, FinishKind::kError);
  EXPECT_TRUE(ambiguous_ids.empty());
  EXPECT_NE(ambiguous_error.find("too ambiguous to constrain generation"), std::string::npos) << ambiguous_error;
  EXPECT_TRUE(ambiguous_fault);  // the request's own doing, not the server's
  const auto [ids, kind, error, request_fault] = testing::DrainStream(*plain_stream);
  EXPECT_EQ(kind, FinishKind::kStop) << error;
  EXPECT_FALSE(request_fault);
  const std::string text = OutputText(*m.tokenizer, ids, false);
  EXPECT_TRUE(text == "yes" || text == "no") << text;
  EXPECT_EQ(engine.Stats().kv.blocks_used, 0);
}

// A grammar whose first parses are already past grammar::kMaxStacks is
// refused at Submit, as the request's mistake (GrammarRefusedError), and the
// engine goes on serving.
TEST(GrammarEngineAloneTest, GrammarPastItsBoundsFromTheStartIsRefusedAtSubmit) {
  const testing::LoadedModel& m = testing::ConstrainedTestModel("llama-spm");
  Engine engine(*m.model, *m.tokenizer, SmallPoolOptions());
  std::string wide = "root ::= \"w0\"";
  for (int i = 1; i < 100000; ++i) wide += " | \"w" + std::to_string(i) + "\"";
  RequestParams p;
  p.prompt = m.tokenizer->Encode("Answer:", true);
  p.max_new_tokens = 4;
  p.grammar = grammar::ParseGbnf(wide + "\n");
  try {
    engine.Submit(p);
    ADD_FAILURE() << "a grammar of 100000 first parses was admitted";
  } catch (const GrammarRefusedError& e) {
    EXPECT_NE(std::string(e.what()).find("too ambiguous to constrain generation"), std::string::npos) << e.what();
  }
  p.grammar = grammar::ParseGbnf("root ::= \"yes\" | \"no\"");
  auto stream = engine.Submit(p);
  engine.RunUntilIdle();
  EXPECT_EQ(testing::DrainStream(*stream).kind, FinishKind::kStop);
  EXPECT_EQ(engine.Stats().kv.blocks_used, 0);
}

TEST(GrammarEngineAloneTest, ChatAnswerSeesTheFirstTokenWithoutItsSpace) {
  // SentencePiece: "▁{" decodes to "{" at the start of a chat answer, so the
  // grammar allows it there; as a completion it would be " {" and is refused.
  const testing::LoadedModel& m = testing::ConstrainedTestModel("llama-spm");
  const int32_t spaced_brace = m.tokenizer->FindToken("\xE2\x96\x81{");  // "▁{"
  ASSERT_GE(spaced_brace, 0);
  for (bool fresh : {true, false}) {
    Engine engine(*m.model, *m.tokenizer, SmallPoolOptions());
    RequestParams p;
    p.prompt = m.tokenizer->Encode("JSON:", true);
    p.max_new_tokens = 8;
    p.text_starts_fresh = fresh;
    p.sampling.temperature = 1.0f;
    p.grammar = grammar::ParseGbnf("root ::= \"{\" [a-z]* \"}\"");
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (uint64_t seed = 0; seed < 24; ++seed) {
      p.sampling.seed = seed;
      streams.push_back(engine.Submit(p));
    }
    engine.RunUntilIdle();
    bool saw_spaced_brace = false;
    for (auto& stream : streams) {
      const auto [ids, kind, error, request_fault] = testing::DrainStream(*stream);
      ASSERT_NE(kind, FinishKind::kError) << error;
      ASSERT_FALSE(ids.empty());
      saw_spaced_brace = saw_spaced_brace || ids[0] == spaced_brace;
      ExpectInGrammar(*p.grammar, OutputText(*m.tokenizer, ids, fresh), kind, fresh ? "chat" : "completion");
    }
    // Never as a completion; as a chat answer it is one of the few allowed first tokens.
    if (!fresh) {
      EXPECT_FALSE(saw_spaced_brace);
    }
  }
}

TEST(GrammarEngineAloneTest, GeneratorFollowsTheGrammar) {
  // `ridge run`'s single-request path.
  const testing::LoadedModel& m = testing::ConstrainedTestModel("stories260K");
  ThreadPool pool(1);
  Generator generator(*m.model, *m.tokenizer, pool);
  for (float temperature : {0.0f, 1.0f}) {
    for (const std::string& gbnf : Grammars()) {
      GenerateOptions options;
      options.sampling.temperature = temperature;
      options.sampling.seed = 5;
      options.kv_type = GgmlType::kF32;
      options.max_new_tokens = 40;
      options.grammar = grammar::ParseGbnf(gbnf);
      const GenerationResult result = generator.Generate("Once upon a time", options, nullptr);
      const FinishKind kind =
          result.finish_reason == FinishReason::kEndOfGeneration ? FinishKind::kStop : FinishKind::kLength;
      ExpectInGrammar(*options.grammar, result.text, kind, gbnf);
    }
  }
}

}  // namespace
}  // namespace ridge
