#pragma once
// The roofline cost model of a Llama forward step: per operation, the FLOPs,
// the bytes moved from memory, the arithmetic intensity (FLOP/byte) and the
// predicted time max(FLOPs / peak, bytes / bandwidth).
//
// Assumptions (stated so the numbers can be checked by hand):
//  - A matrix-vector/matrix product reads its weights once per step,
//    whatever the number of tokens: 2 FLOPs per weight per token.
//  - Attention is fused (FlashAttention style): scores stay on chip; each
//    sequence's K and V cache is read once per layer per step, shared by the
//    query heads of its GQA group. Softmax, RMSNorm, RoPE and SwiGLU are
//    element-wise and left out (a few FLOPs per element, negligible bytes).
//  - Prefill is one prompt of N tokens after `depth` tokens already in the
//    cache (0: an empty cache; causal: query i attends depth + i + 1 keys) and
//    computes the logits of its last token only.
//  - Decode is B sequences each producing one token, each attending over
//    `context` cached tokens (the new token included).
//  - Activations are read and written once per operation at
//    activation_bytes each; K and V of new tokens are written at the KV
//    type's size; logits are FP32.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ridge/roofline/hardware.h"
#include "ridge/roofline/model_shape.h"

namespace ridge {

enum class Phase { kPrefill, kDecode };
const char* PhaseName(Phase phase);  // "prefill", "decode"

struct Workload {
  Phase phase = Phase::kDecode;
  int64_t n_prompt_tokens = 512;  // prefill
  int64_t batch = 1;              // decode: sequences in the step
  int64_t context = 1024;         // decode: tokens each sequence attends over
  int64_t depth = 0;              // prefill: tokens already in the cache before the prompt
};

struct CostOptions {
  double kv_bytes_per_element = 2;  // F16 cache
  double activation_bytes = 2;      // BF16 activations (a CPU engine uses 4)
};

struct OpCost {
  std::string name;        // "QKV projections", ..., "LM head"
  double flops = 0;        // over all layers
  double bytes = 0;        // weights + KV + activations moved
  double weight_bytes = 0;
  double kv_bytes = 0;
  double intensity = 0;    // flops / bytes
  double time_s = 0;       // max(flops / peak, bytes / bandwidth); attention at the attention peak
  bool compute_bound = false;
  bool attention = false;  // Q·Kᵀ or P·V (hw.AttentionPeak())
};

struct PhaseCost {
  Workload workload;
  std::vector<OpCost> ops;  // QKV, scores, ×V, output proj, gate/up, down, LM head
  double flops = 0, bytes = 0, weight_bytes = 0, kv_bytes = 0;
  double intensity = 0;
  double time_s = 0;           // Σ of the operations' predicted times (they run one after another)
  double roofline_time_s = 0;  // max(compute_s, memory_s) of the totals (<= time_s)
  double compute_s = 0;        // attention FLOPs / attention peak + the others' / peak
  double memory_s = 0;         // bytes / bandwidth
  bool compute_bound = false;  // of the totals: intensity >= the ridge point
  int64_t tokens = 0;          // tokens the step processes: N (prefill) or B (decode)
  double TokensPerSecond() const { return time_s > 0 ? static_cast<double>(tokens) / time_s : 0; }
};

// Throws ridge::Error for a workload out of range (counts < 1, a context or
// prompt longer than 2^24 tokens, batch above 2^20).
PhaseCost AnalyzePhase(const ModelShape& shape, const Workload& workload, const HardwareProfile& hw,
                       const CostOptions& options = {});

// FLOPs / bytes of the operations that read weights (every one but attention).
double MatmulIntensity(const PhaseCost& phase);

struct SweepPoint {
  int64_t batch = 0;
  double intensity = 0;         // of the whole step
  double matmul_intensity = 0;  // of the weight matrix products alone (all but attention)
  double time_s = 0;        // per decode step
  double tokens_per_s = 0;  // batch / time_s
  double flops_per_s = 0;   // predicted attained: FLOPs / time_s
  bool compute_bound = false;
};

struct BatchSweep {
  std::vector<SweepPoint> points;           // batch 1, 2, 4, ... up to max_batch
  std::optional<int64_t> crossing_batch;    // smallest batch whose totals are compute-bound
  // Smallest batch at which the weight matrix products (QKV, output, FFN, LM
  // head) together reach the ridge: from there batching stops being free for
  // them, while attention (whose bytes grow with the batch) stays memory-bound.
  std::optional<int64_t> matmul_crossing_batch;
  // Intensity as the batch grows without bound: FLOPs per extra sequence over
  // the bytes per extra sequence (its KV cache and activations). When it is
  // below the ridge point, decode never becomes compute-bound at this context.
  double intensity_limit = 0;
};

BatchSweep SweepDecodeBatch(const ModelShape& shape, int64_t context, const HardwareProfile& hw,
                            const CostOptions& options = {}, int64_t max_batch = 1024);

struct QuantRow {
  GgmlType type = GgmlType::kF16;
  double weight_bytes = 0;  // read per decode step
  PhaseCost decode;
  PhaseCost prefill;
  double decode_speedup = 1;   // against the first row
  double prefill_speedup = 1;
};

// The same workloads with every matrix stored as each type (weight-only
// quantization). hardware_for gives the roof per type (a CPU's peak depends
// on the arithmetic the type's kernel uses).
std::vector<QuantRow> CompareWeightTypes(const ModelShape& shape, const std::vector<GgmlType>& types,
                                         const Workload& decode, const Workload& prefill,
                                         const std::function<HardwareProfile(GgmlType)>& hardware_for,
                                         const CostOptions& options = {});

}  // namespace ridge
