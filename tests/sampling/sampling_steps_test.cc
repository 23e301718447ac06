// Each sampling step alone, on hand-made distributions with hand-computed results.
#include "ridge/sampling/sampling_steps.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "ridge/base/error.h"

namespace ridge::sampling {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr float kInf = std::numeric_limits<float>::infinity();

std::vector<int32_t> Ids(const CandidateList& list) {
  std::vector<int32_t> ids;
  for (const Candidate& c : list.items) ids.push_back(c.id);
  return ids;
}

// Logits whose softmax is exactly `probs` (up to rounding).
std::vector<float> LogitsOf(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)) + 3.0f);
  return logits;
}

CandidateList ListOf(const std::vector<float>& logits) {
  CandidateList list;
  FillCandidates(logits, 1.0f, list);
  return list;
}

TEST(ApplyPenalties, ChangesEachSeenTokenOnceByHandComputedAmounts) {
  std::vector<float> logits = {2.0f, -2.0f, 1.0f, 0.5f, 3.0f};
  const std::vector<int32_t> window = {0, 1, 0, 3};
  ApplyPenalties(logits, window, /*repetition=*/2.0f, /*presence=*/0.5f, /*frequency=*/0.25f);
  // token 0 (seen twice): 2 / 2 = 1, then 1 - 0.5 - 2 x 0.25 = 0
  // token 1 (once):      -2 x 2 = -4, then -4 - 0.5 - 0.25 = -4.75
  // token 3 (once):      0.5 / 2 = 0.25, then 0.25 - 0.75 = -0.5
  EXPECT_THAT(logits, ElementsAre(0.0f, -4.75f, 1.0f, -0.5f, 3.0f));
}

TEST(ApplyPenalties, EachPenaltyAlone) {
  const std::vector<int32_t> window = {2, 2, 2, 0};
  std::vector<float> rep = {4.0f, 1.0f, -3.0f};
  ApplyPenalties(rep, window, 1.5f, 0.0f, 0.0f);
  EXPECT_THAT(rep, ElementsAre(4.0f / 1.5f, 1.0f, -4.5f));  // once per token, not per occurrence

  std::vector<float> presence = {4.0f, 1.0f, -3.0f};
  ApplyPenalties(presence, window, 1.0f, 1.0f, 0.0f);
  EXPECT_THAT(presence, ElementsAre(3.0f, 1.0f, -4.0f));

  std::vector<float> frequency = {4.0f, 1.0f, -3.0f};
  ApplyPenalties(frequency, window, 1.0f, 0.0f, 0.5f);
  EXPECT_THAT(frequency, ElementsAre(3.5f, 1.0f, -4.5f));

  std::vector<float> negative = {4.0f, 1.0f, -3.0f};  // negative penalties encourage repetition
  ApplyPenalties(negative, window, 1.0f, -1.0f, -0.5f);
  EXPECT_THAT(negative, ElementsAre(5.5f, 1.0f, -0.5f));  // -3 + 1 + 3 x 0.5
}

TEST(ApplyPenalties, ZeroLogitAndEmptyWindow) {
  std::vector<float> logits = {0.0f, 1.0f};
  ApplyPenalties(logits, std::vector<int32_t>{0}, 3.0f, 0.0f, 0.0f);
  EXPECT_THAT(logits, ElementsAre(0.0f, 1.0f));
  ApplyPenalties(logits, {}, 3.0f, 2.0f, 2.0f);
  EXPECT_THAT(logits, ElementsAre(0.0f, 1.0f));
}

TEST(ApplyPenalties, TokenOutsideVocabularyIsAnError) {
  std::vector<float> logits(4, 0.0f);
  try {
    ApplyPenalties(logits, std::vector<int32_t>{1, 4}, 1.1f, 0.0f, 0.0f);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("previous token 4"));
    EXPECT_THAT(e.what(), HasSubstr("[0, 4)"));
  }
  EXPECT_THROW(ApplyPenalties(logits, std::vector<int32_t>{-1}, 1.1f, 0.0f, 0.0f), Error);
}

