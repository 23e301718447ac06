// The Sampler end to end: greedy, each filter over many seeded draws,
// frequencies against softmax, reproducibility, penalties, log-probabilities.
#include "ridge/sampling/sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <set>

#include "ridge/base/error.h"

namespace ridge::sampling {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// Logits whose softmax is `probs`.
std::vector<float> LogitsOf(const std::vector<double>& probs) {
  std::vector<float> logits;
  for (double p : probs) logits.push_back(static_cast<float>(std::log(p)) - 1.0f);
  return logits;
}

std::vector<double> Softmax(const std::vector<float>& logits, double temperature) {
  double max_logit = -1e300;
  for (float l : logits) max_logit = std::max<double>(max_logit, l);
  std::vector<double> p;
  double sum = 0.0;
  for (float l : logits) sum += p.emplace_back(std::exp((l - max_logit) / temperature));
  for (double& x : p) x /= sum;
  return p;
}

std::vector<int> Histogram(Sampler& sampler, const std::vector<float>& logits, int n_draws) {
  std::vector<int> counts(logits.size(), 0);
  for (int i = 0; i < n_draws; ++i) {
    std::vector<float> copy = logits;
    ++counts[static_cast<size_t>(sampler.Sample(copy, {}))];
  }
  return counts;
}

// Pearson's chi-square statistic of observed counts against expected probabilities
// (cells with probability 0 must have no counts; they add no degree of freedom).
double ChiSquare(const std::vector<int>& counts, const std::vector<double>& probs, int n_draws) {
  double chi2 = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (probs[i] == 0.0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " has probability 0";
      continue;
    }
    const double expected = probs[i] * n_draws;
    chi2 += (counts[i] - expected) * (counts[i] - expected) / expected;
  }
  return chi2;
}

SamplingParams Temperature(float t, uint64_t seed = 42) {
  SamplingParams p;
  p.temperature = t;
  p.seed = seed;
  return p;
}

TEST(Sampler, GreedyTakesTheArgmaxAndTiesGoToTheLowestId) {
  Sampler sampler(SamplingParams{}, 5);
  std::vector<float> logits = {0.1f, 2.0f, -1.0f, 2.0f, 1.9f};
  for (int i = 0; i < 3; ++i) EXPECT_EQ(sampler.Sample(logits, {}), 1);
}

TEST(Sampler, TopKTwoNeverReturnsTheThirdToken) {
  SamplingParams params = Temperature(1.0f);
  params.top_k = 2;
  Sampler sampler(params, 4);
  const std::vector<float> logits = LogitsOf({0.3, 0.25, 0.35, 0.1});  // top two: ids 2, 0
  const std::vector<int> counts = Histogram(sampler, logits, 10000);
  EXPECT_EQ(counts[1], 0);
  EXPECT_EQ(counts[3], 0);
  // Renormalised: 0.35 / 0.65 and 0.3 / 0.65. df = 1; 10.83 is the 0.1 % critical value.
  EXPECT_LT(ChiSquare(counts, {0.3 / 0.65, 0.0, 0.35 / 0.65, 0.0}, 10000), 10.83);
}

TEST(Sampler, TopPDrawsOnlyFromTheNucleus) {
  SamplingParams params = Temperature(1.0f);
  params.top_p = 0.7f;  // 0.5 + 0.25 >= 0.7
  Sampler sampler(params, 4);
  const std::vector<int> counts = Histogram(sampler, LogitsOf({0.15, 0.5, 0.1, 0.25}), 10000);
  EXPECT_EQ(counts[0], 0);
  EXPECT_EQ(counts[2], 0);
  EXPECT_LT(ChiSquare(counts, {0.0, 0.5 / 0.75, 0.0, 0.25 / 0.75}, 10000), 10.83);
}

