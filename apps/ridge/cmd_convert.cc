// ridge convert: a llama2.c checkpoint + tokenizer -> a llama GGUF.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>

#include "ridge/base/error.h"
#include "ridge/command.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/gguf/llama2c_import.h"

namespace ridge::app {
namespace {

struct ConvertArgs {
  std::string checkpoint, tokenizer, output, type = "F32", name;
};

int RunConvert(const ConvertArgs& a) {
  const auto type = ParseGgmlType(a.type);
  if (!type || !CanQuantizeTo(*type)) Fail("--type {}: ridge converts to F32, F16, BF16, Q8_0, Q4_0, Q2_K..Q6_K or IQ4_XS", a.type);
  const Llama2cCheckpoint ckpt = Llama2cCheckpoint::Open(a.checkpoint);
  const Llama2cVocab vocab = ReadLlama2cTokenizer(a.tokenizer, ckpt.header.vocab_size);
  Llama2cConvertOptions options;
  options.type = *type;
  options.name = a.name.empty() ? std::filesystem::path(a.checkpoint).stem().string() : a.name;
  std::vector<std::string> notes;
  const GgufWriter writer = BuildLlama2cGguf(ckpt, vocab, options, &notes);
  for (const auto& n : notes) std::printf("note: %s\n", n.c_str());
  uint64_t total_bytes = 0;
  writer.Write(a.output, [&](uint64_t, uint64_t total) { total_bytes = total; });
  const Llama2cHeader& h = ckpt.header;
  std::printf("wrote %s: llama, %lld layers, dim %lld, %lld heads (%lld kv), vocab %lld, %zu tensors, %llu tensor "
              "bytes (%s)\n",
              a.output.c_str(), static_cast<long long>(h.n_layers), static_cast<long long>(h.dim),
              static_cast<long long>(h.n_heads), static_cast<long long>(h.n_kv_heads),
              static_cast<long long>(h.vocab_size), ckpt.tensors.size(), static_cast<unsigned long long>(total_bytes),
              GgmlTypeName(*type));
  return 0;
}

CommandRegistration kConvert{{"convert", "Convert a llama2.c checkpoint and tokenizer to a llama GGUF",
  [](CLI::App& sub) -> std::function<int()> {
    auto args = std::make_shared<ConvertArgs>();
    sub.add_option("--checkpoint", args->checkpoint, "llama2.c checkpoint (.bin, version 0)")->required();
    sub.add_option("--tokenizer", args->tokenizer, "llama2.c tokenizer (.bin)")->required();
    sub.add_option("-o,--output", args->output, "GGUF file to write")->required();
    sub.add_option("--type", args->type, "type of 2-D weights: F32 (default), F16, BF16, Q8_0, Q4_0; norms stay F32");
    sub.add_option("--name", args->name, "general.name (default: the checkpoint's file name)");
    return [args] { return RunConvert(*args); };
  }}};

}  // namespace
}  // namespace ridge::app
