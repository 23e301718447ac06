#include "ridge/roofline/tensor_parallel_cost.h"

#include <gtest/gtest.h>

#include "ridge/base/error.h"
#include "ridge/roofline/model_presets.h"

namespace ridge {
namespace {

ModelShape Llama7b() { return ShapeFromPreset(FindModelPreset("llama-2-7b"), GgmlType::kF16); }

PhaseCost Decode(int64_t batch) {
  Workload w;
  w.phase = Phase::kDecode;
  w.batch = batch;
  w.context = 1024;
  return AnalyzePhase(Llama7b(), w, FindHardware("h100"));
}

TEST(TensorParallelCost, AllReduceBytesAreTheRingFormula) {
  // 2 all-reduces × 2·(N−1)/N · n_embd · bytes.
  EXPECT_DOUBLE_EQ(AllReduceBytesPerTokenPerLayer(4096, 1, 2), 0);
  EXPECT_DOUBLE_EQ(AllReduceBytesPerTokenPerLayer(4096, 2, 2), 2 * (2 * 0.5 * 4096 * 2));
  EXPECT_DOUBLE_EQ(AllReduceBytesPerTokenPerLayer(4096, 4, 4), 2 * (2 * 0.75 * 4096 * 4));
}

TEST(TensorParallelCost, EachRankDoesItsShareAndPaysTheLink) {
  const PhaseCost phase = Decode(8);
  const LinkProfile link{50e9, 0};
  const TensorParallelSweep sweep = SweepTensorParallel(Llama7b(), phase, link, 2);
  ASSERT_EQ(sweep.points.size(), 6u);  // 1..32: llama-2-7b has 32 KV heads
  for (const TensorParallelPoint& p : sweep.points) {
    EXPECT_DOUBLE_EQ(p.rank_time_s, phase.time_s / p.n_ranks);
    const double bytes = 8.0 * 32 * AllReduceBytesPerTokenPerLayer(4096, p.n_ranks, 2);  // tokens × layers × per token
    EXPECT_DOUBLE_EQ(p.link_bytes, bytes);
    EXPECT_DOUBLE_EQ(p.step_time_s, phase.time_s / p.n_ranks + bytes / 50e9);
  }
}

TEST(TensorParallelCost, ASlowLinkStopsTpFromPaying) {
  const PhaseCost phase = Decode(64);
  // A fast link: every doubling still pays; a slow one with latency: none does.
  EXPECT_EQ(SweepTensorParallel(Llama7b(), phase, {1e15, 0}, 2).best_n_ranks, 32);
  EXPECT_EQ(SweepTensorParallel(Llama7b(), phase, {1e9 / 8, 50e-6}, 2).best_n_ranks, 1);
  const TensorParallelSweep mid = SweepTensorParallel(Llama7b(), phase, {100e9 / 8, 5e-6}, 2);
  EXPECT_GT(mid.best_n_ranks, 1);
  EXPECT_LT(mid.best_n_ranks, 32);
  for (const TensorParallelPoint& p : mid.points) {
    if (p.n_ranks > mid.best_n_ranks) {
      EXPECT_TRUE(p.link_bound) << p.n_ranks;
    }
  }
}

TEST(TensorParallelCost, RefusesALinkWithoutBandwidth) {
  EXPECT_THROW(SweepTensorParallel(Llama7b(), Decode(1), {0, 0}, 2), Error);
  EXPECT_THROW(SweepTensorParallel(Llama7b(), Decode(1), {1e9, -1}, 2), Error);
}

}  // namespace
}  // namespace ridge
