#pragma once
// ParallelLink over MPI (model/parallel_link.h), and the step messages rank 0
// sends its followers: the batch (tokens, positions, sequence ids, which
// tokens want logits) and, for each sequence in it, its KV block table, with
// the KV pool's type, block size and block count. A follower builds a pool of
// the same block count for its own heads or layers and borrows the tables for
// the step, so K and V of a position live in the same block id on every rank.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "ridge/kv/paged_kv_cache.h"
#include "ridge/model/batch.h"
#include "ridge/model/parallel_link.h"
#include "ridge/mpi/communicator.h"

namespace ridge::mpi {

// One forward pass as a follower receives it.
struct StepMessage {
  Batch batch;
  GgmlType kv_type = GgmlType::kF16;
  int64_t kv_block_tokens = 0;
  int64_t kv_blocks = 0;
  std::vector<std::pair<SeqId, std::vector<BlockId>>> tables;
};

// The step as int64 words: [kv_type, block_tokens, n_blocks, n_tokens,
// n_tables, tokens…, positions…, seq_ids…, want_logits…, then per table:
// seq, n, blocks…].
std::vector<int64_t> EncodeStep(const Batch& batch, const PagedKvCache& cache);
// Throws ridge::Error for words that are not a whole step.
StepMessage DecodeStep(std::span<const int64_t> words);

class MpiLink : public ParallelLink {
 public:
  explicit MpiLink(Communicator& comm) : comm_(comm) {}

  void ShareStep(const Batch& batch, const PagedKvCache& cache) override;
  void AllReduceSum(float* data, int64_t n) override { comm_.AllReduceSum(data, n); }
  void GatherColumns(const float* local, int64_t rows, std::span<const int64_t> cols, float* out) override;
  void Send(const float* data, int64_t n, int to_rank) override;
  void Recv(float* data, int64_t n, int from_rank) override;

  // Rank 0: tells the followers there are no more steps.
  void Finish();
  // A follower: the next step, or nullopt once rank 0 has finished.
  std::optional<StepMessage> ReceiveStep();

  int64_t steps() const { return steps_; }
  Communicator& comm() { return comm_; }
  const Communicator& comm() const { return comm_; }

 private:
  // One broadcast of a length, then of the words (length 0: finished).
  void BroadcastWords(std::vector<int64_t>& words);
  Communicator& comm_;
  int64_t steps_ = 0;
  std::vector<float> gathered_;  // GatherColumns: one rank's [rows, cols[r]]
  std::vector<int64_t> words_;
};

}  // namespace ridge::mpi
