// Speculative sampling (Sampler::VerifyDraft) keeps the target distribution:
// over many seeded draws on a synthetic 6-token vocabulary, the first emitted
// token follows the target's row-0 distribution and, after an accepted draft
// token, the next one follows row 1, by a chi-square test at p = 0.001. The
// same test rejects the classic mistake (resampling from p itself after a
// rejection), so it has the power to see a wrong implementation. A draft
// model's drafts, drawn from a real distribution q, are tested the same way.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/sampling/rng.h"
#include "ridge/sampling/sampler.h"
#include "ridge/sampling/sampling_steps.h"

namespace ridge::sampling {
namespace {

constexpr int kVocab = 6;
constexpr int kDraws = 200000;
// Chi-square critical values at p = 0.001 by degrees of freedom.
constexpr double kCritical[] = {0, 10.828, 13.816, 16.266, 18.467, 20.515};

const std::vector<float> kRow0 = {1.0f, 2.2f, 0.3f, -1.0f, 1.7f, 0.9f};
const std::vector<float> kRow1 = {0.1f, -0.5f, 1.9f, 1.2f, 0.4f, 2.0f};

// softmax(logits / temperature) over the top_k most likely (0: all).
std::vector<double> Target(const std::vector<float>& logits, double temperature, int top_k) {
  std::vector<double> p(logits.size(), 0.0);
  double sum = 0.0;
  for (size_t i = 0; i < logits.size(); ++i) {
    int rank = 0;
    for (float other : logits) rank += other > logits[i];
    if (top_k > 0 && rank >= top_k) continue;
    sum += p[i] = std::exp(logits[i] / temperature);
  }
  for (double& x : p) x /= sum;
  return p;
}

// Chi-square statistic of `counts` against probabilities `p`; a count where
// p is 0 makes it infinite. `df` receives the degrees of freedom.
double ChiSquare(const std::vector<int>& counts, const std::vector<double>& p, int* df) {
  int64_t n = 0;
  for (int c : counts) n += c;
  double stat = 0.0;
  *df = -1;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (p[i] == 0.0) {
      if (counts[i] > 0) return INFINITY;
      continue;
    }
    const double expected = p[i] * static_cast<double>(n);
    stat += (counts[i] - expected) * (counts[i] - expected) / expected;
    ++*df;
  }
  return stat;
}

void ExpectDistributed(const std::vector<int>& counts, const std::vector<double>& p, const char* what) {
  int df = 0;
  const double stat = ChiSquare(counts, p, &df);
  ASSERT_GE(df, 1);
  EXPECT_LT(stat, kCritical[df]) << what << ": chi-square " << stat << " with " << df << " degrees of freedom";
}

struct Case {
  float temperature;
  int top_k;
  std::vector<int32_t> draft;  // the point-mass draft: a likely token, then any
};

class SpeculativeSampling : public ::testing::TestWithParam<Case> {};

TEST_P(SpeculativeSampling, EmittedTokensFollowTheTargetDistribution) {
  const Case c = GetParam();
  SamplingParams params;
  params.temperature = c.temperature;
  params.top_k = c.top_k;
  params.seed = 2026;
  Sampler sampler(params, kVocab);
  std::vector<int> first(kVocab, 0), second(kVocab, 0);
  int64_t accepted = 0;
  for (int i = 0; i < kDraws; ++i) {
    std::vector<float> rows = kRow0;
    rows.insert(rows.end(), kRow1.begin(), kRow1.end());
    rows.insert(rows.end(), kRow0.begin(), kRow0.end());  // row 2, after two accepted tokens
    const std::vector<SampledToken> out = sampler.VerifyDraft(rows, c.draft, {});
    ASSERT_GE(out.size(), 1u);
    ASSERT_LE(out.size(), c.draft.size() + 1);
    for (size_t j = 0; j + 1 < out.size(); ++j) ASSERT_EQ(out[j].token, c.draft[j]);  // a prefix of the draft
    ++first[static_cast<size_t>(out[0].token)];
    if (out[0].token == c.draft[0]) {
      ASSERT_GE(out.size(), 2u);  // after an accepted token, always one more
      ++second[static_cast<size_t>(out[1].token)];
      ++accepted;
    }
  }
  const std::vector<double> p0 = Target(kRow0, c.temperature, c.top_k);
  const std::vector<double> p1 = Target(kRow1, c.temperature, c.top_k);
  ExpectDistributed(first, p0, "first token");
  if (p0[static_cast<size_t>(c.draft[0])] > 0) ExpectDistributed(second, p1, "token after the accepted draft token");
  // The acceptance rate is p(d) itself.
  EXPECT_NEAR(static_cast<double>(accepted) / kDraws, p0[static_cast<size_t>(c.draft[0])], 0.005);
}

INSTANTIATE_TEST_SUITE_P(Settings, SpeculativeSampling,
                         ::testing::Values(Case{1.0f, 0, {1, 3}}, Case{0.7f, 0, {4, 2}}, Case{1.3f, 3, {1, 5}},
                                           // a draft token the filter dropped: never accepted
                                           Case{1.0f, 3, {3, 0}}));

// A draft model's draft: each draft token drawn from a real distribution q
// (DraftToken over the draft's own logits, by the same sampler as the engine
// does), verified with min(1, p/q) and the residual max(0, p - q). The
// emitted tokens follow p; the first is accepted with probability
// sum(min(p, q)).
const std::vector<float> kDraftRow0 = {1.5f, 1.0f, 0.0f, 0.5f, 2.5f, -0.5f};
const std::vector<float> kDraftRow1 = {0.0f, 0.3f, 1.0f, 2.4f, -1.0f, 1.1f};

class DraftModelSampling : public ::testing::TestWithParam<Case> {};

TEST_P(DraftModelSampling, EmittedTokensFollowTheTargetDistribution) {
  const Case c = GetParam();
  SamplingParams params;
  params.temperature = c.temperature;
  params.top_k = c.top_k;
  params.seed = 2027;
  Sampler sampler(params, kVocab);
  std::vector<int> first(kVocab, 0), second(kVocab, 0), drafted(kVocab, 0);
  int64_t accepted = 0;
  std::vector<float> q(2 * kVocab);
  for (int i = 0; i < kDraws; ++i) {
    const std::vector<int32_t> draft = {sampler.DraftToken(kDraftRow0, std::span<float>(q).first(kVocab)),
                                        sampler.DraftToken(kDraftRow1, std::span<float>(q).last(kVocab))};
    ++drafted[static_cast<size_t>(draft[0])];
    std::vector<float> rows = kRow0;
    rows.insert(rows.end(), kRow1.begin(), kRow1.end());
    rows.insert(rows.end(), kRow0.begin(), kRow0.end());
    const std::vector<SampledToken> out = sampler.VerifyDraft(rows, draft, {}, q);
    ASSERT_GE(out.size(), 1u);
    for (size_t j = 0; j + 1 < out.size(); ++j) ASSERT_EQ(out[j].token, draft[j]);
    ++first[static_cast<size_t>(out[0].token)];
    if (out.size() >= 2) {
      ++second[static_cast<size_t>(out[1].token)];
      ++accepted;
    }
  }
  const std::vector<double> p0 = Target(kRow0, c.temperature, c.top_k);
  const std::vector<double> q0 = Target(kDraftRow0, c.temperature, c.top_k);
  ExpectDistributed(drafted, q0, "draft token (q)");
  ExpectDistributed(first, p0, "first token");
  ExpectDistributed(second, Target(kRow1, c.temperature, c.top_k), "token after the accepted draft token");
  double overlap = 0;
  for (int t = 0; t < kVocab; ++t) overlap += std::min(p0[static_cast<size_t>(t)], q0[static_cast<size_t>(t)]);
  EXPECT_NEAR(static_cast<double>(accepted) / kDraws, overlap, 0.005);
}

INSTANTIATE_TEST_SUITE_P(Settings, DraftModelSampling,
                         ::testing::Values(Case{1.0f, 0, {}}, Case{0.7f, 0, {}}, Case{1.3f, 3, {}}));

// Greedy drafting is the draft's argmax, q untouched: a point mass.
TEST(DraftModelSampling, GreedyDraftsTheArgmax) {
  Sampler sampler(SamplingParams{}, kVocab);
  std::vector<float> q(kVocab, -1.0f);
  EXPECT_EQ(sampler.DraftToken(kDraftRow0, q), 4);
  EXPECT_EQ(q, std::vector<float>(kVocab, -1.0f));
  EXPECT_THROW(sampler.DraftToken(kDraftRow0, std::span<float>(q).first(2)), Error);
}

// The residual draw alone: p - q keeps only where p exceeds q.
TEST(DraftModelSampling, ResidualDrawsOnlyWherePExceedsQ) {
  CandidateList candidates;
  FillCandidates(kRow0, 1.0f, candidates);
  std::vector<float> p(kVocab);
  CandidateProbabilities(candidates, p);
  std::vector<float> q = p;
  q[1] += 0.2f;  // take mass from token 1's rivals: 0 and 4 lose 0.1 each
  q[0] -= 0.1f;
  q[4] -= 0.1f;
  std::vector<int> counts(kVocab, 0);
  Rng rng(3);
  for (int i = 0; i < 20000; ++i) ++counts[static_cast<size_t>(DrawFromResidual(candidates, q, rng.Uniform()))];
  EXPECT_EQ(counts[1] + counts[2] + counts[3] + counts[5], 0);
  EXPECT_NEAR(static_cast<double>(counts[0]) / 20000, 0.5, 0.02);  // equal residuals of 0.1
}

// The mistake a chi-square test must catch: after rejecting the draft token,
// drawing from p itself (instead of p without it) over-weights that token.
TEST(SpeculativeSampling, TheTestRejectsResamplingFromTheUnchangedTarget) {
  Rng rng(7);
  CandidateList candidates;
  std::vector<int> first(kVocab, 0);
  const int32_t draft = 1;
  for (int i = 0; i < kDraws; ++i) {
    FillCandidates(kRow0, 1.0f, candidates);
    int32_t token = draft;
    if (rng.Uniform() >= CandidateProbability(candidates, draft)) token = Draw(candidates, rng.Uniform());
    ++first[static_cast<size_t>(token)];
  }
  int df = 0;
  EXPECT_GT(ChiSquare(first, Target(kRow0, 1.0, 0), &df), kCritical[df]);
}

TEST(SpeculativeSampling, GreedyAcceptsTheArgmaxPrefixThenItsOwnToken) {
  Sampler sampler(SamplingParams{}, kVocab);
  std::vector<float> rows = kRow0;  // argmax 1
  rows.insert(rows.end(), kRow1.begin(), kRow1.end());  // argmax 5
  rows.insert(rows.end(), kRow0.begin(), kRow0.end());
  std::vector<SampledToken> out = sampler.VerifyDraft(rows, std::vector<int32_t>{1, 2}, {});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].token, 1);
  EXPECT_EQ(out[1].token, 5);  // the correction
  rows = kRow0;
  rows.insert(rows.end(), kRow1.begin(), kRow1.end());
  rows.insert(rows.end(), kRow0.begin(), kRow0.end());
  out = sampler.VerifyDraft(rows, std::vector<int32_t>{1, 5}, {});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2].token, 1);  // the bonus token from the last row
  EXPECT_THROW(sampler.VerifyDraft(std::span<float>(rows).first(kVocab), std::vector<int32_t>{1}, {}), Error);
}

}  // namespace
}  // namespace ridge::sampling
