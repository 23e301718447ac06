// ridge bench's measurements are plumbing-checked on the real tiny model: every
// figure is positive, each bound is the roofline the cost model predicts for
// the probe given, and the report carries them. (Speed itself is a benchmark,
// never asserted.)
#include "ridge/roofline/model_bench.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "ridge/base/error.h"
#include "ridge/gguf/model_generator.h"
#include "ridge/roofline/cost_model.h"
#include "ridge/roofline/hardware.h"
#include "ridge/roofline/model_shape.h"
#include "random_model.h"
#include "stories_model.h"

namespace ridge {
namespace {

ProbeResult FakeProbe() {
  ProbeResult p;
  p.isa = "avx2";
  p.n_threads = 2;
  p.read_bytes_per_s = 10e9;
  p.fp32_flops_per_s = 100e9;
  p.bf16_flops_per_s = 200e9;
  p.int8_ops_per_s = 400e9;
  p.fp32_kernel = "test fp32";
  p.bf16_kernel = "test bf16";
  p.int8_kernel = "test int8";
  return p;
}

TEST(ModelBench, PromptAndGenerationFiguresAgainstTheGivenRoofline) {
  auto model = Model::Load(testing::Stories260kGguf());
  ModelBenchOptions o;
  o.n_prompt = 32;
  o.n_gen = 8;
  o.repetitions = 2;
  o.n_threads = 1;
  std::vector<BenchFigure> figures = BenchPromptAndGeneration(*model, FakeProbe(), o);
  ASSERT_EQ(figures.size(), 2u);
  EXPECT_EQ(figures[0].test, "pp32");
  EXPECT_EQ(figures[1].test, "tg8");
  const ModelShape shape = ShapeFromGguf(model->file());
  const HardwareProfile hw = HostProfile(FakeProbe(), shape.main_weight_type);
  CostOptions costs;
  costs.activation_bytes = 4;
  PhaseCost prefill = AnalyzePhase(shape, {Phase::kPrefill, 32, 1, 32}, hw, costs);
  for (const BenchFigure& f : figures) {
    ASSERT_EQ(f.tokens_per_s.size(), 2u);
    for (double t : f.tokens_per_s) EXPECT_GT(t, 0);
    EXPECT_GT(f.mean, 0);
    EXPECT_GT(f.bound_tokens_per_s, 0);
  }
  EXPECT_DOUBLE_EQ(figures[0].bound_tokens_per_s, 32.0 / prefill.roofline_time_s);
  // Decode of one sequence of a 260K-parameter F32 model: ~1 FLOP per 2 bytes, far below this ridge.
  EXPECT_EQ(figures[1].bound_by, "memory");
  // tg is paired with reads of the weights' memory after each step, pp with
  // the arithmetic peaks probed after each repetition.
  EXPECT_GT(figures[0].paired_percent, 0);
  EXPECT_LE(figures[0].paired_percent, 150);  // no step beats the roof it ran under by much
  EXPECT_GT(figures[0].paired_peak_flops, 1e8);
  EXPECT_EQ(figures[0].paired_read_bytes_per_s, 0);
  EXPECT_GT(figures[1].paired_percent, 0);
  EXPECT_GT(figures[1].paired_read_bytes_per_s, 1e8);
  EXPECT_EQ(figures[1].paired_peak_flops, 0);

  ModelBenchReport report;
  report.figures = figures;
  report.probes = CombineProbes({FakeProbe()});
  nlohmann::json j = nlohmann::json::parse(FormatJson(report));
  EXPECT_EQ(j["tests"].size(), 2u);
  EXPECT_NEAR(j["tests"][1]["percent_of_roofline"].get<double>(), figures[1].percent_of_bound(), 1e-9);
  EXPECT_NEAR(j["tests"][1]["paired_percent_of_roofline"].get<double>(), figures[1].paired_percent, 1e-9);
  EXPECT_NEAR(j["tests"][0]["paired_peak_flops"].get<double>(), figures[0].paired_peak_flops, 1e-9);
  EXPECT_NE(FormatMarkdown(report).find("| tg8 |"), std::string::npos);
  EXPECT_NE(FormatMarkdown(report).find("paired roofline"), std::string::npos);
}

// Two probes of one run that disagree on the bandwidth: the bounds use the
// better one, and a % against the bandwidth roof is withheld, not printed.
TEST(ModelBench, WithholdsPercentsWhoseRoofTheProbesDisagreeOn) {
  auto model = Model::Load(testing::Stories260kGguf());
  ModelBenchOptions o;
  o.n_prompt = 32;
  o.n_gen = 4;
  o.repetitions = 1;
  o.n_threads = 1;
  o.paired_roofs = false;
  ModelBenchReport report;
  ProbeResult slow = FakeProbe();
  slow.read_bytes_per_s /= 2;  // a busy host halved the read between start and end
  report.figures = BenchPromptAndGeneration(*model, slow, o);
  std::vector<BatchFigure> batches = BenchBatches(*model, slow, {2}, o);
  const double tg_bound_at_slow = report.figures[1].bound_tokens_per_s;
  report.probes = CombineProbes({slow, FakeProbe()});
  SetRooflineBounds(*model, report.probes, o, report.figures, batches);
  report.batches = batches;
  const BenchFigure& tg = report.figures[1];
  ASSERT_EQ(tg.bound_by, "memory");
  EXPECT_DOUBLE_EQ(tg.bound_spread, 0.5);
  EXPECT_NEAR(tg.bound_tokens_per_s, 2 * tg_bound_at_slow, 1e-6 * tg_bound_at_slow);  // against the better read
  const BenchFigure& pp = report.figures[0];
  EXPECT_DOUBLE_EQ(pp.bound_spread, pp.bound_by == "compute" ? 0.0 : 0.5);
  EXPECT_DOUBLE_EQ(report.batches[0].decode_bound_spread, 0.5);  // batch 2 of a tiny model: memory bound

  const std::string md = FormatMarkdown(report);
  EXPECT_NE(md.find("| tg4 | "), std::string::npos);
  EXPECT_NE(md.find("- (probes 50 % apart)"), std::string::npos) << md;
  EXPECT_NE(md.find("withheld"), std::string::npos) << md;
  EXPECT_NE(md.find("the best of 2 probes"), std::string::npos) << md;
  report.max_probe_spread = 0.6;  // a looser bound prints every %
  EXPECT_EQ(FormatMarkdown(report).find("apart)"), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(FormatJson(report));
  EXPECT_DOUBLE_EQ(j["probe_spread"]["read"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["tests"][1]["roof_spread"].get<double>(), 0.5);
}

// --profile times the timed passes only (not the warm-up): pp's every
// repetition, tg's every step, a batch's decode steps; each test's steps and
// "other" make up its pass, and the report prints and carries them.
TEST(ModelBench, ProfileTimesEveryStepOfTheTimedPassesOnly) {
  auto model = Model::Load(testing::RandomModelGguf(GgmlType::kQ8_0));
  ModelBenchOptions o;
  o.n_prompt = 24;
  o.n_gen = 3;
  o.repetitions = 2;
  o.n_threads = 1;
  o.paired_roofs = false;
  o.profile = true;
  ModelBenchReport report;
  report.figures = BenchPromptAndGeneration(*model, FakeProbe(), o);
  report.batches = BenchBatches(*model, FakeProbe(), {2}, o);
  report.probes = CombineProbes({FakeProbe()});
  SetRooflineBounds(*model, report.probes, o, report.figures, report.batches);
  ASSERT_EQ(report.figures.size(), 2u);
  EXPECT_EQ(report.figures[0].ops.forwards(), 2);
  EXPECT_EQ(report.figures[1].ops.forwards(), 2 * 3);
  EXPECT_EQ(report.batches[0].decode_ops.forwards(), 3);  // its decode steps, not its prefill
  EXPECT_EQ(report.batches[0].decode_ops.op(OpKind::kQkv).calls, 3 * model->config().n_layers);
  EXPECT_FALSE(report.batches[0].decode_op_figures.empty());
  const int64_t layers = model->config().n_layers;
  for (const BenchFigure& f : report.figures) {
    ASSERT_FALSE(f.op_figures.empty()) << f.test;
    EXPECT_EQ(f.op_figures.back().step, "other");
    double share = 0;
    for (const OpFigure& op : f.op_figures) {
      share += op.share;
      if (op.step == OpName(OpKind::kFfnDown)) {
        EXPECT_EQ(op.calls, static_cast<double>(layers));
        EXPECT_GT(op.roofline_ms, 0);
        // Its roof is the weights' int8 peak or the read, whichever is slower.
        const double peak_ms = 1e3 * op.flops / FakeProbe().int8_ops_per_s;
        const double read_ms = 1e3 * op.bytes / FakeProbe().read_bytes_per_s;
        EXPECT_NEAR(op.roofline_ms, std::max(peak_ms, read_ms), 1e-9 * op.roofline_ms);
        EXPECT_EQ(op.bound, peak_ms >= read_ms ? "compute" : "memory");
      }
      if (op.step == OpName(OpKind::kNorm)) {
        EXPECT_EQ(op.roofline_ms, 0);  // no work counted: no roof
      }
    }
    EXPECT_NEAR(share, 100.0, 1e-6) << f.test;
  }
  // pp's 24 tokens of this model's Q8_0 FFN are arithmetic at any probe here, decode's one token a read.
  const std::string md = FormatMarkdown(report);
  EXPECT_NE(md.find("where a forward pass's time goes"), std::string::npos) << md;
  EXPECT_NE(md.find("| pp24 | FFN down matmul |"), std::string::npos) << md;
  EXPECT_NE(md.find("| tg3 | attention |"), std::string::npos) << md;
  EXPECT_NE(md.find("| batch 2 decode | LM head | 1 |"), std::string::npos) << md;
  const nlohmann::json j = nlohmann::json::parse(FormatJson(report));
  EXPECT_EQ(j["tests"][0]["profile"].size(), report.figures[0].op_figures.size());
  EXPECT_EQ(j["tests"][1]["profile"].back()["step"], "other");
  EXPECT_EQ(j["batches"][0]["decode_profile"].size(), report.batches[0].decode_op_figures.size());

  // Paired with the roofs each test ran under, its steps meet those: tg's read, pp's weights' peak.
  o.paired_roofs = true;
  o.repetitions = 1;
  std::vector<BenchFigure> paired = BenchPromptAndGeneration(*model, FakeProbe(), o);
  std::vector<BatchFigure> no_batches;
  SetRooflineBounds(*model, report.probes, o, paired, no_batches);
  for (const BenchFigure& f : paired) {
    const double peak = f.paired_peak_flops > 0 ? f.paired_peak_flops : FakeProbe().int8_ops_per_s;
    const double read = f.paired_read_bytes_per_s > 0 ? f.paired_read_bytes_per_s : FakeProbe().read_bytes_per_s;
    EXPECT_GT(f.phase == Phase::kPrefill ? f.paired_peak_flops : f.paired_read_bytes_per_s, 0) << f.test;
    for (const OpFigure& op : f.op_figures) {
      if (op.step != OpName(OpKind::kFfnDown)) continue;
      const double peak_ms = 1e3 * op.flops / peak, read_ms = 1e3 * op.bytes / read;
      EXPECT_NEAR(op.roofline_ms, std::max(peak_ms, read_ms), 1e-9 * op.roofline_ms) << f.test;
      const bool memory = read_ms > peak_ms;
      EXPECT_EQ(op.paired, memory ? f.paired_read_bytes_per_s > 0 : f.paired_peak_flops > 0) << f.test;
      if (op.paired) {
        EXPECT_EQ(op.roof_spread, 0) << f.test;
      }
    }
  }

  o.profile = false;
  o.paired_roofs = false;
  const std::vector<BenchFigure> plain = BenchPromptAndGeneration(*model, FakeProbe(), o);
  EXPECT_EQ(plain[0].ops.forwards(), 0);
  EXPECT_EQ(plain[1].ops.forwards(), 0);
  EXPECT_EQ(BenchBatches(*model, FakeProbe(), {2}, o)[0].decode_ops.forwards(), 0);
}

TEST(ModelBench, BatchedSweepAccountsKvBytes) {
  auto model = Model::Load(testing::Stories260kGguf());
  ModelBenchOptions o;
  o.n_prompt = 16;
  o.n_gen = 4;
  o.n_threads = 1;
  o.max_batch_tokens = 24;  // prefill passes mix sequences
  o.kv_type = GgmlType::kF16;
  std::vector<BatchFigure> figures = BenchBatches(*model, FakeProbe(), {1, 3}, o);
  ASSERT_EQ(figures.size(), 2u);
  for (const BatchFigure& f : figures) {
    EXPECT_GT(f.prefill_tokens_per_s, 0);
    EXPECT_GT(f.decode_tokens_per_s, 0);
    EXPECT_GT(f.total_tokens_per_s, 0);
    // stories260K: 640 bytes per token in f16; 20 tokens per sequence in blocks of 16 → 2 blocks each.
    EXPECT_DOUBLE_EQ(f.kv_formula_bytes, 640.0 * 20 * static_cast<double>(f.batch));
    EXPECT_EQ(f.kv_bytes_used, 640 * 32 * f.batch);
  }
  EXPECT_THROW(BenchBatches(*model, FakeProbe(), {0}, o), Error);
}

// Routing counted per layer and expert: a step's union is estimated as that
// of `batch` tokens drawn from the counted ones. One token hits exactly k per
// layer; a skewed router hits fewer than a uniform one.
TEST(ModelBench, ExpectedExpertsHitFromRoutingRates) {
  Model::ExpertReads uniform;
  uniform.layer_tokens = {10, 10};
  uniform.routes.assign(8, 5);  // 2 layers × 4 experts, k = 2: every expert half the tokens
  EXPECT_NEAR(ExpectedExpertsHit(uniform, 4, 1), 2 * 2.0, 1e-12);
  // 3 of 10 tokens miss an expert that 5 took: (5 · 4 · 3) / (10 · 9 · 8) = 1/12.
  EXPECT_NEAR(ExpectedExpertsHit(uniform, 4, 3), 2 * 4 * (1 - 1.0 / 12), 1e-12);
  Model::ExpertReads skewed = uniform;
  skewed.routes = {10, 10, 0, 0, 10, 6, 4, 0};  // layer 0 always experts 0 and 1
  EXPECT_NEAR(ExpectedExpertsHit(skewed, 4, 1), 2 * 2.0, 1e-12);
  EXPECT_NEAR(ExpectedExpertsHit(skewed, 4, 3), 2.0 + 1 + (1 - 24.0 / 720) + (1 - 120.0 / 720), 1e-12);
  EXPECT_LT(ExpectedExpertsHit(skewed, 4, 3), ExpectedExpertsHit(uniform, 4, 3));
  EXPECT_EQ(ExpectedExpertsHit(Model::ExpertReads{}, 4, 3), 0);  // a dense model
}

// A random qwen3moe: the batched sweep counts the experts its routing hit
// per decode step beside both predictions of their union.
TEST(ModelBench, BatchedSweepCountsExpertsAgainstBothPredictions) {
  RandomModelOptions options;
  options.shape = {64, 128, 2, 4, 2, 256};
  options.shape.architecture = "qwen3moe";
  options.shape.head_dim = 32;
  options.shape.n_expert = 8;
  options.shape.n_expert_used = 2;
  options.shape.n_ff_exp = 64;
  options.seed = 5;
  auto model = Model::Load(testing::WriteRandomModelGguf(options, "model-bench-moe", "qwen3moe.gguf"));
  ModelBenchOptions o;
  o.n_prompt = 8;
  o.n_gen = 6;
  o.n_threads = 1;
  std::vector<BatchFigure> figures = BenchBatches(*model, FakeProbe(), {1, 6}, o);
  ASSERT_EQ(figures.size(), 2u);
  const double layers = 2, k = 2, experts = 8;
  // One token a step: exactly k experts a layer, whatever the routing.
  EXPECT_DOUBLE_EQ(figures[0].experts_hit_per_step, layers * k);
  EXPECT_NEAR(figures[0].rates_experts_hit_per_step, layers * k, 1e-9);
  EXPECT_NEAR(figures[0].predicted_experts_hit_per_step, layers * k, 1e-9);
  EXPECT_GT(figures[0].rates_expert_bytes_per_step, 0);
  const BatchFigure& six = figures[1];
  EXPECT_GT(six.experts_hit_per_step, layers * k);  // six random tokens do not all pick the same two
  EXPECT_LE(six.experts_hit_per_step, layers * experts);
  EXPECT_NEAR(six.predicted_experts_hit_per_step, layers * experts * (1 - std::pow(1 - k / experts, 6)), 1e-9);
  EXPECT_GT(six.rates_experts_hit_per_step, layers * k);
  EXPECT_LE(six.rates_experts_hit_per_step, layers * experts);
  ModelBenchReport report;
  report.batches = figures;
  EXPECT_NE(FormatMarkdown(report).find("this run's routing rates predict"), std::string::npos);
  EXPECT_NEAR(nlohmann::json::parse(FormatJson(report))["batches"][1]["rates_experts_hit_per_step"].get<double>(),
              six.rates_experts_hit_per_step, 1e-9);
}

}  // namespace
}  // namespace ridge
