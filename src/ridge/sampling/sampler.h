#pragma once
// Picks the next token from a step's logits: penalties, then greedy or
// temperature -> top-k -> top-p -> min-p -> a seeded draw (see
// sampling_params.h for the order and the meaning of each field).
//
// Log-probabilities (OpenAI `logprobs` / `top_logprobs`) are the log-softmax
// of the penalty-adjusted logits, before temperature and before any top-k /
// top-p / min-p cut: the model's own distribution as the request's penalties
// left it. This matches vLLM's default (log-probabilities of the model's
// output, independent of the sampling settings), so a token's reported
// log-probability does not change with temperature and is never -inf merely
// because a filter dropped it.
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "ridge/sampling/rng.h"
#include "ridge/sampling/sampling_params.h"
#include "ridge/sampling/sampling_steps.h"

namespace ridge::sampling {

struct SampledToken {
  int32_t token = -1;
  // log P(token); NaN unless params.wants_logprobs().
  float logprob = std::numeric_limits<float>::quiet_NaN();
  // The params.top_logprobs most likely tokens, most likely first (ties -> lower id).
  std::vector<TokenLogprob> top_logprobs;
};

class Sampler {
 public:
  // Validates params (ridge::Error naming the field) and n_vocab > 0.
  Sampler(const SamplingParams& params, int32_t n_vocab);

  // logits: [n_vocab]; on return they hold the penalty-adjusted values.
  // previous_tokens: the sequence so far (prompt and/or output, the caller's
  // choice); the penalties look at its last params.penalty_window tokens (all
  // when 0). Each call that is not greedy takes exactly one draw from the RNG.
  // Throws ridge::Error for a wrong logits size, a non-finite logit (NaN, +inf),
  // all logits -inf, or a previous token outside the vocabulary.
  SampledToken SampleToken(std::span<float> logits, std::span<const int32_t> previous_tokens);

  // SampleToken without the log-probabilities.
  int32_t Sample(std::span<float> logits, std::span<const int32_t> previous_tokens) {
    return SampleToken(logits, previous_tokens).token;
  }

  const SamplingParams& params() const { return params_; }
  int32_t n_vocab() const { return n_vocab_; }

 private:
  SamplingParams params_;
  int32_t n_vocab_;
  Rng rng_;
  CandidateList candidates_;  // reused between calls: no allocation per token
};

}  // namespace ridge::sampling
