#pragma once
// One rank's part of a model (parallel_link.h): which heads, FFN rows,
// vocabulary rows or layers it holds, and the copy of just those bytes out of
// the mapped file into memory it owns.
#include <cstdint>

#include "ridge/model/model.h"
#include "ridge/model/model_config.h"
#include "ridge/model/parallel_link.h"

namespace ridge {

struct IndexRange {
  int64_t first = 0;
  int64_t count = 0;
  int64_t end() const { return first + count; }
};

// Part r of n of [0, total): [r·total/n, (r+1)·total/n).
IndexRange PartOf(int64_t total, int rank, int n_ranks);

// The shape this rank computes with: tensor parallel divides n_heads,
// n_kv_heads and n_ff by N and keeps its part of n_vocab (pipeline: the whole
// shape; its layers are LayersOf).
ModelConfig LocalConfig(const ModelConfig& c, const ModelPartition& p);
IndexRange LayersOf(const ModelConfig& c, const ModelPartition& p);
IndexRange VocabOf(const ModelConfig& c, const ModelPartition& p);

// Throws ridge::Error naming why the model cannot be split so: heads, KV
// heads or n_ff not divisible by N, a column slice that would cut a quantized
// block, fewer layers than ranks, a mixture of experts.
void CheckPartition(const ModelConfig& c, const ModelWeights& w, const ModelPartition& p);

// Replaces the views of the whole file in `w` with copies of this rank's
// slices in `w.shard_memory` (rows by head / FFN row / vocabulary row,
// columns of wo and down, whole matrices of its layers). Matrices it does
// not use become empty; token_embd stays a view of the file (rows are read
// as tokens need them). weight_bytes becomes the bytes copied.
void PartitionWeights(ModelWeights& w, const ModelConfig& c, const ModelPartition& p);

}  // namespace ridge
