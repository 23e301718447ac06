#include "ridge/roofline/model_bench.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>

#include "ridge/base/clock.h"
#include "ridge/base/cpu_features.h"
#include "ridge/base/error.h"
#include "ridge/kv/paged_kv_cache.h"
#include "ridge/metrics/stats.h"
#include "ridge/roofline/bandwidth_meter.h"
#include "ridge/roofline/cost_model.h"
#include "ridge/roofline/hardware.h"
#include "ridge/roofline/model_shape.h"
#include "ridge/roofline/units.h"

namespace ridge {
namespace {

std::vector<TokenId> RandomTokens(int64_t n, int64_t n_vocab, std::mt19937_64& rng) {
  std::vector<TokenId> tokens(static_cast<size_t>(n));
  for (auto& t : tokens) t = static_cast<TokenId>(rng() % static_cast<uint64_t>(n_vocab));
  return tokens;
}

// Each kernel of the probe a prefill repetition is paired with runs this long
// (3 passes, the best counts): ~0.3 s a repetition for the three peaks.
constexpr double kPairedComputeSeconds = 0.03;

CostOptions HostCostOptions(GgmlType kv_type) {
  CostOptions o;
  o.kv_bytes_per_element = KvBytesPerElement(kv_type);
  o.activation_bytes = 4;  // ridge's CPU kernels keep activations in FP32
  return o;
}

// One prompt of n_prompt tokens after `depth` tokens already in the cache.
Workload PrefillWorkload(int64_t n_prompt, int64_t depth) {
  Workload w{Phase::kPrefill, n_prompt, 1, n_prompt};
  w.depth = depth;
  return w;
}

void SetBound(BenchFigure& f, const PhaseCost& cost, const HardwareProfile& hw) {
  f.bound_tokens_per_s = static_cast<double>(cost.tokens) / cost.roofline_time_s;
  const bool compute = cost.compute_bound;
  f.bound_by = compute ? "compute" : "memory";
  double attention_flops = 0;
  for (const OpCost& op : cost.ops)
    if (op.attention) attention_flops += op.flops;
  if (!compute) {
    f.roof = fmt::format("read {:.1f} GB/s", hw.bandwidth_bytes_per_s / 1e9);
  } else if (hw.AttentionPeak() != hw.peak_flops && attention_flops > 0.01 * cost.flops) {
    // Attention at depth is a visible share of the FLOPs, at its own peak.
    f.roof = fmt::format("{}; attention ({:.0f} % of FLOPs): {}", hw.peak_note, 100.0 * attention_flops / cost.flops,
                         hw.attention_peak_note);
  } else {
    f.roof = hw.peak_note;
  }
}

void Summarize(BenchFigure& f) {
  Distribution d = Describe(f.tokens_per_s);
  f.mean = d.mean;
  f.stddev = d.std;
}

enum class Roof { kRead, kWeightsPeak, kAttentionPeak };

// (max − min) / max over the probes of a roof: the bandwidth, or the peak
// HostProfile takes for these weights or this KV cache.
double RoofSpread(const ProbeSeries& probes, GgmlType weights, GgmlType kv_type, Roof which) {
  double lo = 0, hi = 0;
  for (size_t i = 0; i < probes.probes.size(); ++i) {
    const HardwareProfile h = HostProfile(probes.probes[i], weights, kv_type);
    const double roof = which == Roof::kRead          ? h.bandwidth_bytes_per_s
                        : which == Roof::kWeightsPeak ? h.peak_flops
                                                      : h.AttentionPeak();
    lo = i == 0 ? roof : std::min(lo, roof);
    hi = i == 0 ? roof : std::max(hi, roof);
  }
  return hi > 0 ? (hi - lo) / hi : 0;
}

// A "% of roofline" cell, or why it is withheld.
std::string PercentCell(double percent, double spread, double max_spread) {
  if (spread > max_spread) return fmt::format("- (probes {:.0f} % apart)", 100.0 * spread);
  return fmt::format("{:.1f} %", percent);
}

// The per-pass figure of each step the profile timed, then "other", each
// against its own roof: hw's, where paired_read / paired_peak say that hw's
// read / weights' peak is the test's paired roof (no probe spread applies).
std::vector<OpFigure> OpFigures(const OpProfile& ops, const HardwareProfile& hw, bool paired_read, bool paired_peak,
                                const ProbeSeries& probes, GgmlType weights, GgmlType kv_type) {
  std::vector<OpFigure> rows;
  const double passes = static_cast<double>(ops.forwards());
  if (passes == 0) return rows;
  const double pass_s = ops.forward_seconds() / passes;
  double steps_s = 0;
  for (int k = 0; k < kOpKinds; ++k) {
    const auto kind = static_cast<OpKind>(k);
    const OpTotals& t = ops.op(kind);
    if (t.calls == 0) continue;
    OpFigure f;
    f.step = OpName(kind);
    f.calls = static_cast<double>(t.calls) / passes;
    f.ms = 1e3 * t.seconds / passes;
    f.share = 100.0 * t.seconds / ops.forward_seconds();
    f.flops = t.flops / passes;
    f.bytes = t.bytes / passes;
    const bool weights_op = IsWeightOp(kind);
    const double peak = weights_op ? hw.peak_flops : hw.AttentionPeak();
    const double compute_s = f.flops / peak, memory_s = f.bytes / hw.bandwidth_bytes_per_s;
    if (compute_s + memory_s > 0) {
      const bool compute = compute_s >= memory_s;
      f.roofline_ms = 1e3 * std::max(compute_s, memory_s);
      f.bound = compute ? "compute" : "memory";
      const Roof roof = !compute ? Roof::kRead : weights_op ? Roof::kWeightsPeak : Roof::kAttentionPeak;
      f.paired = (roof == Roof::kRead && paired_read) || (roof == Roof::kWeightsPeak && paired_peak);
      f.roof_spread = f.paired ? 0 : RoofSpread(probes, weights, kv_type, roof);
    }
    steps_s += t.seconds / passes;
    rows.push_back(f);
  }
  OpFigure other;
  other.step = "other";
  other.calls = 1;
  other.ms = 1e3 * std::max(0.0, pass_s - steps_s);
  other.share = 100.0 * std::max(0.0, pass_s - steps_s) / pass_s;
  rows.push_back(other);
  return rows;
}

int64_t CacheTokens(int64_t n_tokens, int64_t block_tokens) { return (n_tokens + block_tokens - 1) / block_tokens; }

}  // namespace

double ExpectedExpertsHit(const Model::ExpertReads& reads, int64_t n_expert, int64_t batch) {
  double hit = 0;
  const int64_t n_layers = static_cast<int64_t>(reads.layer_tokens.size());
  for (int64_t layer = 0; layer < n_layers; ++layer) {
    const int64_t n = reads.layer_tokens[static_cast<size_t>(layer)];
    RIDGE_CHECK(n == 0 || n >= batch);  // the run's steps were batch tokens each
    if (n == 0) continue;
    for (int64_t e = 0; e < n_expert; ++e) {
      const int64_t c = reads.routes[static_cast<size_t>(layer * n_expert + e)];
      double miss = 1;  // C(n − c, batch) / C(n, batch), a factor at a time
      for (int64_t i = 0; i < batch && miss > 0; ++i)
        miss *= static_cast<double>(std::max<int64_t>(0, n - c - i)) / static_cast<double>(n - i);
      hit += 1.0 - miss;
    }
  }
  return hit;
}

std::vector<BenchFigure> BenchPromptAndGeneration(Model& model, const ProbeResult& probe,
                                                  const ModelBenchOptions& o) {
  const ModelConfig& c = model.config();
  if (o.depths.empty()) Fail("-d needs at least one depth");
  const int64_t max_depth = *std::max_element(o.depths.begin(), o.depths.end());
  if (*std::min_element(o.depths.begin(), o.depths.end()) < 0) Fail("-d depths must be at least 0");
  if (o.n_prompt < 1 || o.n_gen < 1 || max_depth + std::max(o.n_prompt, o.n_gen) + 1 > c.n_ctx_train)
    Fail("-p {} and -n {} must be at least 1 and, after -d {}, fit the model's context of {} tokens", o.n_prompt,
         o.n_gen, max_depth, c.n_ctx_train);
  if (o.repetitions < 1) Fail("-r must be at least 1, got {}", o.repetitions);
  ThreadPool pool(o.n_threads > 0 ? o.n_threads : HardwareThreads());
  const ModelShape shape = ShapeFromGguf(model.file());
  const HardwareProfile hw = HostProfile(probe, shape.main_weight_type, o.kv_type);
  const KvCacheShape kv_shape = model.KvShape(o.kv_type, 16);
  std::mt19937_64 rng(o.seed);
  std::vector<float> logits(static_cast<size_t>(c.n_vocab));

  const CostOptions costs = HostCostOptions(o.kv_type);
  std::unique_ptr<BandwidthMeter> meter;
  if (o.paired_roofs) meter = std::make_unique<BandwidthMeter>(pool, model.file().memory().bytes());

  std::vector<BenchFigure> figures;
  bool warmed_up = false;
  for (const int64_t depth : o.depths) {
    // One cache per depth: its first `depth` positions are filled once (untimed,
    // in passes of max_batch_tokens); every test writes only past them.
    const int64_t capacity = depth + std::max(o.n_prompt, o.n_gen);
    PagedKvCache cache(kv_shape, CacheTokens(capacity, kv_shape.block_tokens));
    RIDGE_CHECK(cache.Reserve(0, capacity));
    {
      const std::vector<TokenId> context = RandomTokens(depth, c.n_vocab, rng);
      const int64_t pass = std::max<int64_t>(1, o.max_batch_tokens);
      for (int64_t done = 0; done < depth; done += pass) {
        Batch batch;
        const int64_t end = std::min(depth, done + pass);
        for (int64_t i = done; i < end; ++i) batch.Add(context[static_cast<size_t>(i)], i, 0, i == end - 1);
        model.Forward(batch, cache, logits.data(), pool);
      }
    }
    std::vector<double> paired_reads, paired_ratios, pp_peaks, pp_ratios;
    BenchFigure pp, tg;
    // Set around each timed pass only (never the warm-up's, nor a probe).
    const auto profile = [&](OpProfile& ops, int rep) { model.set_op_profile(o.profile && rep >= 0 ? &ops : nullptr); };
    const std::string at = depth > 0 ? fmt::format(" @ d{}", depth) : "";
    pp.test = fmt::format("pp{}{}", o.n_prompt, at);
    tg.test = fmt::format("tg{}{}", o.n_gen, at);
    pp.depth = tg.depth = depth;
    pp.phase = Phase::kPrefill;
    tg.phase = Phase::kDecode;
    // rep -1 warms up: pages the weights in and sizes the forward pass's
    // scratch for n_prompt tokens. Growing it took ~120 ms inside the first
    // timed pp512 of tinyllama (buffers zeroed, their pages faulted in): 10 %
    // of that pass, when the warm-up was 8 tokens.
    for (int rep = warmed_up ? 0 : -1; rep < o.repetitions; ++rep) {
      const int64_t n_prompt = o.n_prompt, n_gen = rep < 0 ? 2 : o.n_gen;
      {
        Batch batch;
        std::vector<TokenId> prompt = RandomTokens(n_prompt, c.n_vocab, rng);
        for (int64_t i = 0; i < n_prompt; ++i)
          batch.Add(prompt[static_cast<size_t>(i)], depth + i, 0, i == n_prompt - 1);
        profile(pp.ops, rep);
        Clock::time_point start = Clock::now();
        model.Forward(batch, cache, logits.data(), pool);
        const double pp_s = SecondsSince(start);
        model.set_op_profile(nullptr);
        if (rep >= 0) pp.tokens_per_s.push_back(static_cast<double>(n_prompt) / pp_s);
        if (o.paired_roofs && rep >= 0) {  // the roof this prefill ran under: the peaks right after it
          ProbeResult after = ProbeArithmetic(pool, kPairedComputeSeconds);
          after.read_bytes_per_s = probe.read_bytes_per_s;
          const HardwareProfile now = HostProfile(after, shape.main_weight_type, o.kv_type);
          pp_peaks.push_back(now.peak_flops);
          pp_ratios.push_back(AnalyzePhase(shape, PrefillWorkload(n_prompt, depth), now, costs).roofline_time_s / pp_s);
        }
      }
      {
        // Like llama-bench's tg: generation after the depth, one token per step.
        std::vector<TokenId> tokens = RandomTokens(n_gen, c.n_vocab, rng);
        double decode_s = 0;
        for (int64_t i = 0; i < n_gen; ++i) {
          Batch batch;
          batch.Add(tokens[static_cast<size_t>(i)], depth + i, 0, true);
          profile(tg.ops, rep);
          const Clock::time_point start = Clock::now();
          model.Forward(batch, cache, logits.data(), pool);
          const double step_s = SecondsSince(start);
          model.set_op_profile(nullptr);
          decode_s += step_s;
          if (meter && rep >= 0) {  // the roof this step ran under: a read right after it
            HardwareProfile now = hw;
            now.bandwidth_bytes_per_s = meter->ReadBytesPerSecond();
            const PhaseCost cost = AnalyzePhase(shape, {Phase::kDecode, 1, 1, depth + i + 1}, now, costs);
            paired_reads.push_back(now.bandwidth_bytes_per_s);
            paired_ratios.push_back(cost.roofline_time_s / step_s);
          }
        }
        if (rep >= 0) tg.tokens_per_s.push_back(static_cast<double>(n_gen) / decode_s);
      }
    }
    warmed_up = true;
    Summarize(pp);
    Summarize(tg);
    if (!paired_ratios.empty()) {
      tg.paired_percent = 100.0 * Describe(paired_ratios).p50;
      tg.paired_read_bytes_per_s = Describe(paired_reads).p50;
    }
    if (!pp_ratios.empty()) {
      pp.paired_percent = 100.0 * Describe(pp_ratios).p50;
      pp.paired_peak_flops = Describe(pp_peaks).p50;
    }
    figures.push_back(pp);
    figures.push_back(tg);
  }
  std::vector<BatchFigure> no_batches;
  SetRooflineBounds(model, CombineProbes({probe}), o, figures, no_batches);
  return figures;
}

std::vector<BatchFigure> BenchBatches(Model& model, const ProbeResult& probe, const std::vector<int64_t>& batches,
                                      const ModelBenchOptions& o) {
  const ModelConfig& c = model.config();
  if (o.n_prompt + o.n_gen > c.n_ctx_train)
    Fail("-p {} + -n {} exceeds the model's context of {} tokens", o.n_prompt, o.n_gen, c.n_ctx_train);
  ThreadPool pool(o.n_threads > 0 ? o.n_threads : HardwareThreads());
  const ModelShape shape = ShapeFromGguf(model.file());
  const HardwareProfile hw = HostProfile(probe, shape.main_weight_type, o.kv_type);
  const KvCacheShape kv_shape = model.KvShape(o.kv_type, 16);
  std::mt19937_64 rng(o.seed);
  std::vector<BatchFigure> figures;
  {  // warm-up: page the weights in, size the scratch for the largest prefill pass (BenchPromptAndGeneration)
    const int64_t n = std::clamp<int64_t>(o.max_batch_tokens, 1, c.n_ctx_train);
    PagedKvCache cache(kv_shape, CacheTokens(n, kv_shape.block_tokens));
    RIDGE_CHECK(cache.Reserve(0, n));
    Batch batch;
    for (int64_t i = 0; i < n; ++i) batch.Add(1, i, 0, i == n - 1);
    std::vector<float> logits(static_cast<size_t>(c.n_vocab));
    model.Forward(batch, cache, logits.data(), pool);
  }
  for (int64_t B : batches) {
    if (B < 1) Fail("--batch sizes must be at least 1, got {}", B);
    PagedKvCache cache(kv_shape, B * CacheTokens(o.n_prompt + o.n_gen, kv_shape.block_tokens));
    for (int64_t s = 0; s < B; ++s) RIDGE_CHECK(cache.Reserve(s, o.n_prompt + o.n_gen));
    std::vector<float> logits(static_cast<size_t>(std::max<int64_t>(B, 1) * c.n_vocab));
    BatchFigure f;
    f.batch = B;
    // Prefill: every prompt, in passes of up to max_batch_tokens tokens.
    std::vector<std::vector<TokenId>> prompts;
    for (int64_t s = 0; s < B; ++s) prompts.push_back(RandomTokens(o.n_prompt + o.n_gen, c.n_vocab, rng));
    Clock::time_point start = Clock::now();
    Batch batch;
    for (int64_t s = 0; s < B; ++s)
      for (int64_t i = 0; i < o.n_prompt; ++i) {
        batch.Add(prompts[static_cast<size_t>(s)][static_cast<size_t>(i)], i, s, i == o.n_prompt - 1);
        if (batch.size() == o.max_batch_tokens || (s == B - 1 && i == o.n_prompt - 1)) {
          model.Forward(batch, cache, logits.data(), pool);
          batch.Clear();
        }
      }
    f.prefill_s = SecondsSince(start);
    // Decode: n_gen steps, each one token of every sequence.
    model.ResetExpertReads();
    model.set_op_profile(o.profile ? &f.decode_ops : nullptr);
    start = Clock::now();
    for (int64_t step = 0; step < o.n_gen; ++step) {
      batch.Clear();
      for (int64_t s = 0; s < B; ++s)
        batch.Add(prompts[static_cast<size_t>(s)][static_cast<size_t>(o.n_prompt + step)], o.n_prompt + step, s, true);
      model.Forward(batch, cache, logits.data(), pool);
    }
    f.decode_s = SecondsSince(start);
    model.set_op_profile(nullptr);
    for (int64_t s = 0; s < B; ++s) cache.SetStoredTokens(s, o.n_prompt + o.n_gen);
    const double b = static_cast<double>(B);
    f.prefill_tokens_per_s = b * static_cast<double>(o.n_prompt) / f.prefill_s;
    f.decode_tokens_per_s = b * static_cast<double>(o.n_gen) / f.decode_s;
    f.total_tokens_per_s = b * static_cast<double>(o.n_prompt + o.n_gen) / (f.prefill_s + f.decode_s);
    KvAccounting kv = cache.Accounting();
    f.kv_bytes_used = kv.bytes_used;
    f.kv_formula_bytes = kv.bytes_per_token * static_cast<double>(kv.tokens_stored);
    if (c.is_moe() && o.n_gen > 0) {
      const PhaseCost step =
          AnalyzePhase(shape, {Phase::kDecode, 1, B, o.n_prompt + o.n_gen / 2}, hw, HostCostOptions(o.kv_type));
      const Model::ExpertReads& reads = model.expert_reads();
      const double steps = static_cast<double>(o.n_gen), E = static_cast<double>(c.n_expert);
      f.experts_hit_per_step = static_cast<double>(reads.experts_hit) / steps;
      f.expert_bytes_per_step = static_cast<double>(reads.bytes) / steps;
      f.predicted_experts_hit_per_step = static_cast<double>(c.n_layers) * E *
                                         (1.0 - std::pow(1.0 - static_cast<double>(c.n_expert_used) / E, b));
      for (const OpCost& op : step.ops)
        if (op.name == "FFN experts") f.predicted_expert_bytes_per_step = op.weight_bytes;
      f.rates_experts_hit_per_step = ExpectedExpertsHit(reads, c.n_expert, B);
      // Every expert of these presets has the same bytes: the mean is each one's.
      if (reads.experts_hit > 0)
        f.rates_expert_bytes_per_step = f.rates_experts_hit_per_step * static_cast<double>(reads.bytes) /
                                        static_cast<double>(reads.experts_hit);
    }
    figures.push_back(f);
  }
  std::vector<BenchFigure> no_figures;
  SetRooflineBounds(model, CombineProbes({probe}), o, no_figures, figures);
  return figures;
}

void SetRooflineBounds(const Model& model, const ProbeSeries& probes, const ModelBenchOptions& o,
                       std::vector<BenchFigure>& figures, std::vector<BatchFigure>& batches) {
  const ModelShape shape = ShapeFromGguf(model.file());
  const HardwareProfile hw = HostProfile(probes.best, shape.main_weight_type, o.kv_type);
  const CostOptions costs = HostCostOptions(o.kv_type);
  for (BenchFigure& f : figures) {
    Workload w = PrefillWorkload(o.n_prompt, f.depth);
    // The average decode step attends over the depth and half the generated tokens.
    if (f.phase == Phase::kDecode) w = {Phase::kDecode, 1, 1, std::max<int64_t>(1, f.depth + o.n_gen / 2)};
    const PhaseCost cost = AnalyzePhase(shape, w, hw, costs);
    SetBound(f, cost, hw);
    f.bound_spread =
        RoofSpread(probes, shape.main_weight_type, o.kv_type, cost.compute_bound ? Roof::kWeightsPeak : Roof::kRead);
    // The steps of a test paired with its roofs (tg: the read after each step; pp: the weights' peak after each
    // repetition) meet those, as its paired % does; attention keeps the best probe's peak.
    HardwareProfile paired = hw;
    paired.attention_peak_flops = hw.AttentionPeak();
    if (f.paired_read_bytes_per_s > 0) paired.bandwidth_bytes_per_s = f.paired_read_bytes_per_s;
    if (f.paired_peak_flops > 0) paired.peak_flops = f.paired_peak_flops;
    f.op_figures = OpFigures(f.ops, paired, f.paired_read_bytes_per_s > 0, f.paired_peak_flops > 0, probes,
                             shape.main_weight_type, o.kv_type);
  }
  for (BatchFigure& f : batches) {
    const PhaseCost step = AnalyzePhase(shape, {Phase::kDecode, 1, f.batch, o.n_prompt + o.n_gen / 2}, hw, costs);
    f.decode_bound_tokens_per_s = static_cast<double>(step.tokens) / step.roofline_time_s;
    f.decode_bound_spread =
        RoofSpread(probes, shape.main_weight_type, o.kv_type, step.compute_bound ? Roof::kWeightsPeak : Roof::kRead);
    f.decode_op_figures = OpFigures(f.decode_ops, hw, false, false, probes, shape.main_weight_type, o.kv_type);
  }
}

namespace {

// --profile's table: every test's steps (pp, tg, a batch's decode), per forward pass.
std::string FormatOpFigures(const ModelBenchReport& r, bool& withheld) {
  std::vector<std::pair<std::string, const std::vector<OpFigure>*>> tests;
  for (const BenchFigure& f : r.figures) tests.emplace_back(f.test, &f.op_figures);
  for (const BatchFigure& f : r.batches)
    tests.emplace_back(fmt::format("batch {} decode", f.batch), &f.decode_op_figures);
  std::string out;
  for (const auto& [test, op_figures] : tests) {
    if (op_figures->empty()) continue;
    if (out.empty())
      out =
          "\nwhere a forward pass's time goes (--profile; per pass, the mean over the timed passes; a step's "
          "roofline: max(its arithmetic / its peak, its weight or KV bytes / read), against the roof its test was "
          "paired with where it was (bound '... paired'), else the best probe; a step's time includes the pool's "
          "wait for its slowest thread):\n"
          "| test | step | calls | ms | share | G op/s | GB/s | roofline ms | % of roofline | bound |\n"
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---|\n";
    for (const OpFigure& op : *op_figures) {
      const bool roof = op.roofline_ms > 0;
      withheld = withheld || (roof && op.roof_spread > r.max_probe_spread);
      const double s = op.ms / 1e3;
      out += fmt::format("| {} | {} | {:g} | {:.3f} | {:.1f} % | {} | {} | {} | {} | {} |\n", test, op.step, op.calls,
                         op.ms, op.share, op.flops > 0 ? fmt::format("{:.1f}", op.flops / s / 1e9) : "-",
                         op.bytes > 0 ? fmt::format("{:.1f}", op.bytes / s / 1e9) : "-",
                         roof ? fmt::format("{:.3f}", op.roofline_ms) : "-",
                         roof ? PercentCell(100.0 * op.roofline_ms / op.ms, op.roof_spread, r.max_probe_spread) : "-",
                         roof ? op.bound + (op.paired ? " paired" : "") : "-");
    }
  }
  return out;
}

nlohmann::json OpFigureJson(const OpFigure& op) {
  return {{"step", op.step},
          {"calls_per_pass", op.calls},
          {"ms_per_pass", op.ms},
          {"share_percent", op.share},
          {"flops_per_pass", op.flops},
          {"bytes_per_pass", op.bytes},
          {"roofline_ms", op.roofline_ms},
          {"bound", op.bound},
          {"paired", op.paired},
          {"roof_spread", op.roof_spread}};
}

}  // namespace

std::string FormatMarkdown(const ModelBenchReport& r) {
  std::string out = fmt::format(
      "model: {} ({}, {:.2f} GiB, {:.3f} B params); {} threads, kernels {}\n"
      "weights: {}\n"
      "probe ({}): read {:.2f} GB/s; FP32 FMA {:.1f} GFLOP/s; BF16 dot {:.1f} GFLOP/s; int8 dot {:.1f} Gop/s\n",
      r.model_name, r.weight_types, r.weight_bytes / double(1 << 30), static_cast<double>(r.n_params) / 1e9, r.n_threads,
      r.isa, r.weight_memory, r.probe_source, r.probes.best.read_bytes_per_s / 1e9,
      r.probes.best.fp32_flops_per_s / 1e9, r.probes.best.bf16_flops_per_s / 1e9, r.probes.best.int8_ops_per_s / 1e9);
  if (r.probes.n_probes > 1)
    out += fmt::format("the best of {} probes; they were apart by: read {:.0f} %, FP32 {:.0f} %, BF16 {:.0f} %, int8 {:.0f} %\n",
                       r.probes.n_probes, 100.0 * r.probes.read_spread, 100.0 * r.probes.fp32_spread,
                       100.0 * r.probes.bf16_spread, 100.0 * r.probes.int8_spread);
  out += "\n";
  bool withheld = false;
  if (!r.figures.empty()) {
    out += "| test | t/s | roofline t/s | % of roofline | % of paired roofline | bound | roof |\n"
           "|---|---:|---:|---:|---:|---|---|\n";
    for (const BenchFigure& f : r.figures) {
      std::string paired = "-";
      if (f.paired_percent > 0)
        paired = f.phase == Phase::kPrefill
                     ? fmt::format("{:.1f} % (peak {:.0f} G/s)", f.paired_percent, f.paired_peak_flops / 1e9)
                     : fmt::format("{:.1f} % (read {:.1f} GB/s)", f.paired_percent, f.paired_read_bytes_per_s / 1e9);
      withheld = withheld || f.bound_spread > r.max_probe_spread;
      out += fmt::format("| {} | {:.2f} ± {:.2f} | {:.2f} | {} | {} | {} | {} |\n", f.test, f.mean, f.stddev,
                         f.bound_tokens_per_s, PercentCell(f.percent_of_bound(), f.bound_spread, r.max_probe_spread),
                         paired, f.bound_by, f.roof);
    }
    if (std::any_of(r.figures.begin(), r.figures.end(), [](const BenchFigure& f) { return f.paired_percent > 0; }))
      out +=
          "paired roofline: median over decode steps of the step's roofline time, at the bandwidth of a read of "
          "the weights' own memory right after it, / its time; for pp, over repetitions, at the arithmetic peaks "
          "probed right after each (a shared host's speed drifts)\n";
  }
  if (!r.batches.empty()) {
    out += "| batch | prefill t/s | decode t/s | total t/s | decode roofline t/s | decode % | KV bytes used | KV formula bytes |\n"
           "|---:|---:|---:|---:|---:|---:|---:|---:|\n";
    for (const BatchFigure& f : r.batches) {
      withheld = withheld || f.decode_bound_spread > r.max_probe_spread;
      out += fmt::format("| {} | {:.2f} | {:.2f} | {:.2f} | {:.2f} | {} | {} | {:.0f} |\n", f.batch,
                         f.prefill_tokens_per_s, f.decode_tokens_per_s, f.total_tokens_per_s,
                         f.decode_bound_tokens_per_s,
                         PercentCell(100.0 * f.decode_tokens_per_s / f.decode_bound_tokens_per_s,
                                     f.decode_bound_spread, r.max_probe_spread),
                         f.kv_bytes_used, f.kv_formula_bytes);
    }
    for (const BatchFigure& f : r.batches)
      if (f.experts_hit_per_step > 0)
        out += fmt::format(
            "batch {}: experts read per decode step (all layers) {:.1f}, {:.1f} MiB; uniform routing predicts {:.1f}, "
            "{:.1f} MiB ({:+.1f} % bytes); this run's routing rates predict {:.1f}, {:.1f} MiB ({:+.1f} % bytes)\n",
            f.batch, f.experts_hit_per_step, f.expert_bytes_per_step / (1 << 20), f.predicted_experts_hit_per_step,
            f.predicted_expert_bytes_per_step / (1 << 20),
            100.0 * (f.expert_bytes_per_step / f.predicted_expert_bytes_per_step - 1.0), f.rates_experts_hit_per_step,
            f.rates_expert_bytes_per_step / (1 << 20),
            100.0 * (f.expert_bytes_per_step / f.rates_expert_bytes_per_step - 1.0));
    const BatchFigure& first = r.batches.front();
    if (first.batch == 1)
      for (const BatchFigure& f : r.batches)
        out += fmt::format("decode throughput at batch {} = {:.2f} x batch 1\n", f.batch,
                           f.decode_tokens_per_s / first.decode_tokens_per_s);
  }
  out += FormatOpFigures(r, withheld);
  if (withheld)
    out += fmt::format("a % of roofline is withheld where the probes of this run disagree on its roof by more than "
                       "{:.0f} %: the host's load moved the roof itself (the paired roofline of tg does not depend on "
                       "them)\n",
                       100.0 * r.max_probe_spread);
  return out;
}

std::string FormatJson(const ModelBenchReport& r) {
  nlohmann::json j;
  j["model"] = r.model_name;
  j["weight_types"] = r.weight_types;
  j["weight_bytes"] = r.weight_bytes;
  j["n_params"] = r.n_params;
  j["weight_memory"] = r.weight_memory;
  j["threads"] = r.n_threads;
  j["isa"] = r.isa;
  j["probe_source"] = r.probe_source;
  j["probe"] = nlohmann::json::parse(ProbeToJson(r.probes.best));
  j["probe_count"] = r.probes.n_probes;
  j["probe_spread"] = {{"read", r.probes.read_spread}, {"fp32", r.probes.fp32_spread}, {"bf16", r.probes.bf16_spread},
                       {"int8", r.probes.int8_spread}};
  j["max_probe_spread"] = r.max_probe_spread;
  for (const BenchFigure& f : r.figures)
    j["tests"].push_back({{"test", f.test}, {"depth", f.depth}, {"tokens_per_s", f.tokens_per_s}, {"mean", f.mean}, {"std", f.stddev},
                          {"roofline_tokens_per_s", f.bound_tokens_per_s}, {"percent_of_roofline", f.percent_of_bound()},
                          {"roof_spread", f.bound_spread}, {"bound", f.bound_by}, {"roof", f.roof},
                          {"paired_percent_of_roofline", f.paired_percent},
                          {"paired_read_bytes_per_s", f.paired_read_bytes_per_s},
                          {"paired_peak_flops", f.paired_peak_flops}});
  for (size_t i = 0; i < r.figures.size(); ++i)
    for (const OpFigure& op : r.figures[i].op_figures) j["tests"][i]["profile"].push_back(OpFigureJson(op));
  for (const BatchFigure& f : r.batches)
    j["batches"].push_back({{"batch", f.batch}, {"prefill_tokens_per_s", f.prefill_tokens_per_s},
                            {"decode_tokens_per_s", f.decode_tokens_per_s}, {"total_tokens_per_s", f.total_tokens_per_s},
                            {"prefill_s", f.prefill_s}, {"decode_s", f.decode_s}, {"kv_bytes_used", f.kv_bytes_used},
                            {"kv_formula_bytes", f.kv_formula_bytes},
                            {"decode_roofline_tokens_per_s", f.decode_bound_tokens_per_s},
                            {"decode_roof_spread", f.decode_bound_spread},
                            {"experts_hit_per_step", f.experts_hit_per_step},
                            {"expert_bytes_per_step", f.expert_bytes_per_step},
                            {"predicted_experts_hit_per_step", f.predicted_experts_hit_per_step},
                            {"predicted_expert_bytes_per_step", f.predicted_expert_bytes_per_step},
                            {"rates_experts_hit_per_step", f.rates_experts_hit_per_step},
                            {"rates_expert_bytes_per_step", f.rates_expert_bytes_per_step}});
  for (size_t i = 0; i < r.batches.size(); ++i)
    for (const OpFigure& op : r.batches[i].decode_op_figures)
      j["batches"][i]["decode_profile"].push_back(OpFigureJson(op));
  return j.dump(2);
}

}  // namespace ridge
