#include "ridge/engine/prompt_lookup.h"

#include <algorithm>

#include "ridge/base/error.h"

namespace ridge {

void Validate(const SpeculationOptions& o) {
  constexpr int64_t kMax = 64;
  if (o.num_tokens < 1 || o.num_tokens > kMax)
    Fail("speculative tokens per step must be in [1, {}], got {}", kMax, o.num_tokens);
  if (o.ngram_min < 1 || o.ngram_min > o.ngram_max || o.ngram_max > kMax)
    Fail("prompt-lookup n-gram sizes need 1 <= min <= max <= {}, got min {} and max {}", kMax, o.ngram_min,
         o.ngram_max);
  if (o.method == SpeculationOptions::Method::kDraftModel && o.draft == nullptr)
    Fail("draft-model speculation needs a draft model");
  if (o.max_decode_tokens < 0)
    Fail("the decode-token cap for speculation must be 0 (none) or more, got {}", o.max_decode_tokens);
}

SpeculationOptions::Method ParseSpeculationMethod(const std::string& name) {
  if (name == "off") return SpeculationOptions::Method::kOff;
  if (name == "ngram") return SpeculationOptions::Method::kNgram;
  Fail("--spec: unknown speculation method '{}' (use ngram or off)", name);
}

int64_t NextDraftLimit(int64_t limit, int64_t drafted, int64_t accepted, int64_t k_max) {
  if (accepted >= drafted) return std::min(k_max, limit + 1);
  return std::min(k_max, accepted + 1);
}

std::vector<TokenId> ProposeByPromptLookup(std::span<const TokenId> tokens, int64_t ngram_min, int64_t ngram_max,
                                           int64_t max_tokens) {
  const int64_t length = static_cast<int64_t>(tokens.size());
  for (int64_t n = std::min(ngram_max, length - 1); n >= ngram_min; --n) {
    const std::span<const TokenId> suffix = tokens.last(static_cast<size_t>(n));
    // Occurrences starting at `start` end before the suffix's own start
    // would be the suffix itself; the latest one is tried first.
    for (int64_t start = length - n - 1; start >= 0; --start) {
      if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
      const int64_t from = start + n;  // < length: at least one token follows
      const int64_t count = std::min(max_tokens, length - from);
      return {tokens.begin() + from, tokens.begin() + from + count};
    }
  }
  return {};
}

}  // namespace ridge
