// Prompt-lookup drafting: the longest suffix n-gram first, its most recent
// earlier occurrence, and the tokens after it.
#include "ridge/engine/prompt_lookup.h"

#include <gtest/gtest.h>

#include "ridge/base/error.h"

namespace ridge {
namespace {

TEST(PromptLookup, ProposesWhatFollowedTheLastNgram) {
  const std::vector<TokenId> tokens = {5, 6, 7, 8, 9, 1, 6, 7};
  EXPECT_EQ(ProposeByPromptLookup(tokens, 1, 3, 3), (std::vector<TokenId>{8, 9, 1}));
  EXPECT_EQ(ProposeByPromptLookup(tokens, 1, 3, 1), (std::vector<TokenId>{8}));
  // Fewer tokens follow the match than asked for: all of them.
  EXPECT_EQ(ProposeByPromptLookup(tokens, 1, 3, 10), (std::vector<TokenId>{8, 9, 1, 6, 7}));
}

TEST(PromptLookup, LongerNgramsWinOverMoreRecentShortOnes) {
  // "2 3" occurred at the start (then 4), "3" alone more recently (then 9).
  const std::vector<TokenId> tokens = {2, 3, 4, 0, 3, 9, 2, 3};
  EXPECT_EQ(ProposeByPromptLookup(tokens, 1, 2, 2), (std::vector<TokenId>{4, 0}));
  EXPECT_EQ(ProposeByPromptLookup(tokens, 1, 1, 2), (std::vector<TokenId>{9, 2}));
}

TEST(PromptLookup, TheMostRecentOccurrenceWins) {
  const std::vector<TokenId> tokens = {1, 2, 10, 1, 2, 20, 1, 2};
  EXPECT_EQ(ProposeByPromptLookup(tokens, 2, 2, 1), (std::vector<TokenId>{20}));
}

TEST(PromptLookup, NothingWithoutAnEarlierOccurrence) {
  EXPECT_TRUE(ProposeByPromptLookup(std::vector<TokenId>{1, 2, 3, 4}, 1, 3, 4).empty());
  EXPECT_TRUE(ProposeByPromptLookup(std::vector<TokenId>{7}, 1, 3, 4).empty());
  EXPECT_TRUE(ProposeByPromptLookup(std::vector<TokenId>{}, 1, 3, 4).empty());
  // Below ngram_min nothing is tried.
  EXPECT_TRUE(ProposeByPromptLookup(std::vector<TokenId>{5, 1, 2, 5}, 2, 3, 4).empty());
}

TEST(PromptLookup, DraftLimitFallsToWhatWasAcceptedAndGrowsByOne) {
  EXPECT_EQ(NextDraftLimit(4, 4, 0, 4), 1);  // nothing accepted: one token next time
  EXPECT_EQ(NextDraftLimit(4, 4, 2, 4), 3);
  EXPECT_EQ(NextDraftLimit(1, 1, 1, 4), 2);  // all accepted: one more
  EXPECT_EQ(NextDraftLimit(4, 4, 4, 4), 4);  // never past K
  EXPECT_EQ(NextDraftLimit(3, 2, 2, 5), 4);  // lookup found fewer, all right: still grows
}

TEST(PromptLookup, SettingsAreValidated) {
  SpeculationOptions o;
  o.method = SpeculationOptions::Method::kNgram;
  EXPECT_NO_THROW(Validate(o));
  o.num_tokens = 0;
  EXPECT_THROW(Validate(o), Error);
  o.num_tokens = 4;
  o.ngram_min = 5;
  EXPECT_THROW(Validate(o), Error);
  o.ngram_min = 2;
  o.max_decode_tokens = -1;
  EXPECT_THROW(Validate(o), Error);
  EXPECT_EQ(ParseSpeculationMethod("ngram"), SpeculationOptions::Method::kNgram);
  EXPECT_EQ(ParseSpeculationMethod("off"), SpeculationOptions::Method::kOff);
  EXPECT_THROW(ParseSpeculationMethod("eagle"), Error);
}

}  // namespace
}  // namespace ridge
