// ridge gen-model: a GGUF of any supported architecture and shape with seeded
// random weights and a real tokenizer, for benchmarks, kernel tests at full
// model size and the reference-oracle tests of every architecture.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "ridge/base/error.h"
#include "ridge/base/thread_pool.h"
#include "ridge/command.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/gguf/model_generator.h"
#include "ridge/gguf/quant_recipe.h"
#include "ridge/progress_bar.h"
#include "ridge/roofline/model_presets.h"

namespace ridge::app {
namespace {

struct GenModelArgs {
  std::string preset, vocab_from, type, output, name, arch, rope_scaling, expert_type;
  int64_t dim = 0, ffn = 0, layers = 0, heads = 0, kv_heads = 0, ctx = 0, head_dim = 0, sliding_window = -1;
  int64_t rope_original_ctx = 0, experts = 0, experts_used = 0, expert_ffn = 0, shared_expert_ffn = 0;
  float rope_freq_base = 0.0f, rope_factor = 0.0f, attn_softcap = -1.0f, final_softcap = -1.0f;
  uint64_t seed = 0;
  int threads = 0;
};

std::string SharedDir() {
  if (const char* env = std::getenv("RIDGE_SHARED_DIR"); env && *env) return env;
  return RIDGE_SHARED_DIR_DEFAULT;
}

// The vocabulary file of a preset, by its size: the model's own where
// ../shared/vocab has it, else one of the same size (the preset says which).
std::string DefaultVocab(const ModelPreset& preset) {
  if (!preset.stand_in_vocab_file.empty())
    return (std::filesystem::path(SharedDir()) / "vocab" / preset.stand_in_vocab_file).string();
  const int64_t n = preset.config.n_vocab;
  const char* file = n == 32000    ? "ggml-vocab-llama-spm.gguf"
                     : n == 128256 ? "ggml-vocab-llama-bpe.gguf"
                     : n == 151936 ? "ggml-vocab-qwen2.gguf"
                     : n == 32064  ? "ggml-vocab-phi-3.gguf"
                     : n == 49152  ? "ggml-vocab-starcoder.gguf"
                     : n == 256000 ? "ggml-vocab-command-r.gguf"
                     : n == 262144 ? "ggml-vocab-gemma-4.gguf"
                                   : nullptr;
  if (!file)
    Fail("gen-model: preset {} has a {}-token vocabulary with no default file; give --vocab-from", preset.name,
         preset.config.n_vocab);
  return (std::filesystem::path(SharedDir()) / "vocab" / file).string();
}

RandomRopeScaling ParseRopeScaling(const std::string& name) {
  if (name == "none") return RandomRopeScaling::kNone;
  if (name == "linear") return RandomRopeScaling::kLinear;
  if (name == "yarn") return RandomRopeScaling::kYarn;
  if (name == "llama3") return RandomRopeScaling::kLlama3;
  if (name == "longrope") return RandomRopeScaling::kLongRope;
  Fail("--rope-scaling {}: use none, linear, yarn, llama3 or longrope", name);
}

int RunGenModel(const GenModelArgs& a) {
  const std::optional<QuantRecipe> recipe = ParseQuantRecipe(a.type);
  if (!recipe) Fail("--type {}: unknown; use one of {} or a mix (Q4_K_M, Q5_K_M, ...)", a.type, QuantizableTypeNames());
  RandomModelOptions options;
  options.type = recipe->base;
  if (recipe->mix != QuantMix::kPure) options.recipe = recipe;
  options.seed = a.seed;
  std::string vocab_path = a.vocab_from;
  int64_t expected_vocab = 0;
  const bool custom = a.dim || a.ffn || a.layers || a.heads || a.kv_heads;
  if (!a.preset.empty()) {
    if (custom) Fail("gen-model: give either --preset or --dim/--ffn/--layers/--heads/--kv-heads, not both");
    const ModelPreset& p = FindModelPreset(a.preset);
    const ModelConfig& c = p.config;
    options.shape = {c.n_embd, c.n_ff, c.n_layers, c.n_heads, c.n_kv_heads, c.n_ctx_train, c.rope_freq_base,
                     c.rms_eps, p.tied_embeddings};
    RandomModelShape& s = options.shape;
    s.architecture = c.architecture;
    if (c.head_dim * c.n_heads != c.n_embd) s.head_dim = c.head_dim;
    s.sliding_window = c.sliding_window;
    s.attn_softcap = c.attn_softcap;
    s.final_softcap = c.final_softcap;
    if (c.architecture == "gemma3") s.rope_freq_base_swa = c.rope_freq_base_swa;
    s.rope_scaling = p.rope_scaling;
    s.rope_factor = c.rope_scaling.factor;
    s.rope_original_context = c.rope_scaling.original_context;
    s.n_expert = c.n_expert;
    s.n_expert_used = c.n_expert_used;
    s.n_ff_exp = c.n_ff_exp;
    s.n_ff_shexp = c.n_ff_shexp;
    if (!p.vocab_note.empty()) std::printf("note: %s: %s\n", p.name.c_str(), p.vocab_note.c_str());
    options.name = p.name + "-random";
    if (vocab_path.empty()) vocab_path = DefaultVocab(p);
    if (p.stand_in_vocab_file.empty()) expected_vocab = c.n_vocab;
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
  RandomModelShape& s = options.shape;
  if (!a.arch.empty()) s.architecture = a.arch;
  if (a.head_dim) s.head_dim = a.head_dim;
  if (a.sliding_window >= 0) s.sliding_window = a.sliding_window;
  if (a.attn_softcap >= 0.0f) s.attn_softcap = a.attn_softcap;
  if (a.final_softcap >= 0.0f) s.final_softcap = a.final_softcap;
  if (!a.rope_scaling.empty()) s.rope_scaling = ParseRopeScaling(a.rope_scaling);
  if (a.rope_factor > 0.0f) s.rope_factor = a.rope_factor;
  if (a.rope_original_ctx) s.rope_original_context = a.rope_original_ctx;
  if (a.experts) s.n_expert = a.experts;
  if (a.experts_used) s.n_expert_used = a.experts_used;
  if (a.expert_ffn) s.n_ff_exp = a.expert_ffn;
  if (a.shared_expert_ffn) s.n_ff_shexp = a.shared_expert_ffn;
  if (!a.expert_type.empty()) {
    const std::optional<GgmlType> t = ParseGgmlType(a.expert_type);
    if (!t || !CanQuantizeTo(*t))
      Fail("--expert-type {}: use one of {}", a.expert_type, QuantizableTypeNames());
    options.expert_type = *t;
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
  const GgufWriter writer = BuildRandomModelGguf(vocab, options, &pool);
  {
    ProgressBar bar("writing " + a.output);
    writer.Write(a.output, [&](uint64_t done, uint64_t total) { bar.Update(done, total); });
  }

  const GgufFile written = GgufFile::Open(a.output);
  int64_t n_params = 0;
  for (const GgufTensorInfo& t : written.tensors()) n_params += t.n_elements;
  std::printf("wrote %s: %s, %lld layers, dim %lld, ffn %lld, %lld heads (%lld kv), vocab %lld, %zu tensors, "
              "%.3f B parameters, %s, seed %llu, %.1f MiB\n",
              a.output.c_str(), s.architecture.c_str(), static_cast<long long>(s.n_layers), static_cast<long long>(s.n_embd),
              static_cast<long long>(s.n_ff), static_cast<long long>(s.n_heads), static_cast<long long>(s.n_kv_heads),
              static_cast<long long>(n_vocab), written.tensors().size(), static_cast<double>(n_params) / 1e9,
              recipe->name.c_str(), static_cast<unsigned long long>(options.seed),
              static_cast<double>(written.file_bytes()) / (1024.0 * 1024.0));
  return 0;
}

CommandRegistration kGenModel{{"gen-model", "Write a GGUF of any supported architecture with seeded random weights",
  [](CLI::App& sub) -> std::function<int()> {
    auto args = std::make_shared<GenModelArgs>();
    sub.add_option("--preset", args->preset, "a known shape: " + ModelPresetNames());
    sub.add_option("--arch", args->arch, "architecture: " + SupportedArchitectureNames() + " (default: the preset's, else llama)");
    sub.add_option("--dim", args->dim, "embedding length");
    sub.add_option("--ffn", args->ffn, "feed-forward length");
    sub.add_option("--layers", args->layers, "number of blocks");
    sub.add_option("--heads", args->heads, "attention heads");
    sub.add_option("--kv-heads", args->kv_heads, "key/value heads (default: --heads)");
    sub.add_option("--head-dim", args->head_dim, "head size when heads do not tile dim (key_length)");
    sub.add_option("--sliding-window", args->sliding_window, "attention window in tokens (0: none)");
    sub.add_option("--attn-softcap", args->attn_softcap, "attention logit soft-cap (gemma2; 0: none)");
    sub.add_option("--final-softcap", args->final_softcap, "final logit soft-cap (gemma2; 0: none)");
    sub.add_option("--experts", args->experts,
                   "experts per layer (mixture of experts: llama, qwen2moe, qwen3moe, gpt-oss)");
    sub.add_option("--expert-type", args->expert_type,
                   "type of the experts' matrices (default: MXFP4 for gpt-oss, as its real files; else --type)");
    sub.add_option("--experts-used", args->experts_used, "experts each token is routed to (top-k)");
    sub.add_option("--expert-ffn", args->expert_ffn, "each expert's feed-forward length (default: --ffn)");
    sub.add_option("--shared-expert-ffn", args->shared_expert_ffn, "qwen2moe's shared expert's feed-forward length");
    sub.add_option("--rope-scaling", args->rope_scaling, "none, linear, yarn, llama3 (rope_freqs) or longrope (phi3)");
    sub.add_option("--rope-factor", args->rope_factor, "RoPE scaling factor");
    sub.add_option("--rope-original-ctx", args->rope_original_ctx, "RoPE scaling's original context length");
    sub.add_option("--vocab-from", args->vocab_from,
                   "GGUF whose tokenizer.* keys are copied (default for presets: ../shared/vocab by vocabulary size)");
    sub.add_option("--type", args->type, "type of the 2-D weights (any type `ridge quantize` writes); norms stay F32")
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
