#pragma once
// ridge bench: measured prefill (pp) and decode (tg) throughput of a model on
// this machine, each set beside the roofline bound computed from a probe of
// the same machine (ideally taken in the same run), in the spirit of
// llama.cpp's llama-bench and llama-batched-bench.
//
//   tg bound: tokens/s = 1 / max(bytes per decode step / bandwidth, FLOPs / peak)
//   pp bound: tokens/s = N / max(FLOPs of an N-token prefill / peak, bytes / bandwidth)
// where the peak is that of the arithmetic the kernels use for the weight
// type (int8 dot for the quantized types, FP32 FMA for F32, F16 and BF16) —
// see HostProfile.
#include <cstdint>
#include <string>
#include <vector>

#include "ridge/model/model.h"
#include "ridge/model/op_profile.h"
#include "ridge/roofline/cost_model.h"
#include "ridge/roofline/probe.h"

namespace ridge {

struct ModelBenchOptions {
  int64_t n_prompt = 512;       // pp test: tokens prefilled in one pass
  int64_t n_gen = 128;          // tg test: tokens decoded one per step
  // pp and tg are measured after this many tokens are already in the KV cache
  // (llama-bench's -d), once per depth: the prompt then attends over depth +
  // its own tokens, each generated token over depth + those before it.
  std::vector<int64_t> depths = {0};
  int repetitions = 3;
  int n_threads = 0;            // 0: all hardware threads
  GgmlType kv_type = GgmlType::kF16;
  int64_t max_batch_tokens = 512;  // batched mode: tokens per prefill pass
  uint64_t seed = 1;            // the random prompt tokens
  // The roof each timed step ran under, measured right after it: for tg a
  // read of the model file's memory (the weights themselves) after each
  // decode step, for pp a short probe of the arithmetic peaks after each
  // repetition (BenchFigure::paired_percent).
  bool paired_roofs = true;
  // Time every step of the timed forward passes (BenchFigure::ops; the
  // batched sweep's decode steps, BatchFigure::decode_ops).
  bool profile = false;
};

// One step of a test's forward pass under --profile (OpKind, or "other": the
// pass's time outside every step), per pass: the mean over the timed passes.
struct OpFigure {
  std::string step;
  double calls = 0;
  double ms = 0;
  double share = 0;             // of the pass's time, in %
  double flops = 0, bytes = 0;  // the step's arithmetic and the weight or KV bytes it reads
  // max(flops / its peak, bytes / read) for the step alone (0: no work
  // counted); bound "compute" or "memory". The roof is the one its test was
  // paired with where there is one (tg: the median read after its steps; pp:
  // the weights' median peak after its repetitions), else the run's best probe.
  double roofline_ms = 0;
  std::string bound;
  bool paired = false;
  double roof_spread = 0;  // that roof's spread over the run's probes (0 when paired)
};

struct BenchFigure {
  std::string test;                 // "pp512", "tg128", "pp512 @ d4096"
  Phase phase = Phase::kPrefill;    // pp: kPrefill, tg: kDecode
  int64_t depth = 0;                // tokens in the KV cache before the test
  std::vector<double> tokens_per_s;  // one per repetition
  double mean = 0, stddev = 0;     // over repetitions (population std, as numpy)
  double bound_tokens_per_s = 0;    // the roofline's ceiling for this test
  std::string bound_by;             // "memory" or "compute"
  std::string roof;                 // which peak: "int8 dot 1.2 Tops/s", "read 35 GB/s"
  double bound_spread = 0;          // that roof's spread over the run's probes (ProbeSeries)
  // Paired with the host's speed right after each timed step (0: not
  // measured), the median over steps of (the step's roofline time then) ÷ (its
  // time), in %: tg against a read of the weights' own memory after each
  // decode step, pp against the arithmetic peaks probed after each
  // repetition (ProbeArithmetic).
  double paired_percent = 0;
  double paired_read_bytes_per_s = 0;  // tg: median of those reads
  double paired_peak_flops = 0;        // pp: median of the weights' peak in those probes
  OpProfile ops;                       // --profile: the timed passes' steps
  std::vector<OpFigure> op_figures;    // from ops, by SetRooflineBounds
  double percent_of_bound() const { return bound_tokens_per_s > 0 ? 100.0 * mean / bound_tokens_per_s : 0; }
};

struct BatchFigure {
  int64_t batch = 0;
  double prefill_tokens_per_s = 0;  // B × n_prompt ÷ prefill time
  double decode_tokens_per_s = 0;   // B × n_gen ÷ decode time, all sequences together
  double total_tokens_per_s = 0;    // B × (n_prompt + n_gen) ÷ total time
  double prefill_s = 0, decode_s = 0;
  int64_t kv_bytes_used = 0;        // blocks in use at the end, K and V, every layer
  double kv_formula_bytes = 0;      // bytes per token × tokens stored
  double decode_bound_tokens_per_s = 0;  // roofline for a decode step at this batch
  double decode_bound_spread = 0;        // its roof's spread over the run's probes
  // Mixture of experts (0 for a dense model), per decode step over every layer:
  // the experts the routing hit and their weights' bytes (Model::expert_reads),
  // beside the roofline's prediction for uniform routing, E·(1 − (1 − k/E)^B) a layer.
  double experts_hit_per_step = 0, expert_bytes_per_step = 0;
  double predicted_experts_hit_per_step = 0, predicted_expert_bytes_per_step = 0;
  // The same union predicted from this run's own routing rates per expert
  // (ExpectedExpertsHit): a trained or random router is rarely uniform.
  double rates_experts_hit_per_step = 0, rates_expert_bytes_per_step = 0;
  OpProfile decode_ops;                     // --profile: the decode steps' steps
  std::vector<OpFigure> decode_op_figures;  // from decode_ops, by SetRooflineBounds
};

struct ModelBenchReport {
  std::string model_name;
  std::string weight_types;
  double weight_bytes = 0;
  int64_t n_params = 0;
  std::string weight_memory;  // DescribeMemory of the model file (page size matters to bandwidth) and its layout
  int n_threads = 0;
  std::string isa;
  ProbeSeries probes;         // the bounds are against probes.best
  std::string probe_source;  // "measured at the run's start and end" or the file it came from
  // A "% of roofline" whose roof's probes spread wider than this is not
  // printed: the report says why instead.
  double max_probe_spread = 0.25;
  std::vector<BenchFigure> figures;
  std::vector<BatchFigure> batches;
};

// pp and tg figures for each depth (each test repeated options.repetitions
// times after a warm-up; the depth's tokens are prefilled once, untimed),
// bounded by `probe` (SetRooflineBounds sets them again from a series).
std::vector<BenchFigure> BenchPromptAndGeneration(Model& model, const ProbeResult& probe,
                                                  const ModelBenchOptions& options);
// Batched bench: for each B, B sequences of n_prompt random tokens prefilled,
// then n_gen decode steps of B tokens each.
std::vector<BatchFigure> BenchBatches(Model& model, const ProbeResult& probe, const std::vector<int64_t>& batches,
                                      const ModelBenchOptions& options);
// Experts a step of `batch` tokens hits, over every layer, if its tokens
// were `batch` tokens drawn at random from those `reads` counted: for each
// layer and expert that c of the layer's n tokens were routed to, the chance
// that some drawn token was, 1 − C(n − c, batch) / C(n, batch), the unbiased
// estimate of 1 − (1 − p)^batch for the expert's rate p (p = c / n plugged in
// reads the union low on a short run). One token hits exactly k a layer;
// uniform rates give about the roofline's E·(1 − (1 − k/E)^batch), a router
// skewed the same way for every token fewer. It assumes a step's tokens are
// like any of the run's: where each sequence keeps to its own experts, a
// step of distinct sequences hits more than this.
double ExpectedExpertsHit(const Model::ExpertReads& reads, int64_t n_expert, int64_t batch);

// Every figure's roofline bound against probes.best, with its roof's spread.
void SetRooflineBounds(const Model& model, const ProbeSeries& probes, const ModelBenchOptions& options,
                       std::vector<BenchFigure>& figures, std::vector<BatchFigure>& batches);

std::string FormatMarkdown(const ModelBenchReport& report);
std::string FormatJson(const ModelBenchReport& report);

}  // namespace ridge