TEST(Sampler, MinPDropsTokensBelowTheThreshold) {
  SamplingParams params = Temperature(1.0f);
  params.min_p = 0.25f;  // threshold 0.125: drops 0.1
  Sampler sampler(params, 4);
  const std::vector<int> counts = Histogram(sampler, LogitsOf({0.15, 0.5, 0.1, 0.25}), 10000);
  EXPECT_EQ(counts[2], 0);
  // df = 2; 13.82 is the 0.1 % critical value.
  EXPECT_LT(ChiSquare(counts, {0.15 / 0.9, 0.5 / 0.9, 0.0, 0.25 / 0.9}, 10000), 13.82);
}

TEST(Sampler, TemperatureFrequenciesMatchSoftmax) {
  const std::vector<float> logits = {1.0f, 2.0f, 0.5f, -1.0f, 1.5f, 0.0f};
  constexpr int kDraws = 100000;
  // df = 5; 20.52 is the 0.1 % critical value. The seeds are fixed, so this cannot flake.
  for (float t : {0.5f, 1.0f, 2.0f}) {
    Sampler sampler(Temperature(t, 1234), 6);
    const std::vector<int> counts = Histogram(sampler, logits, kDraws);
    EXPECT_LT(ChiSquare(counts, Softmax(logits, t), kDraws), 20.52) << "temperature " << t;
  }
  // And a wrong distribution is rejected by the same test: counts at T=0.5 are far from softmax at T=1.
  Sampler sharp(Temperature(0.5f, 1234), 6);
  EXPECT_GT(ChiSquare(Histogram(sharp, logits, kDraws), Softmax(logits, 1.0), kDraws), 1000.0);
}

TEST(Sampler, SameSeedSameSequenceDifferentSeedDifferentSequence) {
  const std::vector<float> logits = {0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f};
  auto run = [&](uint64_t seed) {
    SamplingParams params = Temperature(1.0f, seed);
    params.top_k = 6;
    params.top_p = 0.95f;
    Sampler sampler(params, 8);
    std::vector<int32_t> tokens;
    for (int i = 0; i < 200; ++i) {
      std::vector<float> copy = logits;
      tokens.push_back(sampler.Sample(copy, tokens));
    }
    return tokens;
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7), run(8));
}

TEST(Sampler, SeededSequenceIsFixedAcrossStandardLibraries) {
  // mt19937_64 is specified by the standard (its 10000th output is fixed) and the
  // conversion to [0, 1) is ours, so this golden sequence holds on any platform.
  Rng rng(5489);
  uint64_t x = 0;
  for (int i = 0; i < 10000; ++i) x = rng.Next();
  EXPECT_EQ(x, 9981545732273789042ull);

  Rng uniform(0);
  EXPECT_EQ(uniform.Uniform(), static_cast<double>(std::mt19937_64(0)() >> 11) * 0x1.0p-53);

  Sampler sampler(Temperature(1.0f, 2024), 4);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 12; ++i) {
    std::vector<float> logits = {0.0f, 0.0f, 0.0f, 0.0f};
    tokens.push_back(sampler.Sample(logits, {}));
  }
  // With equal logits, token = floor(4u) for each draw u of the RNG.
  Rng reference(2024);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(tokens[static_cast<size_t>(i)], static_cast<int32_t>(4 * reference.Uniform()));
}

TEST(Sampler, PenaltiesChangeTheLogitsInPlaceOverTheWindow) {
  SamplingParams params;
  params.repetition_penalty = 2.0f;
  params.presence_penalty = 0.5f;
  params.frequency_penalty = 0.25f;
  params.penalty_window = 3;
  Sampler sampler(params, 4);
  std::vector<float> logits = {4.0f, 3.0f, -1.0f, 1.0f};
  const std::vector<int32_t> previous = {0, 0, 0, 1, 2, 1};  // the window is {1, 2, 1}
  // token 1 (twice): 3 / 2 - 0.5 - 0.5 = 0.5; token 2 (once): -1 x 2 - 0.75 = -2.75
  EXPECT_EQ(sampler.Sample(logits, previous), 0);
  EXPECT_THAT(logits, ElementsAre(4.0f, 0.5f, -2.75f, 1.0f));

  params.penalty_window = 0;  // all previous tokens: token 0 seen 3 times
  Sampler all(params, 4);
  logits = {4.0f, 3.0f, -1.0f, 1.0f};
  // token 0: 4 / 2 - 0.5 - 0.75 = 0.75 -> token 3 (1.0) wins greedily
  EXPECT_EQ(all.Sample(logits, previous), 3);
  EXPECT_THAT(logits, ElementsAre(0.75f, 0.5f, -2.75f, 1.0f));
}

