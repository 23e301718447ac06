#pragma once
// The shape and variant settings of a decoder model, read from GGUF metadata
// ({arch}.* keys for the architecture in general.architecture, see
// gguf/architecture.h), and the reference model's KV-cache formula.
#include <cstdint>
#include <string>

#include "ridge/gguf/architecture.h"
#include "ridge/kv/kv_formula.h"  // KvBytesPerToken

namespace ridge {

class GgufFile;

// How positions are turned into RoPE angles beyond the plain base^(−2i/d)
// ({arch}.rope.scaling.* keys; rope_freqs / rope_factors_* tensors are weights).
enum class RopeScalingType {
  kNone,
  kLinear,    // angles × 1 / factor
  kYarn,      // NTK-by-parts interpolation between the original and scaled angles, magnitude 0.1·ln(factor) + 1
  kLongRope,  // phi3: per-frequency factors (rope_factors_long/short) and an attention factor
};

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  float factor = 1.0f;              // rope.scaling.factor
  int64_t original_context = 0;     // rope.scaling.original_context_length (0: n_ctx_train)
  float attn_factor = 1.0f;         // rope.scaling.attn_factor: multiplies cos and sin
  float yarn_beta_fast = 32.0f;     // rope.scaling.yarn_beta_fast
  float yarn_beta_slow = 1.0f;      // rope.scaling.yarn_beta_slow
};

struct ModelConfig {
  std::string architecture = "llama";  // general.architecture, one of SupportedArchitectureNames()
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;   // {arch}.context_length
  int64_t n_embd = 0;        // {arch}.embedding_length
  int64_t n_layers = 0;      // {arch}.block_count
  int64_t n_ff = 0;          // {arch}.feed_forward_length
  int64_t n_heads = 0;       // {arch}.attention.head_count
  int64_t n_kv_heads = 0;    // {arch}.attention.head_count_kv (defaults to n_heads)
  int64_t head_dim = 0;      // {arch}.attention.key_length (defaults to n_embd / n_heads)
  int64_t rope_dim = 0;      // {arch}.rope.dimension_count (defaults to head_dim)
  float rms_eps = 1e-5f;     // {arch}.attention.layer_norm_rms_epsilon
  float rope_freq_base = 10000.0f;      // {arch}.rope.freq_base
  float rope_freq_base_swa = 10000.0f;  // {arch}.rope.freq_base_swa: sliding layers of gemma3
  RopeScaling rope_scaling;
  int64_t sliding_window = 0;  // {arch}.attention.sliding_window in tokens; 0: every layer global
  float attn_softcap = 0.0f;   // {arch}.attn_logit_softcapping (gemma2); 0: none
  float final_softcap = 0.0f;  // {arch}.final_logit_softcapping (gemma2); 0: none
  float attention_scale = 0.0f;  // multiplies q·k; {arch}.attention.scale, else 1 / sqrt(head_dim) (see .cc)
  float embedding_scale = 1.0f;  // multiplies token embeddings: sqrt(n_embd) for gemma
  // Mixture of experts (0 experts: a dense FFN).
  int64_t n_expert = 0;       // {arch}.expert_count
  int64_t n_expert_used = 0;  // {arch}.expert_used_count: experts each token is routed to (top-k)
  int64_t n_ff_exp = 0;       // {arch}.expert_feed_forward_length (defaults to n_ff)
  int64_t n_ff_shexp = 0;     // {arch}.expert_shared_feed_forward_length (qwen2moe's shared expert)

  int64_t q_dim() const { return n_heads * head_dim; }
  int64_t kv_dim() const { return n_kv_heads * head_dim; }
  bool is_moe() const { return n_expert > 0; }
  const ArchitectureSpec& arch() const;
  // Whether layer l attends within sliding_window positions.
  bool IsSlidingLayer(int64_t layer) const;
  // How many layers do (0 without a window).
  int64_t SlidingLayerCount() const;

  // Reads and validates the keys of the file's architecture; throws
  // ridge::Error naming the key that is missing, out of range or
  // inconsistent, or the architecture when ridge does not run it.
  // n_vocab comes from the tokenizer token list or token_embd.weight.
  static ModelConfig FromGguf(const GgufFile& file);
};

}  // namespace ridge
