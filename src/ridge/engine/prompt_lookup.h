#pragma once
// Speculative decoding's settings, and its cheapest drafter: prompt lookup
// (n-gram) drafting, as vLLM's `ngram` method and llama.cpp's lookup decoding.
// The last n tokens of a sequence are looked for earlier in it (prompt and
// output so far); the tokens that followed the most recent earlier
// occurrence are proposed as the continuation. On text that copies from its
// prompt (edits, code, summaries, "repeat this") most of them are right, and
// the target model verifies them all in one forward pass.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ridge/model/batch.h"

namespace ridge {

class Model;

struct SpeculationOptions {
  // kNgram: prompt lookup (below); kDraftModel: `draft` proposes (draft_model.h).
  enum class Method { kOff, kNgram, kDraftModel };
  Method method = Method::kOff;
  Model* draft = nullptr;  // kDraftModel: the draft model (not owned; outlives whoever speculates with it)
  int64_t num_tokens = 4;  // K: draft tokens verified per sequence and step (vLLM's num_speculative_tokens)
  // n-gram sizes tried, longest first (vLLM's prompt_lookup_max / prompt_lookup_min).
  int64_t ngram_max = 4;
  int64_t ngram_min = 2;
  // Adaptive K: each sequence drafts at most its own limit, which drops to
  // what was accepted (+1) after a rejection and grows by one after a fully
  // accepted draft (NextDraftLimit); off: always num_tokens.
  bool adaptive = true;
  // Decode tokens (one per sequence plus drafts) a step may hold before drafts
  // stop being added: past the batch where decode's weight products reach
  // the roofline's ridge point a step is compute bound, and verifying tokens
  // that may be rejected costs as much as decoding accepted ones (0: no cap).
  int64_t max_decode_tokens = 0;

  bool enabled() const { return method != Method::kOff; }
};

// Throws ridge::Error naming the first setting out of range (K in [1, 64],
// 1 <= ngram_min <= ngram_max <= 64, a draft model for kDraftModel).
void Validate(const SpeculationOptions& options);

// "off" or "ngram" (the --spec flag); throws ridge::Error naming the others.
SpeculationOptions::Method ParseSpeculationMethod(const std::string& name);

// A sequence's next draft limit after a step with limit `limit` drafted
// `drafted` tokens and `accepted` of them were accepted: all accepted, one
// more (up to k_max); otherwise accepted + 1.
int64_t NextDraftLimit(int64_t limit, int64_t drafted, int64_t accepted, int64_t k_max);

// Up to max_tokens tokens to follow `tokens`: for n from ngram_max down to
// ngram_min, the tokens after the most recent earlier occurrence of the last n
// tokens; empty when no suffix of those sizes occurs earlier.
std::vector<TokenId> ProposeByPromptLookup(std::span<const TokenId> tokens, int64_t ngram_min, int64_t ngram_max,
                                           int64_t max_tokens);

}  // namespace ridge
