#include "ridge/roofline/model_presets.h"

#include <cmath>
#include <functional>

#include "ridge/base/error.h"

namespace ridge {
namespace {

ModelPreset Make(const char* name, const char* description, int64_t n_embd, int64_t n_ff, int64_t n_layers,
                 int64_t n_heads, int64_t n_kv_heads, int64_t n_vocab, int64_t n_ctx_train, float rope_freq_base,
                 bool tied) {
  ModelPreset p;
  p.name = name;
  p.description = description;
  ModelConfig& c = p.config;
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
  c.rope_freq_base_swa = rope_freq_base;
  c.attention_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  p.tied_embeddings = tied;
  return p;
}

}  // namespace

// Variant settings beyond the llama shape, set on a preset after Make().
ModelPreset With(ModelPreset p, const std::function<void(ModelPreset&, ModelConfig&)>& edit) {
  edit(p, p.config);
  ModelConfig& c = p.config;
  c.attention_scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  if (c.arch().scale_embeddings) c.embedding_scale = std::sqrt(static_cast<float>(c.n_embd));
  return p;
}

// gpt-oss-20b's config.json: head_dim 64 (64 heads × 64 ≠ 2880), sliding_window
// 128 on layers 0, 2, ..., YaRN factor 32 from 4096 positions, rope_theta 150000,
// 32 local experts, 4 per token, intermediate_size 2880.
void GptOss(ModelPreset& p, ModelConfig& c) {
  c.architecture = "gpt-oss";
  c.head_dim = c.rope_dim = 64;
  c.sliding_window = 128;
  p.rope_scaling = RandomRopeScaling::kYarn;
  c.rope_scaling.type = RopeScalingType::kYarn;
  c.rope_scaling.factor = 32.0f;
  c.rope_scaling.original_context = 4096;
  c.n_expert = 32;
  c.n_expert_used = 4;
  c.n_ff_exp = 2880;
  p.vocab_note = "o200k_harmony (201088 tokens) is not in ../shared/vocab: qwen2's 151936-token vocabulary stands in";
  p.stand_in_vocab_file = "ggml-vocab-qwen2.gguf";
}

const std::vector<ModelPreset>& ModelPresets() {
  // Shapes from each model's published config.json (hidden_size,
  // intermediate_size, num_hidden_layers, num_attention_heads,
  // num_key_value_heads, head_dim, vocab_size, max_position_embeddings,
  // rope_theta, rope_scaling, sliding_window, soft-caps, rms_norm_eps).
  static const std::vector<ModelPreset> presets = {
      Make("tinyllama-1.1b", "TinyLlama 1.1B (GQA 32/4, Llama-2 vocabulary)", 2048, 5632, 22, 32, 4, 32000, 2048,
           10000.0f, false),
      With(Make("llama-3.2-1b", "Llama 3.2 1B (GQA 32/8, tied embeddings, llama3 RoPE divisors)", 2048, 8192, 16,
                32, 8, 128256, 131072, 500000.0f, true),
           [](ModelPreset& p, ModelConfig& c) {
             p.rope_scaling = RandomRopeScaling::kLlama3;
             c.rope_scaling.factor = 32.0f;
             c.rope_scaling.original_context = 8192;
           }),
      Make("llama-2-7b", "Llama 2 7B (MHA 32/32)", 4096, 11008, 32, 32, 32, 32000, 4096, 10000.0f, false),
      Make("llama-3-8b", "Llama 3 8B (GQA 32/8)", 4096, 14336, 32, 32, 8, 128256, 8192, 500000.0f, false),
      Make("llama-2-70b", "Llama 2 70B (GQA 64/8)", 8192, 28672, 80, 64, 8, 32000, 4096, 10000.0f, false),
      With(Make("smollm2-135m", "SmolLM2 135M (llama, GQA 9/3, tied)", 576, 1536, 30, 9, 3, 49152, 8192, 100000.0f,
                true),
           [](ModelPreset& p, ModelConfig&) { p.vocab_note = "starcoder's 49152-token vocabulary stands in"; }),
      With(Make("qwen2.5-0.5b", "Qwen2.5 0.5B (qwen2: Q/K/V biases, GQA 14/2, tied)", 896, 4864, 24, 14, 2, 151936,
                32768, 1000000.0f, true),
           [](ModelPreset&, ModelConfig& c) {
             c.architecture = "qwen2";
             c.rms_eps = 1e-6f;
           }),
      With(Make("qwen3-0.6b", "Qwen3 0.6B (qwen3: Q/K norms, head dim 128, GQA 16/8, tied)", 1024, 3072, 28, 16, 8,
                151936, 40960, 1000000.0f, true),
           [](ModelPreset&, ModelConfig& c) {
             c.architecture = "qwen3";
             c.head_dim = c.rope_dim = 128;
             c.rms_eps = 1e-6f;
           }),
      With(Make("phi-3-mini", "Phi-3 mini 4k (phi3: fused QKV and gate+up, MHA 32/32, window 2047)", 3072, 8192, 32,
                32, 32, 32064, 4096, 10000.0f, false),
           [](ModelPreset&, ModelConfig& c) {
             c.architecture = "phi3";
             c.sliding_window = 2047;
           }),
      With(Make("phi-3.5-mini", "Phi-3.5 mini 128k (phi3 with LongRoPE factors)", 3072, 8192, 32, 32, 32, 32064,
                131072, 10000.0f, false),
           [](ModelPreset& p, ModelConfig& c) {
             c.architecture = "phi3";
             p.rope_scaling = RandomRopeScaling::kLongRope;
             c.rope_scaling.type = RopeScalingType::kLongRope;
             c.rope_scaling.original_context = 4096;
           }),
      With(Make("gemma-2-2b", "Gemma 2 2B (gemma2: soft-caps 50/30, window 4096 on alternate layers, head dim 256)",
                2304, 9216, 26, 8, 4, 256000, 8192, 10000.0f, true),
           [](ModelPreset& p, ModelConfig& c) {
             c.architecture = "gemma2";
             c.head_dim = c.rope_dim = 256;
             c.rms_eps = 1e-6f;
             c.sliding_window = 4096;
             c.attn_softcap = 50.0f;
             c.final_softcap = 30.0f;
             p.vocab_note = "command-r's 256000-token vocabulary stands in";
           }),
      With(Make("gemma-3-1b", "Gemma 3 1B (gemma3: Q/K norms, window 512 on 5 of 6 layers, local base 10000)", 1152,
                6912, 26, 4, 1, 262144, 32768, 1000000.0f, true),
           [](ModelPreset& p, ModelConfig& c) {
             c.architecture = "gemma3";
             c.head_dim = c.rope_dim = 256;
             c.rms_eps = 1e-6f;
             c.sliding_window = 512;
             c.rope_freq_base_swa = 10000.0f;
             p.vocab_note = "gemma-4's 262144-token vocabulary stands in";
           }),
      With(Make("qwen3-30b-a3b", "Qwen3 30B-A3B (qwen3moe: 128 experts, 8 per token, ~3.3B active)", 2048, 6144,
                48, 32, 4, 151936, 40960, 1000000.0f, false),
           [](ModelPreset&, ModelConfig& c) {
             c.architecture = "qwen3moe";
             c.head_dim = c.rope_dim = 128;
             c.rms_eps = 1e-6f;
             c.n_expert = 128;
             c.n_expert_used = 8;
             c.n_ff_exp = 768;
           }),
      With(Make("qwen3-30b-a3b-4l", "Qwen3 30B-A3B's shape with 4 of its 48 layers (real expert count and top-k)",
                2048, 6144, 4, 32, 4, 151936, 40960, 1000000.0f, false),
           [](ModelPreset&, ModelConfig& c) {
             c.architecture = "qwen3moe";
             c.head_dim = c.rope_dim = 128;
             c.rms_eps = 1e-6f;
             c.n_expert = 128;
             c.n_expert_used = 8;
             c.n_ff_exp = 768;
           }),
      With(Make("qwen1.5-moe-a2.7b", "Qwen1.5 MoE A2.7B (qwen2moe: 60 experts, 4 per token, shared expert)", 2048,
                5632, 24, 16, 16, 151936, 8192, 1000000.0f, false),
           [](ModelPreset&, ModelConfig& c) {
             c.architecture = "qwen2moe";
             c.rms_eps = 1e-6f;
             c.n_expert = 60;
             c.n_expert_used = 4;
             c.n_ff_exp = 1408;
             c.n_ff_shexp = 5632;
           }),
      With(Make("gpt-oss-20b",
                "gpt-oss 20B (gpt-oss: 32 experts, 4 per token, ~3.6B active, MXFP4 experts, attention sinks, "
                "window 128 on alternate layers, YaRN)",
                2880, 2880, 24, 64, 8, 201088, 131072, 150000.0f, false),
           GptOss),
      With(Make("gpt-oss-20b-2l", "gpt-oss 20B's shape with 2 of its 24 layers (one sliding, one global)", 2880,
                2880, 2, 64, 8, 201088, 131072, 150000.0f, false),
           GptOss),
      With(Make("mixtral-8x7b", "Mixtral 8x7B (llama with 8 experts, 2 per token)", 4096, 14336, 32, 32, 8, 32000,
                32768, 1000000.0f, false),
           [](ModelPreset&, ModelConfig& c) {
             c.n_expert = 8;
             c.n_expert_used = 2;
             c.n_ff_exp = 14336;
           }),
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
