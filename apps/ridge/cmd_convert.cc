// ridge convert: a llama2.c checkpoint + tokenizer -> a llama GGUF.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>

#include "ridge/base/error.h"
#include "ridge/command.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/gguf/llama2c_import.h"
#include "ridge/roofline/model_presets.h"

namespace ridge::app {
namespace {

struct ConvertArgs {
  std::string checkpoint, tokenizer, output, type = "F32", name, widen_to;
};

// The shape of a llama-architecture preset, for --widen-to.
Llama2cShape WideningOf(const std::string& preset_name) {
  const ModelPreset& preset = FindModelPreset(preset_name);
  const ModelConfig& c = preset.config;
  if (c.architecture != "llama" || c.n_expert != 0)
    Fail("--widen-to {}: only dense llama presets have the llama2.c architecture (no biases, QK norms or experts)",
         preset_name);
  if (c.head_dim != 0 && c.head_dim != c.n_embd / c.n_heads)
    Fail("--widen-to {}: head size {} does not tile dim {}", preset_name, c.head_dim, c.n_embd);
  return {c.n_embd, c.n_ff, c.n_layers, c.n_heads, c.n_kv_heads, c.n_vocab};
}

int RunConvert(const ConvertArgs& a) {
  const auto type = ParseGgmlType(a.type);
  if (!type || !CanQuantizeTo(*type)) Fail("--type {}: ridge converts to {}", a.type, QuantizableTypeNames());
  const Llama2cCheckpoint ckpt = Llama2cCheckpoint::Open(a.checkpoint);
  const Llama2cVocab vocab = ReadLlama2cTokenizer(a.tokenizer, ckpt.header.vocab_size);
  Llama2cConvertOptions options;
  options.type = *type;
  options.name = a.name.empty() ? std::filesystem::path(a.checkpoint).stem().string() : a.name;
  if (!a.widen_to.empty()) options.widen = WideningOf(a.widen_to);
  std::vector<std::string> notes;
  const GgufWriter writer = BuildLlama2cGguf(ckpt, vocab, options, &notes);
  for (const auto& n : notes) std::printf("note: %s\n", n.c_str());
  uint64_t total_bytes = 0;
  writer.Write(a.output, [&](uint64_t, uint64_t total) { total_bytes = total; });
  const Llama2cShape shape = options.widen.value_or(ckpt.header);
  std::printf("wrote %s: llama, %lld layers, dim %lld, %lld heads (%lld kv), vocab %lld, %llu tensor "
              "bytes (%s)%s\n",
              a.output.c_str(), static_cast<long long>(shape.n_layers), static_cast<long long>(shape.dim),
              static_cast<long long>(shape.n_heads), static_cast<long long>(shape.n_kv_heads),
              static_cast<long long>(shape.vocab_size), static_cast<unsigned long long>(total_bytes), GgmlTypeName(*type),
              options.widen ? " (the checkpoint widened, same function)" : "");
  return 0;
}

CommandRegistration kConvert{{"convert", "Convert a llama2.c checkpoint and tokenizer to a llama GGUF",
  [](CLI::App& sub) -> std::function<int()> {
    auto args = std::make_shared<ConvertArgs>();
    sub.add_option("--checkpoint", args->checkpoint, "llama2.c checkpoint (.bin, version 0)")->required();
    sub.add_option("--tokenizer", args->tokenizer, "llama2.c tokenizer (.bin)")->required();
    sub.add_option("-o,--output", args->output, "GGUF file to write")->required();
    sub.add_option("--type", args->type, "type of 2-D weights: " + QuantizableTypeNames() + " (default F32); norms stay F32");
    sub.add_option("--name", args->name, "general.name (default: the checkpoint's file name)");
    sub.add_option("--widen-to", args->widen_to,
                   "embed the model in a llama preset's shape (e.g. tinyllama-1.1b): the same function with that "
                   "model's weight bytes, for benchmarks a real model's behaviour changes (speculation)");
    return [args] { return RunConvert(*args); };
  }}};

}  // namespace
}  // namespace ridge::app
