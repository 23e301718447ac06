#include "ridge/sampling/sampler.h"

#include "ridge/base/error.h"

namespace ridge::sampling {

Sampler::Sampler(const SamplingParams& params, int32_t n_vocab)
    : params_(params), n_vocab_(n_vocab), rng_(params.seed) {
  Validate(params_);
  if (n_vocab <= 0) Fail("sampling: the vocabulary size must be > 0, got {}", n_vocab);
}

SampledToken Sampler::SampleToken(std::span<float> logits, std::span<const int32_t> previous_tokens) {
  bool accepted = false;
  return SampleOrAccept(logits, previous_tokens, /*draft=*/-1, {}, &accepted);
}

int32_t Sampler::DraftToken(std::span<const float> logits, std::span<float> q) {
  if (logits.size() != static_cast<size_t>(n_vocab_) || q.size() != logits.size())
    Fail("sampling: got {} draft logits and {} draft probabilities for a vocabulary of {} tokens", logits.size(),
         q.size(), n_vocab_);
  CheckLogits(logits);
  if (params_.greedy()) return ArgMax(logits);
  FilterCandidates(logits);
  CandidateProbabilities(candidates_, q);
  return Draw(candidates_, rng_.Uniform());
}

void Sampler::FilterCandidates(std::span<const float> logits) {
  FillCandidates(logits, params_.temperature, candidates_);
  KeepTopK(candidates_, params_.top_k);
  KeepTopP(candidates_, params_.top_p);
  KeepMinP(candidates_, params_.min_p);
}

std::vector<SampledToken> Sampler::VerifyDraft(std::span<float> rows, std::span<const int32_t> draft,
                                               std::span<const int32_t> previous_tokens,
                                               std::span<const float> draft_probs) {
  const size_t n_vocab = static_cast<size_t>(n_vocab_);
  if (rows.size() != (draft.size() + 1) * n_vocab)
    Fail("sampling: got {} logits to verify a draft of {} tokens over a vocabulary of {}", rows.size(), draft.size(),
         n_vocab_);
  if (!draft_probs.empty() && draft_probs.size() != draft.size() * n_vocab)
    Fail("sampling: got {} draft probabilities for a draft of {} tokens over a vocabulary of {}", draft_probs.size(),
         draft.size(), n_vocab_);
  // Penalties look at the sequence so far: the accepted draft tokens included.
  const bool track_history = params_.has_penalties();
  if (track_history) verify_history_.assign(previous_tokens.begin(), previous_tokens.end());
  std::vector<SampledToken> emitted;
  for (size_t i = 0; i <= draft.size(); ++i) {
    const int32_t proposed = i < draft.size() ? draft[i] : -1;
    const std::span<const int32_t> history = track_history ? std::span<const int32_t>(verify_history_) : previous_tokens;
    bool accepted = false;
    const std::span<const float> q =
        draft_probs.empty() || i == draft.size() ? std::span<const float>() : draft_probs.subspan(i * n_vocab, n_vocab);
    emitted.push_back(SampleOrAccept(rows.subspan(i * n_vocab, n_vocab), history, proposed, q, &accepted));
    if (!accepted) break;
    if (track_history) verify_history_.push_back(proposed);
  }
  return emitted;
}

SampledToken Sampler::SampleOrAccept(std::span<float> logits, std::span<const int32_t> previous_tokens, int32_t draft,
                                     std::span<const float> q, bool* accepted) {
  *accepted = false;
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
    *accepted = draft >= 0 && result.token == draft;
  } else {
    FilterCandidates(logits);
    if (draft < 0) {
      result.token = Draw(candidates_, rng_.Uniform());
    } else if (!q.empty()) {
      // A draft model's token, drawn from q: accept with min(1, p/q), else
      // draw from max(0, p - q) normalised. q(draft) > 0, as it was drawn.
      const double q_draft = q[static_cast<size_t>(draft)];
      if (rng_.Uniform() * q_draft < CandidateProbability(candidates_, draft)) {
        result.token = draft;
        *accepted = true;
      } else {
        result.token = DrawFromResidual(candidates_, q, rng_.Uniform());
      }
    } else if (rng_.Uniform() < CandidateProbability(candidates_, draft)) {
      // q is 1 at the draft token: accept with min(1, p/q) = p(draft).
      result.token = draft;
      *accepted = true;
    } else {
      // max(0, p - q) normalised: p without the draft token.
      RemoveCandidate(candidates_, draft);
      result.token = Draw(candidates_, rng_.Uniform());
    }
  }

  if (params_.wants_logprobs()) {
    const double log_sum_exp = LogSumExp(logits);
    result.logprob = static_cast<float>(static_cast<double>(logits[static_cast<size_t>(result.token)]) - log_sum_exp);
    result.top_logprobs = TopLogprobs(logits, log_sum_exp, params_.top_logprobs);
  }
  return result;
}

}  // namespace ridge::sampling
