#pragma once
// Where a forward pass's wall time goes. When an OpProfile is set
// (Model::set_op_profile), Model::Forward times each of its steps into it,
// with the arithmetic the step does and the bytes it must read (a matmul's
// weights, attention's cached K and V), so that `ridge bench --profile` can
// set each step beside its own roofline. Without a profile a step costs one
// null test. A step's time is wall time on the calling thread: it includes
// the pool's wait for the step's slowest thread.
#include <array>
#include <cstdint>

#include "ridge/base/clock.h"

namespace ridge {

enum class OpKind {
  kEmbed,          // token rows out of the embedding matrix
  kNorm,           // RMSNorm before attention and FFN (the output norm is in kLogits)
  kQkv,            // Q, K and V projections (one grouped matmul), their biases
  kRopeStoreKv,    // Q/K norms, RoPE, K and V into the cache
  kAttention,      // softmax(Q·Kᵀ)·V over the cache
  kAttnOut,        // the output projection
  kResidual,       // x += (post-norm of) the block's output
  kFfnGateUp,      // gate and up projections (one grouped matmul)
  kFfnActivation,  // act(gate) ⊙ up
  kFfnDown,        // the down projection
  kExperts,        // a mixture of experts' whole FFN: routing, experts, shared expert
  kLogits,         // the output norm and the LM head
};
inline constexpr int kOpKinds = 12;

const char* OpName(OpKind kind);
// Steps whose work is weight matrices: their roof is the weights' arithmetic
// peak; attention's is the KV cache's (HardwareProfile::AttentionPeak).
bool IsWeightOp(OpKind kind);

struct OpTotals {
  int64_t calls = 0;
  double seconds = 0;
  double flops = 0;  // 2 per multiply-add
  double bytes = 0;  // weights, or cached K and V, the step must read
};

class OpProfile {
 public:
  void Add(OpKind kind, double seconds, double flops, double bytes);
  // A whole forward pass, the steps' sum and what lies between them (bias
  // adds, scratch sizing, a split model's links).
  void AddForward(double seconds);
  const OpTotals& op(OpKind kind) const { return ops_[static_cast<size_t>(kind)]; }
  int64_t forwards() const { return forwards_; }
  double forward_seconds() const { return forward_seconds_; }

 private:
  std::array<OpTotals, kOpKinds> ops_{};
  int64_t forwards_ = 0;
  double forward_seconds_ = 0;
};

// Times its scope into `profile` (null: does nothing).
class OpTimer {
 public:
  OpTimer(OpProfile* profile, OpKind kind, double flops = 0, double bytes = 0)
      : profile_(profile), kind_(kind), flops_(flops), bytes_(bytes) {
    if (profile_) start_ = Clock::now();
  }
  ~OpTimer() {
    if (profile_) profile_->Add(kind_, SecondsSince(start_), flops_, bytes_);
  }
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;
  // For a step whose work is known only once it began or ran (the rows
  // that want logits, the experts the routing hit).
  void AddWork(double flops, double bytes) {
    flops_ += flops;
    bytes_ += bytes;
  }

 private:
  OpProfile* profile_;
  OpKind kind_;
  double flops_, bytes_;
  Clock::time_point start_;
};

}  // namespace ridge
