#include "ridge/roofline/model_presets.h"

#include "ridge/base/error.h"

namespace ridge {
namespace {

ModelPreset Make(const char* name, const char* description, int64_t n_embd, int64_t n_ff, int64_t n_layers,
                 int64_t n_heads, int64_t n_kv_heads, int64_t n_vocab, int64_t n_ctx_train, float rope_freq_base,
                 bool tied) {
  ModelPreset p;
  p.name = name;
  p.description = description;
  LlamaConfig& c = p.config;
  c.architecture = "llama";
  c.n_embd = n_embd;
  c.n_ff = n_ff;
  c.n_layers = n_layers;
  c.n_heads = n_heads;
  c.n_kv_heads = n_kv_heads;
  c.n_vocab = n_vocab;
  c.n_ctx_train = n_ctx_train;
  c.head_dim = n_embd / n_heads;
  c.rope_dim = c.head_dim;
  c.rms_eps = 1e-5f;
  c.rope_freq_base = rope_freq_base;
  p.tied_embeddings = tied;
  return p;
}

}  // namespace

const std::vector<ModelPreset>& ModelPresets() {
  // Shapes from each model's published config.json (hidden_size,
  // intermediate_size, num_hidden_layers, num_attention_heads,
  // num_key_value_heads, vocab_size, max_position_embeddings, rope_theta).
  static const std::vector<ModelPreset> presets = {
      Make("tinyllama-1.1b", "TinyLlama 1.1B (GQA 32/4, Llama-2 vocabulary)", 2048, 5632, 22, 32, 4, 32000, 2048,
           10000.0f, false),
      Make("llama-3.2-1b", "Llama 3.2 1B (GQA 32/8, tied embeddings)", 2048, 8192, 16, 32, 8, 128256, 131072,
           500000.0f, true),
      Make("llama-2-7b", "Llama 2 7B (MHA 32/32)", 4096, 11008, 32, 32, 32, 32000, 4096, 10000.0f, false),
      Make("llama-3-8b", "Llama 3 8B (GQA 32/8)", 4096, 14336, 32, 32, 8, 128256, 8192, 500000.0f, false),
      Make("llama-2-70b", "Llama 2 70B (GQA 64/8)", 8192, 28672, 80, 64, 8, 32000, 4096, 10000.0f, false),
  };
  return presets;
}

const ModelPreset& FindModelPreset(const std::string& name) {
  for (const ModelPreset& p : ModelPresets())
    if (p.name == name) return p;
  Fail("unknown model preset '{}' (known: {})", name, ModelPresetNames());
}

std::string ModelPresetNames() {
  std::string out;
  for (const ModelPreset& p : ModelPresets()) out += (out.empty() ? "" : ", ") + p.name;
  return out;
}

}  // namespace ridge
