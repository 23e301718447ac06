#pragma once
// What a request asks of the sampler, with OpenAI / vLLM meanings and ranges.
//
// Order of operations in Sampler::Sample (the order of Hugging Face's and
// vLLM's warpers, not llama.cpp's temperature-last chain):
//   1. penalties (repetition, presence, frequency) on the raw logits, in place;
//   2. log-probabilities, if asked, from the penalty-adjusted logits;
//   3. temperature == 0: argmax (ties -> lowest token id), done;
//   4. logits / temperature -> top-k -> top-p -> min-p -> draw from the rest.
#include <cstdint>

namespace ridge::sampling {

// OpenAI's limit for top_logprobs (vLLM's default max_logprobs too).
inline constexpr int kMaxTopLogprobs = 20;

struct SamplingParams {
  // 0 => greedy (argmax). Otherwise logits are divided by it before softmax.
  float temperature = 0.0f;
  // Keep the k most likely tokens; 0 => off. Values above the vocabulary size keep everything.
  int32_t top_k = 0;
  // Keep the smallest set of most likely tokens whose probability mass is >= top_p; 1 => off.
  float top_p = 1.0f;
  // Drop tokens whose probability is below min_p x the most likely token's; 0 => off.
  float min_p = 0.0f;
  // llama.cpp / CTRL semantics: a token seen in the window has its logit divided by
  // the penalty when positive, multiplied by it when negative. 1 => off.
  float repetition_penalty = 1.0f;
  // OpenAI semantics: subtracted once from the logit of every token seen in the window.
  float presence_penalty = 0.0f;
  // OpenAI semantics: count(token in window) x penalty subtracted from its logit.
  float frequency_penalty = 0.0f;
  // How many of the most recent previous tokens the penalties look at; 0 => all of
  // those passed to Sample (the caller decides whether the prompt is included).
  int32_t penalty_window = 0;
  // Seeds the sampler's own RNG (std::mt19937_64): same seed, same logits => same tokens.
  uint64_t seed = 0;
  // Report the chosen token's log-probability (OpenAI `logprobs: true`).
  bool logprobs = false;
  // Also report this many most likely alternatives (OpenAI `top_logprobs`), 0..kMaxTopLogprobs.
  // A value > 0 implies `logprobs`.
  int32_t top_logprobs = 0;

  bool greedy() const { return temperature == 0.0f; }
  bool wants_logprobs() const { return logprobs || top_logprobs > 0; }
  bool has_penalties() const {
    return repetition_penalty != 1.0f || presence_penalty != 0.0f || frequency_penalty != 0.0f;
  }
};

// Throws ridge::Error naming the first field out of range:
// temperature in [0, inf), top_k >= 0, top_p in (0, 1], min_p in [0, 1],
// repetition_penalty in (0, inf), presence/frequency_penalty in [-2, 2] (OpenAI's range),
// penalty_window >= 0, top_logprobs in [0, kMaxTopLogprobs]; every float finite.
void Validate(const SamplingParams& params);

// A seed from the operating system, for requests that do not give one.
uint64_t RandomSeed();

}  // namespace ridge::sampling
