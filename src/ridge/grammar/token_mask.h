#pragma once
// A set of allowed token ids, one bit per token of the vocabulary, and its
// application to a step's logits.
#include <bit>
#include <cstdint>
#include <span>
#include <vector>

namespace ridge::grammar {

struct TokenBitmask {
  std::vector<uint64_t> words;  // [ceil(n_vocab / 64)]
  int32_t n_vocab = 0;

  void Reset(int32_t n) {
    n_vocab = n;
    words.assign(static_cast<size_t>((n + 63) / 64), 0);
  }
  void Set(int32_t token) { words[static_cast<size_t>(token) >> 6] |= uint64_t{1} << (token & 63); }
  bool Test(int32_t token) const { return (words[static_cast<size_t>(token) >> 6] >> (token & 63)) & 1; }
  int64_t Count() const {
    int64_t n = 0;
    for (uint64_t w : words) n += std::popcount(w);
    return n;
  }
};

// logits[t] = -inf for every token t outside `mask` (logits: [mask.n_vocab]).
void ApplyTokenMask(const TokenBitmask& mask, std::span<float> logits);

}  // namespace ridge::grammar
