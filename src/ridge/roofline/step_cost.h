#pragma once
// The roofline cost of one engine step whose batch mixes prefill chunks and
// decode tokens of several sequences: the FLOPs and bytes that the step's
// arithmetic intensity and achieved FLOP/s come from.
//
// Each chunk is costed as cost_model.h costs one sequence (a prefill of
// `tokens` after `depth` cached tokens, or a decode of one token over
// depth + 1 keys), then the weights are counted once for the whole step: a
// forward pass reads every weight matrix once whatever its number of tokens.
// So FLOPs = Σ chunk FLOPs, bytes = the weights once + Σ chunk KV and
// activation bytes. Every chunk computes one row of logits (the engine asks
// logits only of a prefill's last position, and a chunk that does not reach it
// is costed as if it did: at most 2·d·vocab FLOPs too many per chunk).
#include <cstdint>
#include <span>

#include "ridge/roofline/cost_model.h"

namespace ridge {

struct StepChunk {
  bool prefill = false;
  int64_t tokens = 1;  // decode: 1
  int64_t depth = 0;   // tokens of this sequence already in the KV cache
};

struct StepCost {
  double flops = 0;
  double bytes = 0;
  double weight_bytes = 0;
  double kv_bytes = 0;
  double intensity = 0;  // flops / bytes
};

// Throws ridge::Error for a chunk out of range (see AnalyzePhase); an empty
// step costs nothing.
StepCost AnalyzeStep(const ModelShape& shape, std::span<const StepChunk> chunks, const HardwareProfile& hw,
                     const CostOptions& options = {});

}  // namespace ridge
