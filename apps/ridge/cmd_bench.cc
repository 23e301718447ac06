// ridge bench: prefill (pp) and decode (tg) throughput of a model, each as a
// percentage of this machine's roofline probed in the same run; with --batch,
// the batched sweep (prefill, decode and total tokens/s and KV bytes per batch size).
// `ridge bench serve ...` is the serving benchmark (cmd_bench_serve.cc).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>

#include "ridge/base/cpu_features.h"
#include "ridge/base/error.h"
#include "ridge/command.h"
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
};

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
    return [a]() {
      auto kv = ParseGgmlType(a->kv_type);
      if (!kv) Fail("--kv-type: unknown type '{}'", a->kv_type);
      a->options.kv_type = *kv;
      auto model = Model::Load(a->model_path, a->mmap ? FileBacking::kMapped : FileBacking::kHugePageMemory);
      ModelBenchReport report;
      report.weight_memory = DescribeMemory(model->file().memory());
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