TEST(ArgMax, TiesGoToTheLowestId) {
  EXPECT_EQ(ArgMax(std::vector<float>{1, 5, 2, 5, 5}), 1);
  EXPECT_EQ(ArgMax(std::vector<float>{-kInf, -3, -kInf}), 1);
  EXPECT_EQ(ArgMax(std::vector<float>{7}), 0);
}

TEST(CheckLogits, RejectsNaNInfAndAllMasked) {
  EXPECT_NO_THROW(CheckLogits(std::vector<float>{-kInf, 0.0f, -kInf}));
  EXPECT_THROW(CheckLogits(std::vector<float>{0.0f, std::nanf("")}), Error);
  EXPECT_THROW(CheckLogits(std::vector<float>{kInf, 0.0f}), Error);
  try {
    CheckLogits(std::vector<float>{-kInf, -kInf});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("-inf"));
  }
}

TEST(Logprobs, LogSoftmaxAndTopNMostLikelyFirst) {
  const std::vector<float> logits = LogitsOf({0.1, 0.2, 0.3, 0.4});
  const double lse = LogSumExp(logits);
  EXPECT_NEAR(lse, 3.0, 1e-6);  // the probabilities sum to 1
  const auto top = TopLogprobs(logits, lse, 2);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].token, 3);
  EXPECT_NEAR(top[0].logprob, std::log(0.4), 1e-6);
  EXPECT_EQ(top[1].token, 2);
  EXPECT_NEAR(top[1].logprob, std::log(0.3), 1e-6);
  EXPECT_EQ(TopLogprobs(logits, lse, 10).size(), 4u);  // never more than the vocabulary
  EXPECT_TRUE(TopLogprobs(logits, lse, 0).empty());
  // Ties: lower id first. A masked token has log-probability -inf.
  const std::vector<float> tied = {1.0f, 2.0f, 2.0f, -kInf};
  const auto tied_top = TopLogprobs(tied, LogSumExp(tied), 4);
  EXPECT_EQ(tied_top[0].token, 1);
  EXPECT_EQ(tied_top[1].token, 2);
  EXPECT_EQ(tied_top[3].token, 3);
  EXPECT_EQ(tied_top[3].logprob, -kInf);
}

TEST(FillCandidates, DividesByTemperatureAfterShiftingByTheMax) {
  CandidateList list;
  FillCandidates(std::vector<float>{1.0f, 3.0f, -kInf}, 0.5f, list);
  ASSERT_EQ(list.items.size(), 3u);
  EXPECT_EQ(list.items[0].logit, -4.0f);
  EXPECT_EQ(list.items[1].logit, 0.0f);
  EXPECT_EQ(list.items[2].logit, -kInf);
  // 300 / 1e-37 would overflow to inf (and inf - inf is NaN); shifted first, it cannot.
  FillCandidates(std::vector<float>{1.0f, 300.0f}, 1e-37f, list);
  EXPECT_EQ(list.items[1].logit, 0.0f);
  EXPECT_EQ(list.items[0].logit, -kInf);
}

TEST(KeepTopK, KeepsTheKMostLikelySortedTiesByLowerId) {
  CandidateList list = ListOf({0.5f, 3.0f, 1.0f, 3.0f, -1.0f, 2.0f, 0.0f, 2.5f, 1.5f, -2.0f});
  KeepTopK(list, 4);
  EXPECT_TRUE(list.sorted);
  EXPECT_THAT(Ids(list), ElementsAre(1, 3, 7, 5));
  CandidateList all = ListOf({1.0f, 2.0f, 3.0f});
  KeepTopK(all, 0);
  EXPECT_EQ(all.items.size(), 3u);
  KeepTopK(all, 3);
  EXPECT_EQ(all.items.size(), 3u);
  KeepTopK(all, 1);
  EXPECT_THAT(Ids(all), ElementsAre(2));
}

