#include "ridge/roofline/step_cost.h"

#include <gtest/gtest.h>

#include <vector>

#include "ridge/base/error.h"
#include "ridge/roofline/model_presets.h"

namespace ridge {
namespace {

ModelShape Llama() { return ShapeFromPreset(FindModelPreset("llama-3.2-1b"), GgmlType::kF16); }

TEST(StepCost, OneChunkIsThatPhasesCost) {
  const HardwareProfile hw = FindHardware("h100");
  Workload decode;
  decode.phase = Phase::kDecode;
  decode.batch = 1;
  decode.context = 101;
  const PhaseCost p = AnalyzePhase(Llama(), decode, hw);
  const std::vector<StepChunk> one = {{false, 1, 100}};
  const StepCost s = AnalyzeStep(Llama(), one, hw);
  EXPECT_DOUBLE_EQ(s.flops, p.flops);
  EXPECT_DOUBLE_EQ(s.bytes, p.bytes);
  EXPECT_DOUBLE_EQ(s.weight_bytes, p.weight_bytes);
  EXPECT_DOUBLE_EQ(s.intensity, p.flops / p.bytes);
}

TEST(StepCost, AMixedStepReadsTheWeightsOnce) {
  const HardwareProfile hw = FindHardware("h100");
  const std::vector<StepChunk> decode = {{false, 1, 300}};
  const std::vector<StepChunk> prefill = {{true, 64, 32}};
  const std::vector<StepChunk> both = {{false, 1, 300}, {true, 64, 32}};
  const StepCost d = AnalyzeStep(Llama(), decode, hw);
  const StepCost p = AnalyzeStep(Llama(), prefill, hw);
  const StepCost m = AnalyzeStep(Llama(), both, hw);
  EXPECT_DOUBLE_EQ(m.flops, d.flops + p.flops);
  EXPECT_DOUBLE_EQ(m.weight_bytes, d.weight_bytes);
  EXPECT_DOUBLE_EQ(m.bytes, d.bytes + p.bytes - d.weight_bytes);
  EXPECT_DOUBLE_EQ(m.kv_bytes, d.kv_bytes + p.kv_bytes);
  // Batching raises the intensity: the same weights serve more tokens.
  EXPECT_GT(m.intensity, d.intensity);
}

TEST(StepCost, AnEmptyStepCostsNothingAndABadChunkIsAnError) {
  const HardwareProfile hw = FindHardware("h100");
  const StepCost none = AnalyzeStep(Llama(), {}, hw);
  EXPECT_EQ(none.flops, 0);
  EXPECT_EQ(none.intensity, 0);
  const std::vector<StepChunk> bad = {{true, 0, 0}};
  EXPECT_THROW(AnalyzeStep(Llama(), bad, hw), Error);
}

}  // namespace
}  // namespace ridge
