#include "ridge/sampling/sampler.h"

#include "ridge/base/error.h"

namespace ridge::sampling {

Sampler::Sampler(const SamplingParams& params, int32_t n_vocab)
    : params_(params), n_vocab_(n_vocab), rng_(params.seed) {
  Validate(params_);
  if (n_vocab <= 0) Fail("sampling: the vocabulary size must be > 0, got {}", n_vocab);
}

SampledToken Sampler::SampleToken(std::span<float> logits, std::span<const int32_t> previous_tokens) {
  if (logits.size() != static_cast<size_t>(n_vocab_))
    Fail("sampling: got {} logits for a vocabulary of {} tokens", logits.size(), n_vocab_);

  if (params_.has_penalties()) {
    auto window = previous_tokens;
    if (params_.penalty_window > 0 && window.size() > static_cast<size_t>(params_.penalty_window))
      window = window.last(static_cast<size_t>(params_.penalty_window));
    ApplyPenalties(logits, window, params_.repetition_penalty, params_.presence_penalty,
                   params_.frequency_penalty);
  }
  CheckLogits(logits);

  SampledToken result;
  if (params_.greedy()) {
    result.token = ArgMax(logits);
  } else {
    FillCandidates(logits, params_.temperature, candidates_);
    KeepTopK(candidates_, params_.top_k);
    KeepTopP(candidates_, params_.top_p);
    KeepMinP(candidates_, params_.min_p);
    result.token = Draw(candidates_, rng_.Uniform());
  }

  if (params_.wants_logprobs()) {
    const double log_sum_exp = LogSumExp(logits);
    result.logprob = static_cast<float>(static_cast<double>(logits[static_cast<size_t>(result.token)]) - log_sum_exp);
    result.top_logprobs = TopLogprobs(logits, log_sum_exp, params_.top_logprobs);
  }
  return result;
}

}  // namespace ridge::sampling
