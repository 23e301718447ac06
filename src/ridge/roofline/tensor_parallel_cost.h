#pragma once
// Tensor parallelism on the roofline: the network as a third roof.
//
// N ranks each hold 1/N of every layer's heads and FFN rows and of the LM
// head, so each does 1/N of a step's FLOPs and moves 1/N of its weight and KV
// bytes: its compute/memory time is the single machine's ÷ N. In exchange
// each layer ends its attention and its FFN with an all-reduce of the
// [tokens, n_embd] activations; a ring all-reduce puts
//   2 · (N − 1)/N · n_embd · activation bytes
// on each rank's link per token per all-reduce, two all-reduces per layer, and
// costs 2 · (N − 1) link latencies each. Communication is taken as not
// overlapped with compute (ridge waits for it), so
//   step time(N) = step time(1) / N + link bytes / link bandwidth + latencies,
// which stops falling where the link time grows faster than the compute
// share shrinks: the N at which TP stops paying.
#include <cstdint>
#include <vector>

#include "ridge/roofline/cost_model.h"
#include "ridge/roofline/model_shape.h"

namespace ridge {

struct LinkProfile {
  double bytes_per_s = 0;  // each rank's link bandwidth, one direction
  double latency_s = 0;    // one message's latency (0: bandwidth only)
};

// Bytes one rank sends per token per layer: 2 all-reduces × 2·(N − 1)/N · n_embd · bytes.
double AllReduceBytesPerTokenPerLayer(int64_t n_embd, int n_ranks, double activation_bytes);

struct TensorParallelPoint {
  int n_ranks = 1;
  double rank_time_s = 0;  // the step's roofline time ÷ N
  double link_bytes = 0;   // per rank per step
  double link_time_s = 0;  // link bytes ÷ bandwidth + latencies
  double step_time_s = 0;  // rank + link
  double tokens_per_s = 0;
  double speedup = 1;       // against N = 1
  bool link_bound = false;  // the link takes longer than the rank's share of the step
};

struct TensorParallelSweep {
  std::vector<TensorParallelPoint> points;  // N = 1, 2, 4, ... while N divides the KV heads
  int best_n_ranks = 1;                     // the fastest step
};

// `phase` is the single machine's cost of the step (AnalyzePhase). Throws
// ridge::Error for a bandwidth that is not positive or a latency below 0.
TensorParallelSweep SweepTensorParallel(const ModelShape& shape, const PhaseCost& phase, const LinkProfile& link,
                                        double activation_bytes, int max_ranks = 64);

}  // namespace ridge
