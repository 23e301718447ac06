// ridge kv: the KV-cache calculator of the reference model (§2): bytes per
// token, per request, per batch, how many requests fit in memory, and MHA vs
// GQA vs MQA side by side.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <memory>
#include <optional>

#include "ridge/base/error.h"
#include "ridge/command.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/roofline/hardware.h"
#include "ridge/roofline/kv_calc.h"
#include "ridge/roofline/model_shape.h"
#include "ridge/roofline/units.h"

namespace ridge::app {
namespace {

struct KvArgs {
  std::string preset, model_path, kv_type = "f16", weight_type, budget, mem, hw;
  int64_t layers = 0, heads = 0, kv_heads = 0, head_dim = 0;
  int64_t context = 4096, batch = 1;
};

GgmlType ParseType(const std::string& name, const char* flag) {
  const auto type = ParseGgmlType(name);
  if (!type) Fail("{} {}: unknown type", flag, name);
  return *type;
}

int RunKv(const KvArgs& a) {
  const bool explicit_shape = a.layers || a.kv_heads || a.head_dim || a.heads;
  const int sources = (!a.preset.empty()) + (!a.model_path.empty()) + explicit_shape;
  if (sources > 1) Fail("kv: give one of --preset, --model, or --layers/--kv-heads/--head-dim");
  const GgmlType kv_type = ParseType(a.kv_type, "--kv-type");
  const double element_bytes = KvElementBytes(kv_type);

  KvShape shape;
  std::string name;
  std::optional<ModelShape> model;
  if (explicit_shape) {
    if (!a.layers || !a.kv_heads || !a.head_dim) Fail("kv: an explicit shape needs --layers, --kv-heads and --head-dim");
    shape = {a.layers, a.heads, a.kv_heads, a.head_dim};
    name = fmt::format("{} layers × {} KV heads × head dim {}", a.layers, a.kv_heads, a.head_dim);
  } else {
    if (!a.model_path.empty()) {
      const GgufFile file = GgufFile::Open(a.model_path);
      model = ShapeFromGguf(file);
      if (!a.weight_type.empty()) model = WithWeightType(*model, ParseType(a.weight_type, "--weight-type"));
    } else {
      const ModelPreset& preset = FindModelPreset(a.preset.empty() ? "llama-2-7b" : a.preset);
      model = ShapeFromPreset(preset, ParseType(a.weight_type.empty() ? "f16" : a.weight_type, "--weight-type"));
    }
    const ModelConfig& c = model->config;
    shape = {c.n_layers, c.n_heads, c.n_kv_heads, c.head_dim};
    name = fmt::format("{}: {} layers × {} KV heads ({} query heads) × head dim {}", model->name, c.n_layers,
                       c.n_kv_heads, c.n_heads, c.head_dim);
  }

  // The memory budget for the cache: --budget as is, or device memory
  // (--mem or --hw) less the model's weights.
  std::optional<double> budget;
  std::string budget_note;
  if ((!a.budget.empty()) + (!a.mem.empty()) + (!a.hw.empty()) > 1) Fail("kv: give one of --budget, --mem, --hw");
  if (!a.budget.empty()) {
    budget = ParseByteSize(a.budget);
    budget_note = fmt::format("KV budget {}", FormatBytes(*budget));
  } else if (!a.mem.empty() || !a.hw.empty()) {
    const double mem = !a.mem.empty() ? ParseByteSize(a.mem) : FindHardware(a.hw).memory_bytes;
    const std::string mem_label = !a.mem.empty() ? FormatBytes(mem) : fmt::format("{} ({})", FormatBytes(mem), a.hw);
    if (model) {
      budget = std::max(0.0, mem - model->total_weight_bytes);
      budget_note = fmt::format("memory {} less {} of {} weights = KV budget {}", mem_label,
                                FormatBytes(model->total_weight_bytes), model->weight_types, FormatBytes(*budget));
    } else {
      budget = mem;
      budget_note = fmt::format("KV budget {} (weights not subtracted: no model given)", mem_label);
    }
  }

  const KvSizing s = SizeKv(shape, element_bytes, a.context, a.batch, budget);
  std::printf("KV cache of %s, %s (%g bytes per element)\n", name.c_str(), GgmlTypeName(kv_type), element_bytes);
  std::printf("  per token    %s B  (%s)  = 2 × %lld layers × %lld KV heads × %lld × %g B\n",
              FormatCount(s.bytes_per_token).c_str(), FormatBytes(s.bytes_per_token).c_str(),
              static_cast<long long>(shape.n_layers), static_cast<long long>(shape.n_kv_heads),
              static_cast<long long>(shape.head_dim), element_bytes);
  std::printf("  per request  %s B  (%s)  at %s tokens\n", FormatCount(s.bytes_per_request).c_str(),
              FormatBytes(s.bytes_per_request).c_str(), FormatCount(static_cast<double>(a.context)).c_str());
  std::printf("  batch of %s  %s B  (%s)\n", FormatCount(static_cast<double>(a.batch)).c_str(),
              FormatCount(s.bytes_for_batch).c_str(), FormatBytes(s.bytes_for_batch).c_str());
  if (budget) {
    std::printf("  %s\n", budget_note.c_str());
    std::printf("  fits %s requests of %s tokens (%s tokens in all)%s\n",
                FormatCount(static_cast<double>(*s.max_requests)).c_str(),
                FormatCount(static_cast<double>(a.context)).c_str(),
                FormatCount(static_cast<double>(*s.max_tokens)).c_str(),
                s.bytes_for_batch > *budget ? fmt::format(": the batch of {} does NOT fit", a.batch).c_str() : "");
  }

  if (shape.n_heads > 0) {
    std::printf("\nMHA vs GQA vs MQA (%s tokens per request, batch %lld)\n",
                FormatCount(static_cast<double>(a.context)).c_str(), static_cast<long long>(a.batch));
    std::printf("  %-12s %8s %14s %14s %14s %14s\n", "layout", "KV heads", "per token", "per request", "batch",
                budget ? "max requests" : "");
    for (const KvVariant& v : AttentionVariants(shape, element_bytes, a.context, a.batch, budget)) {
      std::printf("  %-12s %8lld %14s %14s %14s %14s\n", (v.label + (v.is_model ? " *" : "")).c_str(),
                  static_cast<long long>(v.n_kv_heads), FormatBytes(v.sizing.bytes_per_token).c_str(),
                  FormatBytes(v.sizing.bytes_per_request).c_str(), FormatBytes(v.sizing.bytes_for_batch).c_str(),
                  v.sizing.max_requests ? FormatCount(static_cast<double>(*v.sizing.max_requests)).c_str() : "");
    }
    std::printf("  (* the model's own layout)\n");
  }
  return 0;
}

CommandRegistration kKv{{"kv", "KV-cache memory: per token, per request, per batch, requests that fit; MHA/GQA/MQA",
  [](CLI::App& sub) -> std::function<int()> {
    auto args = std::make_shared<KvArgs>();
    sub.add_option("--preset", args->preset, "a known shape: " + ModelPresetNames() + " (default llama-2-7b)");
    sub.add_option("-m,--model", args->model_path, "a llama GGUF file (its shape and weight bytes)");
    sub.add_option("--layers", args->layers, "explicit shape: layers")->check(CLI::PositiveNumber);
    sub.add_option("--heads", args->heads, "explicit shape: query heads (for the MHA/GQA/MQA table)")
        ->check(CLI::PositiveNumber);
    sub.add_option("--kv-heads", args->kv_heads, "explicit shape: KV heads")->check(CLI::PositiveNumber);
    sub.add_option("--head-dim", args->head_dim, "explicit shape: head dimension")->check(CLI::PositiveNumber);
    sub.add_option("-c,--context", args->context, "tokens per request (default 4096)")->check(CLI::PositiveNumber);
    sub.add_option("-b,--batch", args->batch, "concurrent requests (default 1)")->check(CLI::PositiveNumber);
    sub.add_option("--kv-type", args->kv_type, "cache element type: f16 (default), bf16, f32, q8_0");
    sub.add_option("--weight-type", args->weight_type, "weights type for --mem/--hw (default f16, or the file's)");
    sub.add_option("--budget", args->budget, "memory for the KV cache, e.g. 20GiB, 64GB");
    sub.add_option("--mem", args->mem, "device memory, e.g. 80GB; the model's weights are subtracted");
    sub.add_option("--hw", args->hw, "take the device memory of a profile: " + HardwareNames());
    return [args] { return RunKv(*args); };
  }}};

}  // namespace
}  // namespace ridge::app
