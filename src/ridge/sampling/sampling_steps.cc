#include "ridge/sampling/sampling_steps.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "ridge/base/error.h"

namespace ridge::sampling {

void ApplyPenalties(std::span<float> logits, std::span<const int32_t> window, float repetition_penalty,
                    float presence_penalty, float frequency_penalty) {
  if (window.empty()) return;
  const auto n_vocab = static_cast<int64_t>(logits.size());
  std::vector<int32_t> tokens(window.begin(), window.end());
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= n_vocab)
      Fail("sampling: previous token {} (position {} of the penalty window) is outside the vocabulary [0, {})",
           tokens[i], i, n_vocab);
  }
  std::sort(tokens.begin(), tokens.end());
  for (size_t begin = 0; begin < tokens.size();) {
    size_t end = begin;
    while (end < tokens.size() && tokens[end] == tokens[begin]) ++end;
    const auto count = static_cast<float>(end - begin);
    float& logit = logits[static_cast<size_t>(tokens[begin])];
    if (repetition_penalty != 1.0f) logit = logit > 0.0f ? logit / repetition_penalty : logit * repetition_penalty;
    logit -= presence_penalty + count * frequency_penalty;
    begin = end;
  }
}

int32_t ArgMax(std::span<const float> logits) {
  size_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[best]) best = i;
  return static_cast<int32_t>(best);
}

void CheckLogits(std::span<const float> logits) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  bool any_finite = false;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float l = logits[i];
    if (std::isnan(l) || l == kInf) Fail("sampling: logit of token {} is {}; the model produced a non-finite value", i, l);
    any_finite |= l != -kInf;
  }
  if (!any_finite) Fail("sampling: every one of the {} logits is -inf; there is no token to sample", logits.size());
}

double LogSumExp(std::span<const float> logits) {
  float max_logit = -std::numeric_limits<float>::infinity();
  for (float l : logits) max_logit = std::max(max_logit, l);
  if (max_logit == -std::numeric_limits<float>::infinity()) return max_logit;
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l) - max_logit);
  return max_logit + std::log(sum);
}

std::vector<TokenLogprob> TopLogprobs(std::span<const float> logits, double log_sum_exp, int32_t n) {
  const size_t n_keep = std::min(static_cast<size_t>(std::max(n, 0)), logits.size());
  if (n_keep == 0) return {};
  std::vector<Candidate> all(logits.size());
  for (size_t i = 0; i < logits.size(); ++i) all[i] = {static_cast<int32_t>(i), logits[i]};
  std::partial_sort(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(n_keep), all.end(), MoreLikely);
  std::vector<TokenLogprob> top(n_keep);
  for (size_t i = 0; i < n_keep; ++i)
    top[i] = {all[i].id, static_cast<float>(static_cast<double>(all[i].logit) - log_sum_exp)};
  return top;
}

void FillCandidates(std::span<const float> logits, float temperature, CandidateList& list) {
  list.items.resize(logits.size());
  float max_logit = -std::numeric_limits<float>::infinity();
  for (float l : logits) max_logit = std::max(max_logit, l);
  for (size_t i = 0; i < logits.size(); ++i)
    list.items[i] = {static_cast<int32_t>(i), (logits[i] - max_logit) / temperature};
  list.sorted = false;
}

void KeepTopK(CandidateList& list, int32_t k) {
  auto& items = list.items;
  if (k <= 0 || static_cast<size_t>(k) >= items.size()) return;
  const auto kth = items.begin() + k;
  if (!list.sorted) {
    std::nth_element(items.begin(), kth - 1, items.end(), MoreLikely);
    std::sort(items.begin(), kth, MoreLikely);
  }
  items.erase(kth, items.end());
  list.sorted = true;
}

namespace {

float MaxLogit(const std::vector<Candidate>& items) {
  float max_logit = -std::numeric_limits<float>::infinity();
  for (const Candidate& c : items) max_logit = std::max(max_logit, c.logit);
  return max_logit;
}

}  // namespace

