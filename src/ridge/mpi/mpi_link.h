#pragma once
// ParallelLink over MPI (model/parallel_link.h), and the step messages rank 0
// sends its followers: the batch (tokens, positions, sequence ids, which
// tokens want logits) and, for each sequence in it, its KV block table, with
// the KV pool's type, block size and block count. A follower builds a pool of
// the same block count for its own heads or layers and borrows the tables for
// the step, so K and V of a position live in the same block id on every rank.
// Between steps rank 0 sends keep-alives (KeepAlive) and, at the end, the
// finish message: a follower's wait for the next step stays bounded by the
// communicator's timeout however long a server stays idle.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <thread>
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
  // Keep-alives go out when rank 0 has sent nothing for a quarter of the timeout.
  explicit MpiLink(Communicator& comm);
  ~MpiLink() override;

  void ShareStep(const Batch& batch, const PagedKvCache& cache) override;
  void KeepAlive() override;
  void AllReduceSum(float* data, int64_t n) override { comm_.AllReduceSum(data, n); }
  void GatherColumns(const float* local, int64_t rows, std::span<const int64_t> cols, float* out) override;
  void Send(const float* data, int64_t n, int to_rank) override;
  void Recv(float* data, int64_t n, int from_rank) override;
  void StartRecv(float* data, int64_t n, int from_rank) override;
  void FinishRecvs() override { comm_.FinishRecvs(); }

  // Rank 0, from the end of loading to its first step (while a server
  // allocates its KV pool, say): keep-alives from a thread of their own.
  // ShareStep, KeepAlive and Finish end it first, so that one thread at a
  // time calls MPI; they rethrow its failure.
  void KeepAliveInBackground();
  // Rank 0: tells the followers there are no more steps.
  void Finish();
  // A follower: the next step (skipping keep-alives), or nullopt once rank 0 has finished.
  std::optional<StepMessage> ReceiveStep();

  int64_t steps() const { return steps_; }
  int64_t keep_alives() const { return keep_alives_; }
  Communicator& comm() { return comm_; }
  const Communicator& comm() const { return comm_; }

 private:
  // One broadcast of a length, then of the words (length 0: finished;
  // kKeepAliveLength: nothing follows).
  void BroadcastWords(std::vector<int64_t>& words);
  void SendKeepAliveIfDue();
  void EndBackgroundKeepAlive();
  Communicator& comm_;
  std::chrono::steady_clock::duration keep_alive_interval_;
  std::chrono::steady_clock::time_point last_sent_;  // rank 0's last broadcast
  int64_t steps_ = 0;
  int64_t keep_alives_ = 0;
  std::thread background_;
  std::atomic<bool> background_stop_{false};
  std::exception_ptr background_error_;  // written by background_ before it ends
  std::vector<float> gathered_;  // GatherColumns: one rank's [rows, cols[r]]
  std::vector<int64_t> words_;
};

}  // namespace ridge::mpi
