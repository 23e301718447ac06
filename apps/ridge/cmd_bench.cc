// ridge bench: prefill (pp) and decode (tg) throughput of a model, each as a
// percentage of this machine's roofline probed in the same run; with --batch,
// the batched sweep (prefill, decode and total tokens/s and KV bytes per batch size).
// `ridge bench serve ...` is the serving benchmark (cmd_bench_serve.cc).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ridge/base/cpu_features.h"
#include "ridge/base/error.h"
#include "ridge/command.h"
#include "ridge/engine/generator.h"
#include "ridge/speculation_flags.h"
#include "ridge/roofline/model_bench.h"
#include "ridge/roofline/model_shape.h"
#include "ridge/split_flags.h"

namespace ridge::app {
namespace {

struct BenchArgs {
  std::string model_path;
  ModelBenchOptions options;
  std::vector<int64_t> batches;
  std::string output = "md";
  std::string kv_type = "f16";
  std::string probe_file;
  int64_t probe_buffer_mib = 1024;
  double max_probe_spread_percent = 25;
  bool mmap = false;
  SpeculationFlags spec;
  std::string spec_prompt_file;
  SplitFlags split;  // --tp / --pp under mpirun
};

// The default workload of `ridge bench --spec`: a copy-heavy prompt (a short
// story, then its start again, so the continuation repeats the story), the
// case prompt lookup is for. Greedy, so both runs must give the same tokens.
constexpr const char* kCopyPrompt =
    "Lily had a red ball. She liked to play with it every day. One day, she lost the ball in the park. She was "
    "very sad. Her friend Tom helped her look for it. They found it under a big tree. Lily was happy again. "
    "Lily had a red ball. She liked to play with it every day. One day, she";

struct SpecRun {
  std::vector<double> decode_tokens_per_s;  // one per repetition
  GenerationResult last;
  double Mean() const {
    double sum = 0;
    for (double v : decode_tokens_per_s) sum += v;
    return decode_tokens_per_s.empty() ? 0 : sum / static_cast<double>(decode_tokens_per_s.size());
  }
  double Stddev() const {
    const double mean = Mean();
    double sum = 0;
    for (double v : decode_tokens_per_s) sum += (v - mean) * (v - mean);
    return decode_tokens_per_s.empty() ? 0 : std::sqrt(sum / static_cast<double>(decode_tokens_per_s.size()));
  }
};

// Median times (ms) of forward passes: passes[i] feeds `n_tokens` tokens of
// one sequence to `model` at the position after `n_context` tokens (each
// model its own KV cache holding the same context), the passes interleaved
// `repetitions` times after a warm-up round.
struct TimedPass {
  Model* model;
  int64_t n_tokens;
};
std::vector<double> MedianPassMs(const std::vector<TimedPass>& passes, ThreadPool& pool, GgmlType kv_type,
                                 int64_t n_context, int repetitions) {
  std::vector<std::unique_ptr<PagedKvCache>> caches;
  std::vector<std::vector<double>> times(passes.size());
  std::vector<float> logits;
  for (const TimedPass& p : passes) {
    const int64_t n_total = n_context + p.n_tokens;
    caches.push_back(std::make_unique<PagedKvCache>(p.model->KvShape(kv_type, 16), (n_total + 15) / 16));
    RIDGE_CHECK(caches.back()->Reserve(0, n_total));
    logits.resize(std::max(logits.size(), static_cast<size_t>(p.n_tokens * p.model->config().n_vocab)));
    Batch prefill;
    for (int64_t i = 0; i < n_context; ++i) prefill.Add(static_cast<TokenId>(1 + i % 100), i, 0, i == n_context - 1);
    p.model->Forward(prefill, *caches.back(), logits.data(), pool);
  }
  for (int r = 0; r <= repetitions; ++r) {  // r == 0: warm-up
    for (size_t i = 0; i < passes.size(); ++i) {
      Batch batch;
      for (int64_t t = 0; t < passes[i].n_tokens; ++t) batch.Add(static_cast<TokenId>(7 + t), n_context + t, 0, true);
      const Clock::time_point start = Clock::now();
      passes[i].model->Forward(batch, *caches[i], logits.data(), pool);
      if (r > 0) times[i].push_back(MillisBetween(start, Clock::now()));
    }
  }
  std::vector<double> medians;
  for (std::vector<double>& t : times) {
    std::sort(t.begin(), t.end());
    medians.push_back(t[t.size() / 2]);
  }
  return medians;
}

// The expected speedup of draft-model speculation (Leviathan et al.): tokens
// per verifying pass (1 - a^(K+1)) / (1 - a) for a per-token acceptance
// probability a, over the cost of a step, 1 + K c, c being a draft pass's
// cost in target passes.
double ExpectedTokensPerPass(double alpha, int64_t k) {
  if (alpha >= 1.0) return static_cast<double>(k + 1);
  return (1.0 - std::pow(alpha, static_cast<double>(k + 1))) / (1.0 - alpha);
}

// Decode tokens/s at batch 1, greedy, of the same prompt with and without
// speculation, the two interleaved repetition by repetition in this run.
// With a draft model K is fixed (no adaptive K), as the analytic expectation
// printed beside the measured speedup assumes.
int BenchSpeculation(const BenchArgs& a, SpeculationOptions spec) {
  std::string prompt = kCopyPrompt;
  if (!a.spec_prompt_file.empty()) {
    std::ifstream in(a.spec_prompt_file, std::ios::binary);
    if (!in) Fail("--spec-prompt-file: cannot read '{}'", a.spec_prompt_file);
    std::stringstream text;
    text << in.rdbuf();
    prompt = text.str();
  }
  const FileBacking backing = a.mmap ? FileBacking::kMapped : FileBacking::kHugePageMemory;
  auto model = Model::Load(a.model_path, backing);
  Tokenizer tokenizer = Tokenizer::FromGguf(model->file());
  const std::unique_ptr<Model> draft = a.spec.LoadDraft(spec, tokenizer, backing);
  if (draft) spec.adaptive = false;
  ThreadPool pool(a.options.n_threads > 0 ? a.options.n_threads : HardwareThreads());
  Generator generator(*model, tokenizer, pool);
  GenerateOptions options;
  options.sampling.temperature = 0;
  options.max_new_tokens = a.options.n_gen;
  options.kv_type = a.options.kv_type;
  std::fprintf(stderr, "decoding %lld tokens of a copy-heavy prompt, %d repetitions with and without speculation...\n",
               static_cast<long long>(a.options.n_gen), a.options.repetitions);
  SpecRun plain, speculative;
  for (int r = 0; r <= a.options.repetitions; ++r) {  // r == 0: warm-up, not counted
    for (SpecRun* run : {&plain, &speculative}) {
      options.speculation = run == &plain ? SpeculationOptions{} : spec;
      run->last = generator.Generate(prompt, options, nullptr);
      if (r > 0) run->decode_tokens_per_s.push_back(run->last.DecodeTokensPerSecond());
    }
  }
  const bool same = plain.last.output_tokens == speculative.last.output_tokens;
  std::vector<TimedPass> passes = {{model.get(), 1}, {model.get(), spec.num_tokens + 1}};
  if (draft) passes.push_back({draft.get(), 1});
  const std::vector<double> pass_ms =
      MedianPassMs(passes, pool, a.options.kv_type, static_cast<int64_t>(plain.last.prompt_tokens.size()),
                   std::max(5, a.options.repetitions));
  const double verify_cost = pass_ms[1] / pass_ms[0];
  const SpecDecodeCounts& c = speculative.last.speculation;
  const double speedup = plain.Mean() > 0 ? speculative.Mean() / plain.Mean() : 0;
  // Draft model: the analytic expectation from the measured acceptance and step cost ratio.
  const double alpha = c.AcceptanceRate();
  const double draft_cost = draft ? pass_ms[2] / pass_ms[0] : 0;
  const double tokens_per_pass = c.verify_steps > 0 ? static_cast<double>(c.emitted_tokens) / c.verify_steps : 0;
  const double expected_tokens_per_pass = ExpectedTokensPerPass(alpha, spec.num_tokens);
  const double expected_speedup = expected_tokens_per_pass / (1.0 + static_cast<double>(spec.num_tokens) * draft_cost);
  // The same with the verifying pass's measured cost in place of 1: on a
  // CPU it is well above a decode pass (the formula's assumption).
  const double expected_speedup_with_verify_cost =
      expected_tokens_per_pass / (verify_cost + static_cast<double>(spec.num_tokens) * draft_cost);
  const std::string model_name = model->file().GetString("general.name").value_or(a.model_path);
  const std::string method =
      draft ? fmt::format("draft model K={}", spec.num_tokens) : fmt::format("prompt lookup K={}", spec.num_tokens);
  if (a.output == "json") {
    nlohmann::json j = {
        {"model", model_name}, {"isa", IsaName(ActiveIsa())}, {"threads", pool.n_threads()},
        {"method", method},
        {"prompt_tokens", plain.last.prompt_tokens.size()}, {"output_tokens", plain.last.output_tokens.size()},
        {"plain_decode_tokens_per_s", plain.decode_tokens_per_s},
        {"spec_decode_tokens_per_s", speculative.decode_tokens_per_s}, {"speedup", speedup},
        {"spec_tokens", spec.num_tokens}, {"drafted", c.draft_tokens}, {"accepted", c.accepted_tokens},
        {"acceptance_rate", c.AcceptanceRate()}, {"mean_accepted_length", c.MeanAcceptedLength()},
        {"plain_decode_passes", plain.last.decode_passes}, {"spec_decode_passes", speculative.last.decode_passes},
        {"identical_output", same}, {"verify_pass_cost_ratio", verify_cost}};
    if (draft) {
      j["draft_model"] = draft->file().GetString("general.name").value_or(a.spec.draft_path);
      j["draft_pass_cost_ratio"] = draft_cost;
      j["tokens_per_verifying_pass"] = tokens_per_pass;
      j["expected_tokens_per_verifying_pass"] = expected_tokens_per_pass;
      j["expected_speedup"] = expected_speedup;
      j["expected_speedup_with_verify_cost"] = expected_speedup_with_verify_cost;
    }
    std::puts(j.dump(2).c_str());
  } else {
    std::printf("model %s, %s, %d threads, batch 1, greedy, %zu prompt tokens, %zu output tokens\n\n",
                model_name.c_str(), IsaName(ActiveIsa()), pool.n_threads(), plain.last.prompt_tokens.size(),
                plain.last.output_tokens.size());
    std::printf(
        "| decoding | decode tokens/s | decode passes | drafted | accepted | acceptance | mean accepted length |\n");
    std::printf("|---|---|---|---|---|---|---|\n");
    std::printf("| plain | %.1f ± %.1f | %lld | | | | |\n", plain.Mean(), plain.Stddev(),
                static_cast<long long>(plain.last.decode_passes));
    std::printf("| %s | %.1f ± %.1f | %lld | %lld | %lld | %.1f%% | %.2f |\n", method.c_str(), speculative.Mean(),
                speculative.Stddev(), static_cast<long long>(speculative.last.decode_passes),
                static_cast<long long>(c.draft_tokens), static_cast<long long>(c.accepted_tokens),
                100.0 * c.AcceptanceRate(), c.MeanAcceptedLength());
    std::printf("\nspeedup %.2fx (same run, interleaved); outputs identical: %s\n", speedup, same ? "yes" : "NO");
    std::printf("a verifying pass of 1 + %lld tokens costs %.2fx a 1-token decode pass (median, this model, same run)\n",
                static_cast<long long>(spec.num_tokens), verify_cost);
    if (draft) {
      std::printf("\n| | measured | analytic, from alpha = %.3f, c = %.3f, K = %lld | the same with the verifying "
                  "pass's cost v = %.2f |\n|---|---|---|---|\n",
                  alpha, draft_cost, static_cast<long long>(spec.num_tokens), verify_cost);
      std::printf("| tokens per verifying pass | %.2f | %.2f = (1 - a^(K+1)) / (1 - a) | |\n", tokens_per_pass,
                  expected_tokens_per_pass);
      std::printf("| speedup | %.2fx | %.2fx = that / (1 + K c) | %.2fx = that / (v + K c) |\n", speedup,
                  expected_speedup, expected_speedup_with_verify_cost);
      std::printf("\nalpha: accepted / drafted tokens; c: a 1-token pass of the draft %s ÷ one of the target "
                  "(median, same run); the formula takes a verifying pass to cost one decode pass\n",
                  draft->file().GetString("general.name").value_or(a.spec.draft_path).c_str());
    }
  }
  return same ? 0 : 1;
}

// --tp N / --pp N under `mpirun -np N`: pp and tg of the split model with
// rank 0's communication per forward pass beside the measured link's prediction.
// Options the split bench (pp and tg over the ranks) does not measure yet:
// refused by name rather than silently ignored.
void RefuseUnsplitOptions(const BenchArgs& a, const SpeculationOptions& spec) {
  const char* flag = !a.batches.empty()                            ? "--batch"
                     : spec.enabled()                              ? "--spec/--draft"
                     : a.options.depths != std::vector<int64_t>{0} ? "--depth"
                     : a.output != "md"                            ? "--output json"
                     : !a.probe_file.empty()                       ? "--probe-file"
                     : a.mmap                                      ? "--mmap"
                     : a.options.profile                           ? "--profile"
                                                                   : nullptr;
  if (flag != nullptr) Fail("{} is not supported with --tp/--pp: the split bench measures pp and tg only", flag);
}

int BenchSplit(const BenchArgs& a) {
#ifdef RIDGE_HAVE_MPI
  return RunSplitFromFlags(a.split, a.model_path, a.options.n_threads, a.options.kv_type, true,
                           [&](mpi::SplitRank& rank) {
    std::fprintf(stderr, "running pp%lld and tg%lld, %d repetitions, split across ranks...\n",
                 static_cast<long long>(a.options.n_prompt), static_cast<long long>(a.options.n_gen),
                 a.options.repetitions);
    const auto figures = mpi::BenchSplit(rank.model, rank.pool, rank.link, rank.link_measured, a.options.n_prompt,
                                         a.options.n_gen, a.options.kv_type, a.options.repetitions);
    std::fputs(mpi::FormatSplitBench(rank.model, rank.link_measured, figures, rank.pool.n_threads()).c_str(), stdout);
    return 0;
  });
#else
  (void)a;
  FailWithoutMpi();
#endif
}

CommandRegistration kBench{{"bench", "Measure prefill/decode tokens/s against this machine's probed roofline "
                                     "(`ridge bench serve` benchmarks a server)",
  [](CLI::App& sub) -> std::function<int()> {
    auto a = std::make_shared<BenchArgs>();
    sub.add_option("-m,--model", a->model_path, "GGUF model file")->required();
    sub.add_option("-p,--n-prompt", a->options.n_prompt, "prompt tokens (pp test; per sequence with --batch)");
    sub.add_option("-n,--n-gen", a->options.n_gen, "generated tokens (tg test; per sequence with --batch)");
    sub.add_option("-d,--depth", a->options.depths,
                   "tokens already in the KV cache before pp and tg, a list like 0,4096 (like llama-bench's -d)")
        ->delimiter(',');
    sub.add_option("-t,--threads", a->options.n_threads, "threads (default: all hardware threads)");
    sub.add_option("-r,--repetitions", a->options.repetitions, "repetitions of each test");
    sub.add_option("-o,--output", a->output, "md or json")->check(CLI::IsMember({"md", "json"}));
    sub.add_option("--batch", a->batches, "batch sizes for the batched sweep, e.g. 1,4,16,64")->delimiter(',');
    sub.add_option("--max-batch-tokens", a->options.max_batch_tokens, "tokens per prefill pass in the batched sweep");
    sub.add_option("--kv-type", a->kv_type,
                   "KV cache type: f16, bf16 (attention takes the BF16 dot on AVX-512 BF16 CPUs), f32, q8_0");
    sub.add_option("--probe-file", a->probe_file, "use a probe saved by `ridge roofline --probe --save` instead of probing now");
    sub.add_option("--probe-buffer-mib", a->probe_buffer_mib, "bandwidth probe buffer size");
    sub.add_option("--max-probe-spread", a->max_probe_spread_percent,
                   "withhold a % of roofline whose roof the run's two probes measured further apart than this, in %")
        ->check(CLI::Range(0.0, 100.0));
    sub.add_flag("--mmap", a->mmap, kMmapFlagHelp);
    sub.add_flag("--profile", a->options.profile,
                 "time each step of the forward pass (matmuls by role, attention, norms...) in the timed pp and tg "
                 "passes (with --batch: each batch's decode steps), each beside its own roofline");
    AddSpeculationFlags(sub, a->spec);
    sub.add_option("--spec-prompt-file", a->spec_prompt_file,
                   "with --spec or --draft: the prompt to decode from (default: a built-in copy-heavy story)");
    AddSplitFlags(sub, a->split);
    return [a]() {
      auto kv = ParseGgmlType(a->kv_type);
      if (!kv) Fail("--kv-type: unknown type '{}'", a->kv_type);
      a->options.kv_type = *kv;
      const SpeculationOptions spec = a->spec.Resolve();
      CheckSplitFlags(a->split);
      if (a->split.requested()) {
        RefuseUnsplitOptions(*a, spec);
        return BenchSplit(*a);
      }
      if (a->options.profile && spec.enabled())
        Fail("--profile times the pp and tg tests' and the batched sweep's passes: not with --spec/--draft");
      if (spec.enabled()) return BenchSpeculation(*a, spec);
      auto model = Model::Load(a->model_path, a->mmap ? FileBacking::kMapped : FileBacking::kHugePageMemory);
      ModelBenchReport report;
      report.weight_memory =
          DescribeMemory(model->file().memory()) + "; " + DescribeWeightLayout(model->weights().layout);
      const ModelShape shape = ShapeFromGguf(model->file());
      report.model_name = model->file().GetString("general.name").value_or(a->model_path);
      report.weight_types = shape.weight_types;
      report.weight_bytes = shape.total_weight_bytes;
      for (const auto& t : model->file().tensors()) report.n_params += t.n_elements;
      report.n_threads = a->options.n_threads > 0 ? a->options.n_threads : HardwareThreads();
      report.isa = IsaName(ActiveIsa());
      // This host's roof, probed at the start and again at the end of the run
      // (the best of each figure counts; how far apart they were decides
      // whether a "% of roofline" is printed), or loaded from a file.
      ProbeOptions po;
      po.n_threads = report.n_threads;
      po.buffer_bytes = a->probe_buffer_mib << 20;
      const auto probe = [&](const char* when) {
        std::fprintf(stderr, "probing this machine's bandwidth and peak arithmetic with %d threads (%s)...\n",
                     report.n_threads, when);
        return RunProbe(po);
      };
      std::vector<ProbeResult> probes;
      if (!a->probe_file.empty()) {
        probes.push_back(LoadProbe(a->probe_file));
        report.probe_source = "loaded from " + a->probe_file;
      } else {
        probes.push_back(probe("start of the run"));
        report.probe_source = "measured at the start and end of this run";
      }
      if (a->batches.empty()) {
        std::fprintf(stderr, "running pp%lld and tg%lld at %zu depth(s), %d repetitions...\n",
                     static_cast<long long>(a->options.n_prompt), static_cast<long long>(a->options.n_gen),
                     a->options.depths.size(), a->options.repetitions);
        report.figures = BenchPromptAndGeneration(*model, probes.front(), a->options);
      } else {
        std::fprintf(stderr, "running the batched sweep...\n");
        report.batches = BenchBatches(*model, probes.front(), a->batches, a->options);
      }
      if (a->probe_file.empty()) probes.push_back(probe("end of the run"));
      report.probes = CombineProbes(probes);
      report.max_probe_spread = a->max_probe_spread_percent / 100.0;
      SetRooflineBounds(*model, report.probes, a->options, report.figures, report.batches);
      std::string text = a->output == "json" ? FormatJson(report) : FormatMarkdown(report);
      std::fputs(text.c_str(), stdout);
      std::fputc('\n', stdout);
      return 0;
    };
  }}};

}  // namespace
}  // namespace ridge::app