TEST(Sampler, RepetitionPenaltyStopsGreedyRepeats) {
  SamplingParams params;
  params.repetition_penalty = 1.5f;
  Sampler sampler(params, 3);
  std::vector<int32_t> tokens;
  for (int i = 0; i < 3; ++i) {
    std::vector<float> logits = {2.0f, 1.9f, 1.5f};
    tokens.push_back(sampler.Sample(logits, tokens));
  }
  // 2.0 -> 1.33 after token 0, so 1.9 wins; then 1.9 -> 1.27, so 1.5 wins.
  EXPECT_THAT(tokens, ElementsAre(0, 1, 2));
}

TEST(Sampler, LogprobsAreLogSoftmaxOfPenaltyAdjustedLogitsBeforeTemperature) {
  const std::vector<float> base = LogitsOf({0.1, 0.2, 0.3, 0.4});
  for (float temperature : {0.0f, 0.3f, 1.5f}) {
    SamplingParams params = Temperature(temperature);
    params.top_k = 1;  // the filter must not change the reported log-probabilities
    params.top_logprobs = 3;
    Sampler sampler(params, 4);
    std::vector<float> logits = base;
    const SampledToken t = sampler.SampleToken(logits, {});
    EXPECT_EQ(t.token, 3);
    EXPECT_NEAR(t.logprob, std::log(0.4), 1e-6);
    ASSERT_EQ(t.top_logprobs.size(), 3u);
    EXPECT_EQ(t.top_logprobs[0].token, 3);
    EXPECT_EQ(t.top_logprobs[1].token, 2);
    EXPECT_EQ(t.top_logprobs[2].token, 1);
    EXPECT_NEAR(t.top_logprobs[2].logprob, std::log(0.2), 1e-6);
  }
  // With a presence penalty of log(4) on token 3, its weight 0.4 becomes 0.1: probabilities 1/7, 2/7, 3/7, 1/7.
  SamplingParams params;
  params.logprobs = true;
  params.presence_penalty = static_cast<float>(std::log(4.0));
  Sampler sampler(params, 4);
  std::vector<float> logits = base;
  const SampledToken t = sampler.SampleToken(logits, std::vector<int32_t>{3});
  EXPECT_EQ(t.token, 2);
  EXPECT_NEAR(t.logprob, std::log(3.0 / 7.0), 1e-6);
  EXPECT_TRUE(t.top_logprobs.empty());
}

TEST(Sampler, NoLogprobsUnlessAsked) {
  Sampler sampler(Temperature(1.0f), 3);
  std::vector<float> logits = {1.0f, 2.0f, 3.0f};
  const SampledToken t = sampler.SampleToken(logits, {});
  EXPECT_TRUE(std::isnan(t.logprob));
  EXPECT_TRUE(t.top_logprobs.empty());
}

TEST(Sampler, LargeVocabularyWithEveryFilter) {
  constexpr int32_t kVocab = 128256;
  std::mt19937_64 rng(3);
  std::vector<float> logits(kVocab);
  for (float& l : logits) l = static_cast<float>(static_cast<double>(rng() >> 11) * 0x1.0p-53 * 20.0 - 10.0);
  // Reference: the 40 most likely ids.
  std::vector<int32_t> order(kVocab);
  for (int32_t i = 0; i < kVocab; ++i) order[static_cast<size_t>(i)] = i;
  std::partial_sort(order.begin(), order.begin() + 40, order.end(),
                    [&](int32_t a, int32_t b) { return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)]; });
  const std::set<int32_t> top40(order.begin(), order.begin() + 40);

  SamplingParams params = Temperature(0.8f, 99);
  params.top_k = 40;
  params.top_p = 0.9f;
  params.min_p = 0.05f;
  params.top_logprobs = 5;
  Sampler sampler(params, kVocab);
  for (int i = 0; i < 50; ++i) {
    std::vector<float> copy = logits;
    const SampledToken t = sampler.SampleToken(copy, {});
    EXPECT_TRUE(top40.count(t.token)) << t.token;
    ASSERT_EQ(t.top_logprobs.size(), 5u);
    EXPECT_EQ(t.top_logprobs[0].token, order[0]);
  }
  // top-p alone on a peaked distribution: one token holds almost all the mass.
  SamplingParams nucleus = Temperature(1.0f, 5);
  nucleus.top_p = 0.5f;
  Sampler peaked(nucleus, kVocab);
  std::vector<float> spike(kVocab, 0.0f);
  spike[77777] = 30.0f;
  EXPECT_EQ(peaked.Sample(spike, {}), 77777);
}

