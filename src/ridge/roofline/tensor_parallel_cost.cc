#include "ridge/roofline/tensor_parallel_cost.h"

#include "ridge/base/error.h"

namespace ridge {

double AllReduceBytesPerTokenPerLayer(int64_t n_embd, int n_ranks, double activation_bytes) {
  const double n = static_cast<double>(n_ranks);
  return 2.0 * (2.0 * (n - 1.0) / n * static_cast<double>(n_embd) * activation_bytes);
}

TensorParallelSweep SweepTensorParallel(const ModelShape& shape, const PhaseCost& phase, const LinkProfile& link,
                                        double activation_bytes, int max_ranks) {
  if (!(link.bytes_per_s > 0)) Fail("--link: the link bandwidth must be positive, got {} B/s", link.bytes_per_s);
  if (!(link.latency_s >= 0)) Fail("--link-latency: must be at least 0, got {} s", link.latency_s);
  const ModelConfig& c = shape.config;
  const double layers = static_cast<double>(c.n_layers);
  TensorParallelSweep sweep;
  for (int n = 1; n <= max_ranks && c.n_kv_heads % n == 0 && c.n_ff % n == 0; n *= 2) {
    TensorParallelPoint p;
    p.n_ranks = n;
    p.rank_time_s = phase.time_s / n;
    p.link_bytes =
        static_cast<double>(phase.tokens) * layers * AllReduceBytesPerTokenPerLayer(c.n_embd, n, activation_bytes);
    const double messages = n > 1 ? 2.0 * layers * 2.0 * (n - 1) : 0.0;  // ring steps of every all-reduce
    p.link_time_s = p.link_bytes / link.bytes_per_s + messages * link.latency_s;
    p.step_time_s = p.rank_time_s + p.link_time_s;
    p.tokens_per_s = static_cast<double>(phase.tokens) / p.step_time_s;
    p.speedup = sweep.points.empty() ? 1.0 : sweep.points.front().step_time_s / p.step_time_s;
    p.link_bound = p.link_time_s > p.rank_time_s;
    sweep.points.push_back(p);
  }
  double best = sweep.points.front().step_time_s;
  for (const TensorParallelPoint& p : sweep.points)
    if (p.step_time_s < best) {
      best = p.step_time_s;
      sweep.best_n_ranks = p.n_ranks;
    }
  return sweep;
}

}  // namespace ridge
