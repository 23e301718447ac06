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

  // Speculative decoding: verifies `draft`, tokens proposed to follow
  // previous_tokens, against the target model's logits at each of its
  // positions: rows [draft.size() + 1, n_vocab], row i being the
  // distribution after previous_tokens + draft[0..i). Returns the tokens to
  // emit: the accepted prefix of the draft, then one token of the target's
  // own (the correction at the first rejection, or the bonus token after a
  // fully accepted draft), so at least one token and at most draft.size() + 1.
  // The draft is a point mass (prompt lookup): greedy accepts a draft token
  // where it is the argmax, so the output equals plain greedy decoding; with
  // temperature, draft token d is accepted with probability p(d) (= min(1,
  // p/q) for q = 1 at d) and a rejection samples from the normalised
  // max(0, p - q), that is p without d (modified rejection sampling), so the
  // emitted tokens follow the target distribution exactly. Penalties see
  // the accepted tokens before each later row. Rows are penalty-adjusted in
  // place, as SampleToken's logits.
  // draft_probs ([draft.size(), n_vocab], a draft model's): row i is the
  // distribution q that draft[i] was drawn from (DraftToken's). With
  // temperature, draft[i] is then accepted with probability min(1, p/q) and
  // a rejection draws from the normalised max(0, p - q); greedy ignores q.
  std::vector<SampledToken> VerifyDraft(std::span<float> rows, std::span<const int32_t> draft,
                                        std::span<const int32_t> previous_tokens,
                                        std::span<const float> draft_probs = {});

  // Draft-model speculation: the next draft token from the draft model's
  // logits ([n_vocab]). Greedy: their argmax (q is a point mass there and
  // `q` is left as it is). Otherwise a draw, with one draw from the RNG,
  // from this request's temperature, top-k, top-p and min-p applied to
  // them (no penalties: q may be any distribution, verification makes the
  // output the target's), and `q` ([n_vocab]) receives that distribution,
  // for VerifyDraft.
  int32_t DraftToken(std::span<const float> logits, std::span<float> q);

  // SampleToken without the log-probabilities.
  int32_t Sample(std::span<float> logits, std::span<const int32_t> previous_tokens) {
    return SampleToken(logits, previous_tokens).token;
  }

  const SamplingParams& params() const { return params_; }
  int32_t n_vocab() const { return n_vocab_; }

 private:
  // Penalties, then greedy or the filtered draw when `draft` < 0; with a draft
  // token, its acceptance test (and on rejection a draw from the residual)
  // instead, against the draft's distribution `q` ([n_vocab]; empty: a point
  // mass at the draft token). `accepted` tells which.
  SampledToken SampleOrAccept(std::span<float> logits, std::span<const int32_t> previous_tokens, int32_t draft,
                              std::span<const float> q, bool* accepted);
  // Temperature, top-k, top-p and min-p over logits into candidates_.
  void FilterCandidates(std::span<const float> logits);

  SamplingParams params_;
  int32_t n_vocab_;
  Rng rng_;
  CandidateList candidates_;  // reused between calls: no allocation per token
  std::vector<int32_t> verify_history_;  // VerifyDraft's previous tokens plus the accepted ones
};

}  // namespace ridge::sampling