void KeepTopP(CandidateList& list, float top_p) {
  auto& items = list.items;
  if (top_p >= 1.0f || items.empty()) return;
  const double max_logit = MaxLogit(items);
  double total = 0.0;
  for (const Candidate& c : items) total += std::exp(c.logit - max_logit);
  const double target = static_cast<double>(top_p) * total;
  // Sort a growing prefix until it holds the mass: the first `n_sorted` items
  // are the most likely, in order, and every later one is less likely.
  size_t n_sorted = list.sorted ? items.size() : 0;
  double cumulative = 0.0;
  size_t i = 0;
  for (size_t want = std::min<size_t>(64, items.size());; want = std::min(items.size(), want * 4)) {
    if (want > n_sorted) {
      std::partial_sort(items.begin() + static_cast<std::ptrdiff_t>(n_sorted),
                        items.begin() + static_cast<std::ptrdiff_t>(want), items.end(), MoreLikely);
      n_sorted = want;
    }
    for (; i < n_sorted; ++i) {
      cumulative += std::exp(items[i].logit - max_logit);
      if (cumulative >= target) {
        items.erase(items.begin() + static_cast<std::ptrdiff_t>(i + 1), items.end());
        list.sorted = true;
        return;
      }
    }
    if (n_sorted == items.size()) break;  // rounding left the mass just short: keep everything
  }
  list.sorted = true;
}

void KeepMinP(CandidateList& list, float min_p) {
  auto& items = list.items;
  if (min_p <= 0.0f || items.empty()) return;
  const double threshold = static_cast<double>(MaxLogit(items)) + std::log(static_cast<double>(min_p));
  std::erase_if(items, [threshold](const Candidate& c) { return static_cast<double>(c.logit) < threshold; });
}

double CandidateProbability(const CandidateList& list, int32_t id) {
  const double max_logit = MaxLogit(list.items);
  RIDGE_CHECK(std::isfinite(max_logit));
  double total = 0.0, weight = 0.0;
  for (const Candidate& c : list.items) {
    const double w = std::exp(c.logit - max_logit);
    total += w;
    if (c.id == id) weight = w;
  }
  return weight / total;
}

void RemoveCandidate(CandidateList& list, int32_t id) {
  std::erase_if(list.items, [id](const Candidate& c) { return c.id == id; });
}

void CandidateProbabilities(const CandidateList& list, std::span<float> probs) {
  const double max_logit = MaxLogit(list.items);
  RIDGE_CHECK(std::isfinite(max_logit));
  double total = 0.0;
  for (const Candidate& c : list.items) total += std::exp(c.logit - max_logit);
  std::fill(probs.begin(), probs.end(), 0.0f);
  for (const Candidate& c : list.items)
    probs[static_cast<size_t>(c.id)] = static_cast<float>(std::exp(c.logit - max_logit) / total);
}

int32_t DrawFromResidual(const CandidateList& list, std::span<const float> q, double u) {
  const auto& items = list.items;
  RIDGE_CHECK(!items.empty());
  const double max_logit = MaxLogit(items);
  RIDGE_CHECK(std::isfinite(max_logit));
  double total_p = 0.0;
  for (const Candidate& c : items) total_p += std::exp(c.logit - max_logit);
  // Tokens outside the candidates have p = 0: max(0, 0 - q) adds nothing.
  auto residual = [&](const Candidate& c) {
    return std::max(0.0, std::exp(c.logit - max_logit) / total_p - static_cast<double>(q[static_cast<size_t>(c.id)]));
  };
  double total = 0.0;
  for (const Candidate& c : items) total += residual(c);
  if (total <= 0.0) return Draw(list, u);
  const double target = u * total;
  double cumulative = 0.0;
  int32_t last_possible = -1;
  for (const Candidate& c : items) {
    const double weight = residual(c);
    if (weight == 0.0) continue;
    cumulative += weight;
    last_possible = c.id;
    if (cumulative > target) return c.id;
  }
  return last_possible;  // u x total rounded up to the full sum
}

int32_t Draw(const CandidateList& list, double u) {
  const auto& items = list.items;
  RIDGE_CHECK(!items.empty());
  const double max_logit = MaxLogit(items);
  RIDGE_CHECK(std::isfinite(max_logit));
  double total = 0.0;
  for (const Candidate& c : items) total += std::exp(c.logit - max_logit);
  const double target = u * total;
  double cumulative = 0.0;
  int32_t last_possible = items.front().id;
  for (const Candidate& c : items) {
    const double weight = std::exp(c.logit - max_logit);
    if (weight == 0.0) continue;
    cumulative += weight;
    last_possible = c.id;
    if (cumulative > target) return c.id;
  }
  return last_possible;  // u x total rounded up to the full sum
}

}  // namespace ridge::sampling
