#pragma once
// The per-step input of a forward pass: tokens of one or more sequences, each
// with its position and whether its next-token logits are wanted. A prefill
// step holds many consecutive positions of a sequence; a decode step one
// position per sequence; continuous batching mixes both.
#include <cstdint>
#include <vector>

#include "ridge/kv/paged_kv_cache.h"

namespace ridge {

using TokenId = int32_t;

struct Batch {
  std::vector<TokenId> tokens;     // [n_tokens]
  std::vector<int64_t> positions;  // [n_tokens]
  std::vector<SeqId> seq_ids;      // [n_tokens]
  std::vector<bool> want_logits;   // [n_tokens]

  int64_t size() const { return static_cast<int64_t>(tokens.size()); }
  int64_t n_logits() const;
  void Add(TokenId token, int64_t position, SeqId seq, bool logits) {
    tokens.push_back(token);
    positions.push_back(position);
    seq_ids.push_back(seq);
    want_logits.push_back(logits);
  }
  void Clear() {
    tokens.clear();
    positions.clear();
    seq_ids.clear();
    want_logits.clear();
  }
};

}  // namespace ridge
