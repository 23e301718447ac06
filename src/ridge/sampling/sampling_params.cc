#include "ridge/sampling/sampling_params.h"

#include <cmath>
#include <random>

#include "ridge/base/error.h"

namespace ridge::sampling {
namespace {

void CheckFinite(const char* field, float value) {
  if (!std::isfinite(value)) Fail("sampling: {} must be a finite number, got {}", field, value);
}

}  // namespace

void Validate(const SamplingParams& p) {
  CheckFinite("temperature", p.temperature);
  if (p.temperature < 0.0f) Fail("sampling: temperature must be >= 0 (0 means greedy), got {}", p.temperature);
  if (p.top_k < 0) Fail("sampling: top_k must be >= 0 (0 means off), got {}", p.top_k);
  CheckFinite("top_p", p.top_p);
  if (!(p.top_p > 0.0f && p.top_p <= 1.0f)) Fail("sampling: top_p must be in (0, 1], got {}", p.top_p);
  CheckFinite("min_p", p.min_p);
  if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) Fail("sampling: min_p must be in [0, 1], got {}", p.min_p);
  CheckFinite("repetition_penalty", p.repetition_penalty);
  if (!(p.repetition_penalty > 0.0f))
    Fail("sampling: repetition_penalty must be > 0 (1 means off), got {}", p.repetition_penalty);
  CheckFinite("presence_penalty", p.presence_penalty);
  if (!(p.presence_penalty >= -2.0f && p.presence_penalty <= 2.0f))
    Fail("sampling: presence_penalty must be in [-2, 2], got {}", p.presence_penalty);
  CheckFinite("frequency_penalty", p.frequency_penalty);
  if (!(p.frequency_penalty >= -2.0f && p.frequency_penalty <= 2.0f))
    Fail("sampling: frequency_penalty must be in [-2, 2], got {}", p.frequency_penalty);
  if (p.penalty_window < 0) Fail("sampling: penalty_window must be >= 0 (0 means all), got {}", p.penalty_window);
  if (p.top_logprobs < 0 || p.top_logprobs > kMaxTopLogprobs)
    Fail("sampling: top_logprobs must be in [0, {}], got {}", kMaxTopLogprobs, p.top_logprobs);
}

uint64_t RandomSeed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

}  // namespace ridge::sampling
