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
  bool mmap = false;
  SpeculationFlags spec;
  std::string spec_prompt_file;
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

// What a verifying pass costs against a plain decode pass: the median time of
// a forward pass over 1 + K tokens of one sequence ÷ that of 1 token, both at
// the position after `n_context` tokens, interleaved `repetitions` times.
// With a tokens-per-pass figure measured elsewhere (a real model's
// acceptance on a copy workload) it gives the speedup this shape would see.
double VerifyPassCostRatio(Model& model, ThreadPool& pool, GgmlType kv_type, int64_t n_context, int64_t k,
                           int repetitions) {
  const int64_t n_total = n_context + k + 1;
  KvCacheShape shape = model.KvShape(kv_type, 16);
  PagedKvCache cache(shape, (n_total + 15) / 16);
  RIDGE_CHECK(cache.Reserve(0, n_total));
  std::vector<float> logits(static_cast<size_t>((k + 1) * model.config().n_vocab));
  Batch prefill;
  for (int64_t i = 0; i < n_context; ++i) prefill.Add(static_cast<TokenId>(1 + i % 100), i, 0, i == n_context - 1);
  model.Forward(prefill, cache, logits.data(), pool);
  std::vector<double> single_ms, verify_ms;
  for (int r = 0; r <= repetitions; ++r) {  // r == 0: warm-up
    for (int64_t n : {int64_t{1}, k + 1}) {
      Batch batch;
      for (int64_t i = 0; i < n; ++i) batch.Add(static_cast<TokenId>(7 + i), n_context + i, 0, true);
      const Clock::time_point start = Clock::now();
      model.Forward(batch, cache, logits.data(), pool);
      if (r > 0) (n == 1 ? single_ms : verify_ms).push_back(MillisBetween(start, Clock::now()));
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return median(verify_ms) / median(single_ms);
}

// Decode tokens/s at batch 1, greedy, of the same prompt with and without
// speculation, the two interleaved repetition by repetition in this run.
int BenchSpeculation(const BenchArgs& a, const SpeculationOptions& spec) {
  std::string prompt = kCopyPrompt;
  if (!a.spec_prompt_file.empty()) {
    std::ifstream in(a.spec_prompt_file, std::ios::binary);
    if (!in) Fail("--spec-prompt-file: cannot read '{}'", a.spec_prompt_file);
    std::stringstream text;
    text << in.rdbuf();
    prompt = text.str();
  }
  auto model = Model::Load(a.model_path, a.mmap ? FileBacking::kMapped : FileBacking::kHugePageMemory);
  Tokenizer tokenizer = Tokenizer::FromGguf(model->file());
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
  const double verify_cost = VerifyPassCostRatio(*model, pool, a.options.kv_type,
                                                 static_cast<int64_t>(plain.last.prompt_tokens.size()), spec.num_tokens,
                                                 std::max(5, a.options.repetitions));
  const SpecDecodeCounts& c = speculative.last.speculation;
  const double speedup = plain.Mean() > 0 ? speculative.Mean() / plain.Mean() : 0;
  const std::string model_name = model->file().GetString("general.name").value_or(a.model_path);
  if (a.output == "json") {
    nlohmann::json j = {
        {"model", model_name}, {"isa", IsaName(ActiveIsa())}, {"threads", pool.n_threads()},
        {"prompt_tokens", plain.last.prompt_tokens.size()}, {"output_tokens", plain.last.output_tokens.size()},
        {"plain_decode_tokens_per_s", plain.decode_tokens_per_s},
        {"spec_decode_tokens_per_s", speculative.decode_tokens_per_s}, {"speedup", speedup},
        {"spec_tokens", spec.num_tokens}, {"drafted", c.draft_tokens}, {"accepted", c.accepted_tokens},
        {"acceptance_rate", c.AcceptanceRate()}, {"mean_accepted_length", c.MeanAcceptedLength()},
        {"plain_decode_passes", plain.last.decode_passes}, {"spec_decode_passes", speculative.last.decode_passes},
        {"identical_output", same}, {"verify_pass_cost_ratio", verify_cost}};
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
    std::printf("| prompt lookup K=%lld | %.1f ± %.1f | %lld | %lld | %lld | %.1f%% | %.2f |\n",
                static_cast<long long>(spec.num_tokens), speculative.Mean(), speculative.Stddev(),
                static_cast<long long>(speculative.last.decode_passes), static_cast<long long>(c.draft_tokens),
                static_cast<long long>(c.accepted_tokens), 100.0 * c.AcceptanceRate(), c.MeanAcceptedLength());
    std::printf("\nspeedup %.2fx (same run, interleaved); outputs identical: %s\n", speedup, same ? "yes" : "NO");
    std::printf("a verifying pass of 1 + %lld tokens costs %.2fx a 1-token decode pass (median, this model, same run)\n",
                static_cast<long long>(spec.num_tokens), verify_cost);
  }
  return same ? 0 : 1;
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
    sub.add_option("--kv-type", a->kv_type, "KV cache type: f16, bf16, f32, q8_0");
    sub.add_option("--probe-file", a->probe_file, "use a probe saved by `ridge roofline --probe --save` instead of probing now");
    sub.add_option("--probe-buffer-mib", a->probe_buffer_mib, "bandwidth probe buffer size");
    sub.add_flag("--mmap", a->mmap, kMmapFlagHelp);
    AddSpeculationFlags(sub, a->spec);
    sub.add_option("--spec-prompt-file", a->spec_prompt_file,
                   "with --spec: the prompt to decode from (default: a built-in copy-heavy story)");
    return [a]() {
      auto kv = ParseGgmlType(a->kv_type);
      if (!kv) Fail("--kv-type: unknown type '{}'", a->kv_type);
      a->options.kv_type = *kv;
      const SpeculationOptions spec = a->spec.Resolve();
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
      if (!a->probe_file.empty()) {
        report.probe = LoadProbe(a->probe_file);
        report.probe_source = "loaded from " + a->probe_file;
      } else {
        std::fprintf(stderr, "probing this machine's bandwidth and peak arithmetic with %d threads...\n", report.n_threads);
        ProbeOptions po;
        po.n_threads = report.n_threads;
        po.buffer_bytes = a->probe_buffer_mib << 20;
        report.probe = RunProbe(po);
        report.probe_source = "measured in this run";
      }
      if (a->batches.empty()) {
        std::fprintf(stderr, "running pp%lld and tg%lld at %zu depth(s), %d repetitions...\n",
                     static_cast<long long>(a->options.n_prompt), static_cast<long long>(a->options.n_gen),
                     a->options.depths.size(), a->options.repetitions);
        report.figures = BenchPromptAndGeneration(*model, report.probe, a->options);
      } else {
        std::fprintf(stderr, "running the batched sweep...\n");
        report.batches = BenchBatches(*model, report.probe, a->batches, a->options);
      }
      std::string text = a->output == "json" ? FormatJson(report) : FormatMarkdown(report);
      std::fputs(text.c_str(), stdout);
      std::fputc('\n', stdout);
      return 0;
    };
  }}};

}  // namespace
}  // namespace ridge::app