TEST(KeepTopP, KeepsTheSmallestSetWhoseMassReachesP) {
  // probabilities by id: 0.15, 0.5, 0.1, 0.25
  const std::vector<float> logits = LogitsOf({0.15, 0.5, 0.1, 0.25});
  struct Case {
    float top_p;
    std::vector<int32_t> kept;
  };
  for (const Case& c : std::vector<Case>{{0.3f, {1}},
                                         {0.6f, {1, 3}},
                                         {0.7f, {1, 3}},
                                         {0.8f, {1, 3, 0}},
                                         {0.95f, {1, 3, 0, 2}},
                                         {1.0f, {0, 1, 2, 3}}}) {
    CandidateList list = ListOf(logits);
    KeepTopP(list, c.top_p);
    EXPECT_EQ(Ids(list), c.kept) << "top_p " << c.top_p;
  }
}

TEST(KeepTopP, LargeVocabularyMatchesAFullSort) {
  // 100k tokens, flat-ish, so the nucleus needs several rounds of the growing partial sort.
  std::mt19937_64 rng(7);
  std::vector<float> logits(100000);
  for (float& l : logits) l = static_cast<float>(rng() % 1000) / 500.0f;
  for (float top_p : {0.01f, 0.5f, 0.9f, 0.999f}) {
    CandidateList list = ListOf(logits);
    KeepTopP(list, top_p);
    // Reference: sort everything, take the prefix.
    CandidateList ref = ListOf(logits);
    double total = 0.0;  // summed in id order, as KeepTopP does, for identical rounding
    for (const Candidate& c : ref.items) total += std::exp(c.logit);
    std::sort(ref.items.begin(), ref.items.end(), MoreLikely);
    double cumulative = 0.0;
    size_t n = 0;
    while (cumulative < top_p * total) cumulative += std::exp(ref.items[n++].logit);
    ref.items.resize(n);
    EXPECT_EQ(Ids(list), Ids(ref)) << "top_p " << top_p;
  }
}

TEST(KeepTopP, AfterTopKUsesTheSortedList) {
  CandidateList list = ListOf(LogitsOf({0.15, 0.5, 0.1, 0.25}));
  KeepTopK(list, 3);  // keeps 1, 3, 0 with mass 0.9 -> renormalised 0.556, 0.278, 0.167
  KeepTopP(list, 0.8f);
  EXPECT_THAT(Ids(list), ElementsAre(1, 3));
}

TEST(KeepMinP, DropsTokensBelowMinPTimesTheMax) {
  const std::vector<float> logits = LogitsOf({0.15, 0.5, 0.1, 0.25});
  CandidateList list = ListOf(logits);
  KeepMinP(list, 0.4f);  // threshold 0.2
  EXPECT_THAT(Ids(list), ElementsAre(1, 3));
  list = ListOf(logits);
  KeepMinP(list, 0.25f);  // threshold 0.125
  EXPECT_THAT(Ids(list), ElementsAre(0, 1, 3));
  list = ListOf(logits);
  KeepMinP(list, 0.0f);
  EXPECT_EQ(list.items.size(), 4u);
  list = ListOf(logits);
  KeepMinP(list, 1.0f);
  EXPECT_THAT(Ids(list), ElementsAre(1));
}

TEST(Draw, InvertsTheCumulativeDistribution) {
  // probabilities by id: 0.25, 0.5, 0.25 -> [0, .25) -> 0, [.25, .75) -> 1, [.75, 1) -> 2
  const CandidateList list = ListOf(LogitsOf({0.25, 0.5, 0.25}));
  EXPECT_EQ(Draw(list, 0.0), 0);
  EXPECT_EQ(Draw(list, 0.2), 0);
  EXPECT_EQ(Draw(list, 0.3), 1);
  EXPECT_EQ(Draw(list, 0.7), 1);
  EXPECT_EQ(Draw(list, 0.8), 2);
  EXPECT_EQ(Draw(list, std::nextafter(1.0, 0.0)), 2);
  // A masked token is never drawn, even at the ends.
  const CandidateList masked = ListOf({-kInf, 0.0f, -kInf});
  EXPECT_EQ(Draw(masked, 0.0), 1);
  EXPECT_EQ(Draw(masked, std::nextafter(1.0, 0.0)), 1);
}

}  // namespace
}  // namespace ridge::sampling
