#include "ridge/grammar/token_mask.h"

#include <algorithm>
#include <limits>

#include "ridge/base/error.h"

namespace ridge::grammar {

void ApplyTokenMask(const TokenBitmask& mask, std::span<float> logits) {
  RIDGE_CHECK(logits.size() == static_cast<size_t>(mask.n_vocab));
  constexpr float kMasked = -std::numeric_limits<float>::infinity();
  for (size_t w = 0; w < mask.words.size(); ++w) {
    const uint64_t bits = mask.words[w];
    if (bits == ~uint64_t{0}) continue;
    const size_t first = w * 64;
    const size_t end = std::min(first + 64, logits.size());
    for (size_t t = first; t < end; ++t) {
      if (!((bits >> (t - first)) & 1)) logits[t] = kMasked;
    }
  }
}

}  // namespace ridge::grammar
