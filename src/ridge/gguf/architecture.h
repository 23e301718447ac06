#pragma once
// The decoder architectures ridge runs, as data: for each value of
// general.architecture, which tensors a file holds (required or optional) and
// which variant of each step of the block applies. The model layer reads the
// metadata keys and runs the graph this describes; gen-model writes files of
// the same description. One table, one place.
#include <string>
#include <string_view>
#include <vector>

#include "ridge/gguf/tensor_names.h"

namespace ridge {

// How RoPE pairs the dimensions of a head (llama.cpp's rope types).
enum class RopeStyle {
  kAdjacentPairs,  // (x[2i], x[2i+1]): "normal", llama (its converter permutes Q and K to this)
  kHalves,         // (x[i], x[i + rope_dim/2]): "neox", qwen2/qwen3/phi3/gemma
};

// The gated FFN: down(act(gate · x) ⊙ (up · x)).
enum class FfnActivation {
  kSilu,      // SwiGLU: llama, qwen, phi3
  kGeluTanh,  // GeGLU with the tanh approximation: gemma
  kSwigluOai,  // gpt-oss: g = min(gate, 7), u = clamp(up, ±7), g·sigmoid(1.702·g)·(u + 1) (ggml_swiglu_oai)
};

// Whether the FFN is a mixture of experts ({arch}.expert_count, ffn_*_exps tensors).
enum class Experts {
  kNever,
  kOptional,  // llama: dense, or Mixtral's experts when the file has expert_count
  kAlways,    // qwen2moe, qwen3moe
};

// How a token's router logits l become the weights of its experts.
enum class ExpertGating {
  kSoftmax,      // p = softmax(l) over every expert; the top k of p (renormalised or not: norm_expert_weights)
  kSoftmaxTopK,  // the top k of l, then softmax over those k only (gpt-oss; llama.cpp's SOFTMAX_WEIGHT)
};

struct ArchitectureSpec {
  std::string_view name;  // general.architecture
  RopeStyle rope_style;
  FfnActivation ffn_activation;
  bool qkv_bias_required;   // attn_{q,k,v}.bias always present (qwen2)
  bool qkv_bias_allowed;    // ... or optional (llama files from some converters)
  bool qk_norm;             // attn_{q,k}_norm: per-head RMSNorm of Q and K before RoPE (qwen3, gemma3)
  bool fused_qkv;           // attn_qkv instead of attn_q/k/v (phi3)
  bool fused_gate_up;       // ffn_up holds gate then up, 2 · n_ff rows; no ffn_gate (phi3)
  bool sandwich_norms;      // post_attention_norm and post_ffw_norm before each residual add (gemma2/3)
  bool scale_embeddings;    // token embeddings × sqrt(n_embd) (gemma)
  bool soft_caps;           // attn_logit_softcapping and final_logit_softcapping keys (gemma2)
  // With {arch}.attention.sliding_window: 0 = every layer attends within the
  // window (mistral style); N = layer l is global when (l + 1) % N == 0 and
  // slides otherwise (gemma2: 2, gemma3: 6).
  int global_layer_every;
  bool rope_freqs;          // rope_freqs.weight allowed (Llama 3.1/3.2 frequency divisors)
  bool long_rope;           // rope_factors_long/short allowed (phi3 LongRoPE)
  Experts experts;
  bool shared_expert;       // qwen2moe: a dense FFN beside the experts, scaled by sigmoid(gate_inp_shexp · x)
  bool norm_expert_weights; // the top-k router probabilities renormalised to sum 1 (Mixtral, qwen3moe)
  // gpt-oss's variants; every other architecture keeps these defaults.
  ExpertGating expert_gating = ExpertGating::kSoftmax;
  bool expert_biases = false;     // ffn_gate_inp.bias and per-expert ffn_{gate,up,down}_exps.bias
  bool attn_sinks = false;        // attn_sinks.weight: a learned logit per head, one more term of its softmax
  bool attn_output_bias = false;  // attn_output.bias
  bool ffn_norm_is_post_attn_norm = false;  // the FFN's input norm is named post_attention_norm (no ffn_norm)
  // With global_layer_every: the sliding layers take rope.freq_base_swa and no
  // RoPE scaling (gemma2/3); false: the global layers' RoPE (gpt-oss).
  bool sliding_layers_own_rope = true;
};

// nullptr for an architecture ridge does not run.
const ArchitectureSpec* FindArchitecture(std::string_view name);
// The spec of a supported architecture; throws ridge::Error naming `name`, the
// file and the supported list otherwise.
const ArchitectureSpec& RequireArchitecture(std::string_view name, std::string_view file_path);
// "llama, qwen2, qwen3, phi3, gemma2, gemma3, qwen2moe, qwen3moe"
std::string SupportedArchitectureNames();

// A tensor a file of the architecture holds (per layer or once).
struct TensorPresence {
  TensorRole role;
  bool required;
};
std::vector<TensorPresence> ModelTensors(const ArchitectureSpec& arch);
// moe: the file's layers hold experts (its {arch}.expert_count > 0).
std::vector<TensorPresence> LayerTensors(const ArchitectureSpec& arch, bool moe = false);

// Whether layer l attends within the sliding window (when the file sets one).
bool IsSlidingLayer(const ArchitectureSpec& arch, int64_t layer);

}  // namespace ridge
