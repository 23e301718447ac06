#pragma once
// The sampler's steps as pure functions over spans and candidate lists, so
// each can be tested alone on a hand-made distribution. Sampler composes them.
//
// Everything is deterministic: candidates are ordered by a strict total order
// (higher logit first, lower token id on ties), so nth_element / partial_sort
// give the same kept set and order with any standard library.
#include <cstdint>
#include <span>
#include <vector>

namespace ridge::sampling {

struct Candidate {
  int32_t id;
  float logit;
};

// The candidate order: more likely first; equal logits -> lower id first.
inline bool MoreLikely(const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

struct TokenLogprob {
  int32_t token;
  float logprob;
};

// Applies the penalties to every distinct token of `window`, once per token:
//   repetition (llama.cpp / CTRL): logit > 0 ? logit / r : logit * r
//   presence (OpenAI):             logit -= presence           (token seen at least once)
//   frequency (OpenAI):            logit -= count * frequency  (count = occurrences in window)
// Repetition is applied first, then presence and frequency (llama.cpp's order).
// logits: [n_vocab]. Throws ridge::Error if a window token is outside [0, n_vocab).
void ApplyPenalties(std::span<float> logits, std::span<const int32_t> window, float repetition_penalty,
                    float presence_penalty, float frequency_penalty);

// Index of the largest logit; ties -> lowest id. logits must not be empty.
int32_t ArgMax(std::span<const float> logits);

// Throws ridge::Error when a logit is NaN or +inf, or when every logit is -inf
// (nothing could be sampled). -inf alone is allowed: it masks a token.
void CheckLogits(std::span<const float> logits);

// log(sum(exp(logits))), computed stably in double.
double LogSumExp(std::span<const float> logits);

// The n most likely tokens with their log-softmax values, most likely first
// (ties -> lower id); fewer when the vocabulary is smaller than n.
std::vector<TokenLogprob> TopLogprobs(std::span<const float> logits, double log_sum_exp, int32_t n);

// A list of candidates being narrowed; `sorted` says it is in MoreLikely order.
struct CandidateList {
  std::vector<Candidate> items;
  bool sorted = false;
};

// Fills `list` with every token in id order, logit = (logit - max_logit) / temperature
// (temperature > 0). Shifting by the max first leaves softmax unchanged and keeps a
// tiny temperature from overflowing to inf.
void FillCandidates(std::span<const float> logits, float temperature, CandidateList& list);

// Keeps the k most likely (k <= 0 or k >= size: keeps all). When it cuts,
// the result is sorted. O(n + k log k): nth_element, then a sort of the k.
void KeepTopK(CandidateList& list, int32_t k);

// Keeps the smallest prefix of the most likely tokens whose softmax mass is
// >= top_p (top_p >= 1: keeps all). Sorts only as much of the list as it needs
// (a growing partial sort), never the whole vocabulary unless the mass does.
void KeepTopP(CandidateList& list, float top_p);

// Keeps tokens whose probability is >= min_p x the largest probability, i.e.
// logit >= max_logit + log(min_p) (min_p <= 0: keeps all). Keeps the order.
void KeepMinP(CandidateList& list, float min_p);

// The softmax probability of token `id` among the candidates (0 when it is not
// one of them). Needs at least one finite logit.
double CandidateProbability(const CandidateList& list, int32_t id);

// Takes token `id` out of the candidates, if it is one; keeps the order.
void RemoveCandidate(CandidateList& list, int32_t id);

// probs: [n_vocab]; receives softmax(logit) of each candidate and 0 for every
// other token. Needs at least one finite logit.
void CandidateProbabilities(const CandidateList& list, std::span<float> probs);

// Speculative sampling's correction after a rejected draft token drawn from
// q (q: [n_vocab] probabilities): draws from max(0, p - q) normalised, p
// being the candidates' softmax, for u in [0, 1). Where p - q has no positive
// mass (p == q up to rounding, when a rejection is all but impossible) it
// draws from p.
int32_t DrawFromResidual(const CandidateList& list, std::span<const float> q, double u);

// Draws one candidate with probability softmax(logit): the first whose
// cumulative weight exceeds u x total, for u in [0, 1). Needs a non-empty list
// with at least one finite logit.
int32_t Draw(const CandidateList& list, double u);

}  // namespace ridge::sampling
