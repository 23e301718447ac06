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
    const size_t n = std::min<size_t>(64, logits.size() - first);
    float* row = logits.data() + first;
    // A select rather than a branch: allowed tokens are scattered, and a
    // mispredicted branch per token cost 10x on the 128k vocabulary.
    for (size_t j = 0; j < n; ++j) row[j] = ((bits >> j) & 1) ? row[j] : kMasked;
  }
}

}  // namespace ridge::grammar
