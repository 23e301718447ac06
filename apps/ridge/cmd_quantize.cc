// ridge quantize IN.gguf OUT.gguf TYPE: weight matrices to another type,
// norms and metadata kept (see ridge/gguf/quantize_file.h).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <memory>
#include <optional>

#include "ridge/base/error.h"
#include "ridge/base/thread_pool.h"
#include "ridge/command.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/gguf/quant_recipe.h"
#include "ridge/gguf/quantize_file.h"
#include "ridge/progress_bar.h"

namespace ridge::app {
namespace {

struct QuantizeArgs {
  std::string input, output, type;
  int threads = 0;
};

int RunQuantize(const QuantizeArgs& a) {
  const std::optional<QuantRecipe> recipe = ParseQuantRecipe(a.type);
  if (!recipe)
    Fail("unknown type '{}'; ridge quantize writes {} and the mixes Q2_K, Q3_K_M, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, "
         "Q6_K, IQ4_XS",
         a.type, QuantizableTypeNames());
  if (a.threads < 0) Fail("--threads must be >= 1 (0 = all hardware threads), got {}", a.threads);
  ThreadPool pool(a.threads ? a.threads : HardwareThreads());
  QuantizeSummary summary;
  {
    ProgressBar bar("writing " + a.output);
    summary = QuantizeGgufFile(a.input, a.output, *recipe, &pool,
                               [&](uint64_t done, uint64_t total) { bar.Update(done, total); });
  }
  const double mib = 1024.0 * 1024.0;
  std::printf("wrote %s: %lld tensors, %lld converted by %s (%lld by a fallback type), %lld copied unchanged; "
              "tensor data %.1f MiB -> %.1f MiB\n",
              a.output.c_str(), static_cast<long long>(summary.n_tensors), static_cast<long long>(summary.n_converted),
              recipe->name.c_str(), static_cast<long long>(summary.n_fallback), static_cast<long long>(summary.n_copied),
              static_cast<double>(summary.in_tensor_bytes) / mib, static_cast<double>(summary.out_tensor_bytes) / mib);
  return 0;
}

CommandRegistration kQuantize{{"quantize", "Convert the weight matrices of a GGUF to another type",
  [](CLI::App& sub) -> std::function<int()> {
    auto args = std::make_shared<QuantizeArgs>();
    sub.add_option("input", args->input, "source GGUF (weights F32, F16 or BF16)")->required();
    sub.add_option("output", args->output, "GGUF file to write")->required();
    sub.add_option("type", args->type, "a type (F16, Q8_0, Q4_0, Q4_K, ...) or a llama.cpp mix (Q4_K_M, Q5_K_M, ...)")
        ->required();
    sub.add_option("--threads", args->threads, "threads (default: all)");
    return [args] { return RunQuantize(*args); };
  }}};

}  // namespace
}  // namespace ridge::app
