// ridge gen-model: a llama GGUF of any shape with seeded random weights and a
// real tokenizer, for benchmarks and kernel tests at full model size.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "ridge/base/error.h"
#include "ridge/base/thread_pool.h"
#include "ridge/command.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/model_generator.h"
#include "ridge/progress_bar.h"
#include "ridge/roofline/model_presets.h"

namespace ridge::app {
namespace {

struct GenModelArgs {
  std::string preset, vocab_from, type, output, name;
  int64_t dim = 0, ffn = 0, layers = 0, heads = 0, kv_heads = 0, ctx = 0;
  float rope_freq_base = 0.0f;
  uint64_t seed = 0;
  int threads = 0;
};

std::string SharedDir() {
  if (const char* env = std::getenv("RIDGE_SHARED_DIR"); env && *env) return env;
  return RIDGE_SHARED_DIR_DEFAULT;
}

// The vocabulary file of a preset, by its size: Llama 2 (SentencePiece) or Llama 3 (BPE).
std::string DefaultVocab(const ModelPreset& preset) {
  const char* file = preset.config.n_vocab == 32000    ? "ggml-vocab-llama-spm.gguf"
                     : preset.config.n_vocab == 128256 ? "ggml-vocab-llama-bpe.gguf"
                                                       : nullptr;
  if (!file)
    Fail("gen-model: preset {} has a {}-token vocabulary with no default file; give --vocab-from", preset.name,
         preset.config.n_vocab);
  return (std::filesystem::path(SharedDir()) / "vocab" / file).string();
}

int RunGenModel(const GenModelArgs& a) {
  const auto type = ParseGgmlType(a.type);
  if (!type) Fail("--type {}: unknown type; use F32, F16, BF16, Q8_0 or Q4_0", a.type);
  RandomModelOptions options;
  options.type = *type;
  options.seed = a.seed;
  std::string vocab_path = a.vocab_from;
  int64_t expected_vocab = 0;
  const bool custom = a.dim || a.ffn || a.layers || a.heads || a.kv_heads;
  if (!a.preset.empty()) {
    if (custom) Fail("gen-model: give either --preset or --dim/--ffn/--layers/--heads/--kv-heads, not both");
    const ModelPreset& p = FindModelPreset(a.preset);
    const LlamaConfig& c = p.config;
    options.shape = {c.n_embd, c.n_ff, c.n_layers, c.n_heads, c.n_kv_heads, c.n_ctx_train, c.rope_freq_base,
                     c.rms_eps, p.tied_embeddings};
    options.name = p.name + "-random";
    expected_vocab = c.n_vocab;
    if (vocab_path.empty()) vocab_path = DefaultVocab(p);
  } else {
    if (!a.dim || !a.ffn || !a.layers || !a.heads || a.vocab_from.empty())
      Fail("gen-model: without --preset, give --dim, --ffn, --layers, --heads and --vocab-from (--kv-heads "
           "defaults to --heads)");
    options.shape.n_embd = a.dim;
    options.shape.n_ff = a.ffn;
    options.shape.n_layers = a.layers;
    options.shape.n_heads = a.heads;
    options.shape.n_kv_heads = a.kv_heads ? a.kv_heads : a.heads;
    options.name = "ridge-random";
  }
  if (a.ctx) options.shape.n_ctx = a.ctx;
  if (a.rope_freq_base != 0.0f) options.shape.rope_freq_base = a.rope_freq_base;
  if (!a.name.empty()) options.name = a.name;

  const GgufFile vocab = GgufFile::Open(vocab_path);
  const int64_t n_vocab = VocabSize(vocab);
  if (expected_vocab && n_vocab != expected_vocab)
    Fail("gen-model: preset {} has a {}-token vocabulary but {} holds {} tokens", a.preset, expected_vocab,
         vocab_path, n_vocab);
  if (a.threads < 0) Fail("--threads must be >= 1 (0 = all hardware threads), got {}", a.threads);
  ThreadPool pool(a.threads ? a.threads : HardwareThreads());
  const GgufWriter writer = BuildRandomLlamaGguf(vocab, options, &pool);
  {
    ProgressBar bar("writing " + a.output);
    writer.Write(a.output, [&](uint64_t done, uint64_t total) { bar.Update(done, total); });
  }

  const GgufFile written = GgufFile::Open(a.output);
  int64_t n_params = 0;
  for (const GgufTensorInfo& t : written.tensors()) n_params += t.n_elements;
  const RandomLlamaShape& s = options.shape;
  std::printf("wrote %s: llama, %lld layers, dim %lld, ffn %lld, %lld heads (%lld kv), vocab %lld, %zu tensors, "
              "%.3f B parameters, %s, seed %llu, %.1f MiB\n",
              a.output.c_str(), static_cast<long long>(s.n_layers), static_cast<long long>(s.n_embd),
              static_cast<long long>(s.n_ff), static_cast<long long>(s.n_heads), static_cast<long long>(s.n_kv_heads),
              static_cast<long long>(n_vocab), written.tensors().size(), static_cast<double>(n_params) / 1e9,
              GgmlTypeName(options.type), static_cast<unsigned long long>(options.seed),
              static_cast<double>(written.file_bytes()) / (1024.0 * 1024.0));
  return 0;
}

CommandRegistration kGenModel{{"gen-model", "Write a llama GGUF with seeded random weights and a real tokenizer",
  [](CLI::App& sub) -> std::function<int()> {
    auto args = std::make_shared<GenModelArgs>();
    sub.add_option("--preset", args->preset, "a known shape: " + ModelPresetNames());
    sub.add_option("--dim", args->dim, "embedding length");
    sub.add_option("--ffn", args->ffn, "feed-forward length");
    sub.add_option("--layers", args->layers, "number of blocks");
    sub.add_option("--heads", args->heads, "attention heads");
    sub.add_option("--kv-heads", args->kv_heads, "key/value heads (default: --heads)");
    sub.add_option("--vocab-from", args->vocab_from,
                   "GGUF whose tokenizer.* keys are copied (default for presets: ../shared/vocab by vocabulary size)");
    sub.add_option("--type", args->type, "type of the 2-D weights: F32, F16, BF16, Q8_0, Q4_0; norms stay F32")
        ->required();
    sub.add_option("--seed", args->seed, "seed of the weights (default 0)");
    sub.add_option("--ctx", args->ctx, "llama.context_length (default: the preset's, else 2048)");
    sub.add_option("--rope-freq-base", args->rope_freq_base, "llama.rope.freq_base (default: the preset's, else 10000)");
    sub.add_option("--name", args->name, "general.name");
    sub.add_option("--threads", args->threads, "threads that draw and quantize (default: all)");
    sub.add_option("-o,--output", args->output, "GGUF file to write")->required();
    return [args] { return RunGenModel(*args); };
  }}};

}  // namespace
}  // namespace ridge::app
