#include "ridge/model/op_profile.h"

namespace ridge {

const char* OpName(OpKind kind) {
  switch (kind) {
    case OpKind::kEmbed:
      return "embed";
    case OpKind::kNorm:
      return "norms";
    case OpKind::kQkv:
      return "Q, K, V matmuls";
    case OpKind::kRopeStoreKv:
      return "RoPE, KV store";
    case OpKind::kAttention:
      return "attention";
    case OpKind::kAttnOut:
      return "attn out matmul";
    case OpKind::kResidual:
      return "residual adds";
    case OpKind::kFfnGateUp:
      return "FFN gate, up matmuls";
    case OpKind::kFfnActivation:
      return "FFN activation";
    case OpKind::kFfnDown:
      return "FFN down matmul";
    case OpKind::kExperts:
      return "FFN experts (whole)";
    case OpKind::kLogits:
      return "LM head";
  }
  return "?";
}

bool IsWeightOp(OpKind kind) {
  switch (kind) {
    case OpKind::kQkv:
    case OpKind::kAttnOut:
    case OpKind::kFfnGateUp:
    case OpKind::kFfnDown:
    case OpKind::kExperts:
    case OpKind::kLogits:
      return true;
    default:
      return false;
  }
}

void OpProfile::Add(OpKind kind, double seconds, double flops, double bytes) {
  OpTotals& t = ops_[static_cast<size_t>(kind)];
  ++t.calls;
  t.seconds += seconds;
  t.flops += flops;
  t.bytes += bytes;
}

void OpProfile::AddForward(double seconds) {
  ++forwards_;
  forward_seconds_ += seconds;
}

}  // namespace ridge
