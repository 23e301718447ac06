// Token masks on the real Llama 2 (SentencePiece, 32,000 tokens) and Llama 3
// (byte-level BPE, 128,256 tokens) vocabularies:
//   - the cached mask equals a brute-force check of every token, at every step
//     of random walks through several grammars;
//   - dead-end hunt: random walks over the allowed tokens of many grammars
//     always find a non-empty mask until they pick end-of-generation, and the
//     text they produced is then a whole sentence of the grammar.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "grammars.h"
#include "ridge/base/error.h"
#include "ridge/grammar/gbnf.h"
#include "ridge/grammar/matcher.h"
#include "ridge/grammar/token_masker.h"
#include "vocabularies.h"

namespace ridge::grammar {
namespace {

using testing::kLlamaBpe;
using testing::kLlamaSpm;
using testing::SharedVocabulary;

// Grammars the walks go through: the shared ones, and a few that stress
// nesting, ambiguity, UTF-8 classes and bounded repetition.
std::vector<std::string_view> WalkGrammars() {
  return {testing::kJsonGbnf,
          testing::kArithmeticGbnf,
          testing::kListGbnf,
          "root ::= \"yes\" | \"no\" | \"maybe\"",
          "root ::= [a-z]{2,5} (\" \" [a-z]{2,5}){0,3} \".\"",
          "root ::= \"(\" root \")\" | \"[\" root \"]\" | \"x\"",
          "root ::= [\\u00e0-\\u00ff\\u4e00-\\u4e0f]+ \"!\"",
          "root ::= \"a\"* \"a\"? \"ab\" | \"a\" \"a\" \"c\"",
          "root ::= name \"=\" value (\"; \" name \"=\" value)*\nname ::= [a-zA-Z_] [a-zA-Z0-9_]{0,10}\n"
          "value ::= [0-9]+ | \"\\\"\" [^\"\\n]* \"\\\"\"",
          "root ::= [^\\x00-\\x1F]{1,20} \"\\n\""};
}

// The allowed set by definition: every token tried on a copy of the matcher.
TokenBitmask BruteForceMask(const TokenMasker& masker, const GrammarMatcher& matcher, bool first_token) {
  TokenBitmask mask;
  mask.Reset(masker.vocabulary().n_vocab());
  for (int32_t t = 0; t < masker.vocabulary().n_vocab(); ++t) {
    GrammarMatcher copy = matcher;
    if (masker.AcceptToken(&copy, t, first_token)) mask.Set(t);
  }
  return mask;
}

// A token drawn from the mask: end-of-generation with probability end_bias
// when allowed, else uniformly among the others.
int32_t DrawAllowed(const TokenMasker& masker, const TokenBitmask& mask, double end_bias, std::mt19937_64& rng) {
  std::vector<int32_t> allowed;
  std::vector<int32_t> ends;
  for (int32_t t = 0; t < mask.n_vocab; ++t) {
    if (!mask.Test(t)) continue;
    (masker.vocabulary().IsEndOfGeneration(t) ? ends : allowed).push_back(t);
  }
  if (!ends.empty() && (allowed.empty() || std::uniform_real_distribution<double>(0, 1)(rng) < end_bias)) {
    return ends[rng() % ends.size()];
  }
  return allowed[rng() % allowed.size()];
}

void ExpectMasksMatchBruteForce(const char* vocab_file, int steps_per_grammar, bool first_token_rule) {
  auto vocab = SharedVocabulary(vocab_file);
  std::mt19937_64 rng(1234);
  for (std::string_view gbnf : WalkGrammars()) {
    auto grammar = ParseGbnf(gbnf);
    TokenMasker masker(grammar, vocab);
    GrammarMatcher matcher(grammar);
    TokenBitmask mask;
    for (int step = 0; step < steps_per_grammar; ++step) {
      const bool first = first_token_rule && step == 0;
      masker.FillMask(matcher, first, &mask);
      const TokenBitmask expected = BruteForceMask(masker, matcher, first);
      ASSERT_EQ(mask.words, expected.words) << gbnf << "\nstep " << step << ": " << mask.Count() << " allowed, "
                                            << expected.Count() << " by brute force";
      ASSERT_GT(mask.Count(), 0) << gbnf << " step " << step;
      const int32_t token = DrawAllowed(masker, mask, 0.2, rng);
      if (vocab->IsEndOfGeneration(token)) break;
      ASSERT_TRUE(masker.AcceptToken(&matcher, token, first));
    }
  }
}

TEST(TokenMaskerTest, MatchesBruteForceOnLlamaSentencePiece) { ExpectMasksMatchBruteForce(kLlamaSpm, 8, false); }

TEST(TokenMaskerTest, MatchesBruteForceOnLlamaSentencePieceFirstToken) {
  // At the start of a text the decoder drops the leading space of "▁{": the
  // mask must see "{".
  ExpectMasksMatchBruteForce(kLlamaSpm, 2, true);
}

TEST(TokenMaskerTest, MatchesBruteForceOnLlama3ByteLevelBpe) { ExpectMasksMatchBruteForce(kLlamaBpe, 3, false); }

void HuntDeadEnds(const char* vocab_file, int walks_per_grammar) {
  auto vocab = SharedVocabulary(vocab_file);
  std::mt19937_64 rng(99);
  for (std::string_view gbnf : WalkGrammars()) {
    auto grammar = ParseGbnf(gbnf);
    TokenMasker masker(grammar, vocab);  // shared by the walks: its cache is reused, as in the engine
    for (int walk = 0; walk < walks_per_grammar; ++walk) {
      GrammarMatcher matcher(grammar);
      std::string text;
      TokenBitmask mask;
      bool ended = false;
      for (int step = 0; step < 400 && !ended; ++step) {
        masker.FillMask(matcher, false, &mask);
        ASSERT_GT(mask.Count(), 0) << "dead end after " << text << " in\n" << gbnf;
        // Favour the end more as the walk grows, so that most walks finish.
        const int32_t token = DrawAllowed(masker, mask, step < 20 ? 0.1 : 0.7, rng);
        if (vocab->IsEndOfGeneration(token)) {
          ended = true;
          break;
        }
        ASSERT_TRUE(masker.AcceptToken(&matcher, token, false));
        text += vocab->TokenBytes(token);
      }
      if (ended) {
        EXPECT_TRUE(MatchesWhole(*grammar, text)) << text << "\n" << gbnf;
      }
    }
  }
}

TEST(TokenMaskerTest, NoDeadEndsOnLlamaSentencePiece) { HuntDeadEnds(kLlamaSpm, 8); }
TEST(TokenMaskerTest, NoDeadEndsOnLlama3ByteLevelBpe) { HuntDeadEnds(kLlamaBpe, 3); }

TEST(TokenMaskerTest, EndOfGenerationOnlyWhereTheGrammarMayEnd) {
  auto vocab = SharedVocabulary(kLlamaSpm);
  auto grammar = ParseGbnf("root ::= \"ab\"+");
  TokenMasker masker(grammar, vocab);
  GrammarMatcher matcher(grammar);
  TokenBitmask mask;
  const int32_t eos = testing::SharedTokenizer(kLlamaSpm).eos_id();
  const int32_t bos = testing::SharedTokenizer(kLlamaSpm).bos_id();
  masker.FillMask(matcher, false, &mask);
  EXPECT_FALSE(mask.Test(eos));
  EXPECT_FALSE(mask.Test(bos));
  EXPECT_FALSE(masker.AcceptToken(&matcher, eos, false));
  ASSERT_TRUE(matcher.AcceptBytes("ab"));
  masker.FillMask(matcher, false, &mask);
  EXPECT_TRUE(mask.Test(eos));
  EXPECT_FALSE(mask.Test(bos));  // control tokens other than end-of-generation never
  EXPECT_TRUE(masker.AcceptToken(&matcher, eos, false));
}

TEST(TokenMaskerTest, CacheIsReusedAcrossContexts) {
  // JSON strings as keys and as values, at several depths, share one cache
  // entry for their body: the walk over the vocabulary happens once.
  auto vocab = SharedVocabulary(kLlamaSpm);
  auto grammar = ParseGbnf(testing::kJsonGbnf);
  TokenMasker masker(grammar, vocab);
  GrammarMatcher matcher(grammar);
  TokenBitmask mask;
  ASSERT_TRUE(matcher.AcceptBytes("{\"ke"));
  masker.FillMask(matcher, false, &mask);
  const int64_t entries = masker.stats().cache_entries;
  ASSERT_TRUE(matcher.AcceptBytes("y\": {\"inner\": [\"va"));
  const int64_t walked = masker.stats().nodes_walked;
  masker.FillMask(matcher, false, &mask);
  EXPECT_EQ(masker.stats().cache_entries, entries);
  // Only the remainders (tokens that close the string) were walked.
  EXPECT_LT(masker.stats().nodes_walked - walked, 2000);
  EXPECT_GT(mask.Count(), 20000);  // nearly every token can continue a string
}

// Many overlapping alternatives keep many parses alive, each walked along
// every token it survives: past kMaxStepsPerMask the mask fails with an error
// naming the cause (the engine ends that request), where it took the engine
// thread seconds before. A long alternation of distinct literals, the shape of
// a JSON schema enum, stays within the budget.
TEST(TokenMaskerTest, TooAmbiguousGrammarFailsWithinItsBudget) {
  auto vocab = SharedVocabulary(kLlamaSpm);
  std::string ambiguous = "root ::= a0";
  for (int i = 1; i < 1000; ++i) ambiguous += " | a" + std::to_string(i);
  ambiguous += "\n";
  for (int i = 0; i < 1000; ++i) ambiguous += "a" + std::to_string(i) + " ::= [a-z ]* \"q\" [a-z ]*\n";
  auto grammar = ParseGbnf(ambiguous);
  TokenMasker masker(grammar, vocab);
  GrammarMatcher matcher(grammar);
  TokenBitmask mask;
  try {
    masker.FillMask(matcher, false, &mask);
    ADD_FAILURE() << "the mask of " << matcher.stacks().size() << " parses was filled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("too ambiguous to constrain generation"), std::string::npos) << e.what();
  }

  std::string enumeration = "root ::= \"\\\"v0\\\"\"";
  for (int i = 1; i < 2000; ++i) enumeration += " | \"\\\"v" + std::to_string(i) + "\\\"\"";
  auto listed = ParseGbnf(enumeration + "\n");
  TokenMasker list_masker(listed, vocab);
  GrammarMatcher list_matcher(listed);
  EXPECT_NO_THROW(list_masker.FillMask(list_matcher, false, &mask));
  EXPECT_GT(mask.Count(), 0);
  ASSERT_TRUE(list_matcher.AcceptBytes("\"v1"));
  EXPECT_NO_THROW(list_masker.FillMask(list_matcher, false, &mask));
  EXPECT_GT(mask.Count(), 0);
}

TEST(TokenMaskerTest, ApplyTokenMaskSetsMinusInfinityOutside) {
  TokenBitmask mask;
  mask.Reset(130);
  mask.Set(0);
  mask.Set(64);
  mask.Set(129);
  std::vector<float> logits(130, 1.5f);
  ApplyTokenMask(mask, logits);
  for (int t = 0; t < 130; ++t) {
    if (t == 0 || t == 64 || t == 129) {
      EXPECT_EQ(logits[t], 1.5f);
    } else {
      EXPECT_EQ(logits[t], -std::numeric_limits<float>::infinity()) << t;
    }
  }
}

}  // namespace
}  // namespace ridge::grammar
