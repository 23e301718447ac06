#include "ridge/roofline/step_cost.h"

namespace ridge {

StepCost AnalyzeStep(const ModelShape& shape, std::span<const StepChunk> chunks, const HardwareProfile& hw,
                     const CostOptions& options) {
  StepCost s;
  for (const StepChunk& c : chunks) {
    Workload w;
    if (c.prefill) {
      w.phase = Phase::kPrefill;
      w.n_prompt_tokens = c.tokens;
      w.depth = c.depth;
    } else {
      w.phase = Phase::kDecode;
      w.batch = 1;
      w.context = c.depth + 1;  // the new token attends to itself too
    }
    const PhaseCost p = AnalyzePhase(shape, w, hw, options);
    s.flops += p.flops;
    s.bytes += p.bytes - p.weight_bytes;
    s.kv_bytes += p.kv_bytes;
    s.weight_bytes = p.weight_bytes;  // the same matrices for every chunk: read once
  }
  s.bytes += s.weight_bytes;
  s.intensity = s.bytes > 0 ? s.flops / s.bytes : 0;
  return s;
}

}  // namespace ridge