TEST(Sampler, BadInputIsAClearError) {
  Sampler sampler(Temperature(1.0f), 3);
  std::vector<float> short_logits = {1.0f, 2.0f};
  try {
    sampler.Sample(short_logits, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("got 2 logits for a vocabulary of 3"));
  }
  std::vector<float> nan_logits = {1.0f, std::nanf(""), 2.0f};
  EXPECT_THROW(sampler.Sample(nan_logits, {}), Error);
  std::vector<float> logits = {1.0f, 2.0f, 3.0f};
  SamplingParams penalised = Temperature(1.0f);
  penalised.frequency_penalty = 0.5f;
  Sampler with_penalty(penalised, 3);
  EXPECT_THROW(with_penalty.Sample(logits, std::vector<int32_t>{5}), Error);
  EXPECT_THROW(Sampler(SamplingParams{}, 0), Error);
}

void ExpectInvalid(void (*edit)(SamplingParams&), const char* field) {
  SamplingParams params;
  edit(params);
  try {
    Validate(params);
    FAIL() << "no error for " << field;
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(field));
  }
  EXPECT_THROW(Sampler(params, 10), Error) << field;
}

TEST(SamplingParams, OutOfRangeValuesNameTheField) {
  EXPECT_NO_THROW(Validate(SamplingParams{}));
  ExpectInvalid([](SamplingParams& p) { p.temperature = -0.1f; }, "temperature");
  ExpectInvalid([](SamplingParams& p) { p.temperature = std::numeric_limits<float>::infinity(); }, "temperature");
  ExpectInvalid([](SamplingParams& p) { p.temperature = std::nanf(""); }, "temperature");
  ExpectInvalid([](SamplingParams& p) { p.top_k = -1; }, "top_k");
  ExpectInvalid([](SamplingParams& p) { p.top_p = 0.0f; }, "top_p");
  ExpectInvalid([](SamplingParams& p) { p.top_p = 1.01f; }, "top_p");
  ExpectInvalid([](SamplingParams& p) { p.min_p = -0.01f; }, "min_p");
  ExpectInvalid([](SamplingParams& p) { p.min_p = 1.5f; }, "min_p");
  ExpectInvalid([](SamplingParams& p) { p.repetition_penalty = 0.0f; }, "repetition_penalty");
  ExpectInvalid([](SamplingParams& p) { p.presence_penalty = 2.5f; }, "presence_penalty");
  ExpectInvalid([](SamplingParams& p) { p.frequency_penalty = -2.5f; }, "frequency_penalty");
  ExpectInvalid([](SamplingParams& p) { p.penalty_window = -1; }, "penalty_window");
  ExpectInvalid([](SamplingParams& p) { p.top_logprobs = 21; }, "top_logprobs");
  ExpectInvalid([](SamplingParams& p) { p.top_logprobs = -1; }, "top_logprobs");
  SamplingParams edges;
  edges.top_p = 1.0f;
  edges.min_p = 1.0f;
  edges.presence_penalty = -2.0f;
  edges.frequency_penalty = 2.0f;
  edges.top_logprobs = kMaxTopLogprobs;
  edges.top_k = 1000000;  // more than the vocabulary: keeps everything
  EXPECT_NO_THROW(Validate(edges));
}

}  // namespace
}  // namespace ridge::sampling
