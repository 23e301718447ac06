#pragma once
// How one model is split across the ranks of a job, and what its forward pass
// needs from the other ranks. The model layer knows nothing of MPI: the mpi
// layer implements ParallelLink; a model loaded whole has no link and its
// forward pass takes none of these branches.
//
// Tensor parallel (N ranks): each rank holds 1/N of every layer's attention
// heads (Q/K/V rows and KV heads, wo's input columns) and of its FFN (gate/up
// rows, down's input columns) and of the vocabulary rows of the LM head;
// after wo and after down every rank's partial [n, n_embd] is summed
// (AllReduceSum), and the logits are gathered to rank 0.
// Pipeline parallel (N ranks): rank r holds layers [r·L/N, (r+1)·L/N); the
// residual stream goes rank to rank (Send/Recv), the last rank computes the
// logits and sends them to rank 0. A step's tokens go in micro-batches, so
// that rank r runs micro-batch j while rank r + 1 runs j − 1; rank 0 posts
// the receives of every micro-batch's logits before it starts (StartRecv) and
// waits for them at the end (FinishRecvs).
// Every method throws LinkError when the other ranks do not answer.
// Either way rank 0 runs the tokenizer and the scheduler and, at the start of
// every forward pass, shares the step's batch and KV block tables
// (ShareStep); the other ranks follow (mpi/split_job.h).
#include <cstdint>
#include <span>

#include "ridge/base/error.h"
#include "ridge/kv/paged_kv_cache.h"
#include "ridge/model/batch.h"

namespace ridge {

struct ModelPartition {
  enum class Kind { kNone, kTensor, kPipeline };
  Kind kind = Kind::kNone;
  int rank = 0;
  int n_ranks = 1;
  // Pipeline parallel: the micro-batches a step's tokens are cut into (every
  // rank the same; 1: the whole step at once, one stage busy at a time; 0:
  // 2 · n_ranks of at least Model::kMinMicroBatchTokens tokens each).
  // Model::Forward cuts at most one per token.
  int micro_batches = 0;
  bool split() const { return kind != Kind::kNone && n_ranks > 1; }
};

// A communication with the other ranks failed (one died or hangs): the ranks
// may no longer agree on which step runs, so no later step can be trusted
// either. The engine stops on it (engine.h) instead of failing one batch.
class LinkError : public Error {
 public:
  using Error::Error;
};

class ParallelLink {
 public:
  virtual ~ParallelLink() = default;
  // Rank 0, before every forward pass: the other ranks run the same step.
  virtual void ShareStep(const Batch& batch, const PagedKvCache& cache) = 0;
  // Rank 0, between steps (the engine calls it in every turn of its loop):
  // the other ranks wait for the next step with a bounded timeout, so an idle
  // rank 0 tells them now and then that it is alive. Cheap when nothing is due.
  virtual void KeepAlive() {}
  // Tensor parallel: data[i] = Σ over ranks in rank order of each rank's
  // data[i], the same bits on every rank.
  virtual void AllReduceSum(float* data, int64_t n) = 0;
  // Tensor parallel: rank r's local [rows, cols[r]] becomes columns
  // [Σ cols[<r], Σ cols[≤r]) of rank 0's out [rows, Σ cols] (out unused elsewhere).
  virtual void GatherColumns(const float* local, int64_t rows, std::span<const int64_t> cols, float* out) = 0;
  // Pipeline parallel: n floats to / from another rank.
  virtual void Send(const float* data, int64_t n, int to_rank) = 0;
  virtual void Recv(float* data, int64_t n, int from_rank) = 0;
  // Pipeline parallel: a receive like Recv that returns at once; data must
  // stay valid until FinishRecvs, which waits for every receive started since
  // the last FinishRecvs. Receives from one rank are filled in the order started.
  virtual void StartRecv(float* data, int64_t n, int from_rank) = 0;
  virtual void FinishRecvs() = 0;
};

}  // namespace ridge
