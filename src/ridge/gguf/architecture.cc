#include "ridge/gguf/architecture.h"

#include <array>

#include <fmt/format.h>

#include "ridge/base/error.h"

namespace ridge {
namespace {

using enum RopeStyle;
using enum FfnActivation;

// Each row from llama.cpp's graph of that architecture and the model's published definition.
using enum Experts;

constexpr std::array<ArchitectureSpec, 9> kArchitectures{{
    // name  rope  act  qkvb_req qkvb_ok qknorm fqkv fgu sandw scale caps global rfreq lrope experts shexp normw
    {"llama", kAdjacentPairs, kSilu, false, true, false, false, false, false, false, false, 0, true, false, kOptional,
     false, true},
    {"qwen2", kHalves, kSilu, true, true, false, false, false, false, false, false, 0, false, false, kNever, false,
     false},
    {"qwen3", kHalves, kSilu, false, false, true, false, false, false, false, false, 0, false, false, kNever, false,
     false},
    {"phi3", kHalves, kSilu, false, false, false, true, true, false, false, false, 0, false, true, kNever, false,
     false},
    {"gemma2", kHalves, kGeluTanh, false, false, false, false, false, true, true, true, 2, false, false, kNever,
     false, false},
    {"gemma3", kHalves, kGeluTanh, false, false, true, false, false, true, true, false, 6, false, false, kNever,
     false, false},
    {"qwen2moe", kHalves, kSilu, true, true, false, false, false, false, false, false, 0, false, false, kAlways, true,
     false},
    {"qwen3moe", kHalves, kSilu, false, false, true, false, false, false, false, false, 0, false, false, kAlways,
     false, true},
    // llama.cpp's LLM_ARCH_OPENAI_MOE (src/models/openai-moe-iswa.cpp): even layers slide (swa pattern 2).
    {.name = "gpt-oss", .rope_style = kHalves, .ffn_activation = kSwigluOai, .qkv_bias_required = true,
     .qkv_bias_allowed = true, .qk_norm = false, .fused_qkv = false, .fused_gate_up = false, .sandwich_norms = false,
     .scale_embeddings = false, .soft_caps = false, .global_layer_every = 2, .rope_freqs = false, .long_rope = false,
     .experts = kAlways, .shared_expert = false, .norm_expert_weights = false,
     .expert_gating = ExpertGating::kSoftmaxTopK, .expert_biases = true, .attn_sinks = true, .attn_output_bias = true,
     .ffn_norm_is_post_attn_norm = true, .sliding_layers_own_rope = false},
}};

}  // namespace

const ArchitectureSpec* FindArchitecture(std::string_view name) {
  for (const ArchitectureSpec& a : kArchitectures)
    if (a.name == name) return &a;
  return nullptr;
}

const ArchitectureSpec& RequireArchitecture(std::string_view name, std::string_view file_path) {
  if (const ArchitectureSpec* a = FindArchitecture(name)) return *a;
  Fail("{}: general.architecture is '{}', which ridge does not run; supported: {}", file_path, name,
       SupportedArchitectureNames());
}

std::string SupportedArchitectureNames() {
  std::string names;
  for (const ArchitectureSpec& a : kArchitectures) names += (names.empty() ? "" : ", ") + std::string(a.name);
  return names;
}

std::vector<TensorPresence> ModelTensors(const ArchitectureSpec& arch) {
  std::vector<TensorPresence> t{{TensorRole::kTokenEmbd, true},
                                {TensorRole::kOutputNorm, true},
                                {TensorRole::kOutput, false}};  // absent: tied to token_embd
  if (arch.rope_freqs) t.push_back({TensorRole::kRopeFreqs, false});
  if (arch.long_rope) {
    t.push_back({TensorRole::kRopeFactorsLong, false});
    t.push_back({TensorRole::kRopeFactorsShort, false});
  }
  return t;
}

std::vector<TensorPresence> LayerTensors(const ArchitectureSpec& arch, bool moe) {
  using enum TensorRole;
  std::vector<TensorPresence> t{{kAttnNorm, true}};
  if (arch.fused_qkv) {
    t.push_back({kAttnQkv, true});
  } else {
    t.insert(t.end(), {{kAttnQ, true}, {kAttnK, true}, {kAttnV, true}});
  }
  if (arch.qkv_bias_allowed)
    t.insert(t.end(), {{kAttnQBias, arch.qkv_bias_required},
                       {kAttnKBias, arch.qkv_bias_required},
                       {kAttnVBias, arch.qkv_bias_required}});
  if (arch.qk_norm) t.insert(t.end(), {{kAttnQNorm, true}, {kAttnKNorm, true}});
  if (arch.attn_sinks) t.push_back({kAttnSinks, true});
  t.push_back({kAttnOutput, true});
  if (arch.attn_output_bias) t.push_back({kAttnOutputBias, true});
  if (arch.sandwich_norms) t.push_back({kPostAttnNorm, true});
  t.push_back({arch.ffn_norm_is_post_attn_norm ? kPostAttnNorm : kFfnNorm, true});
  if (moe) {
    t.insert(t.end(), {{kFfnGateInp, true}, {kFfnGateExps, true}, {kFfnUpExps, true}, {kFfnDownExps, true}});
    if (arch.expert_biases)
      t.insert(t.end(), {{kFfnGateInpBias, true}, {kFfnGateExpsBias, true}, {kFfnUpExpsBias, true},
                         {kFfnDownExpsBias, true}});
    if (arch.shared_expert)
      t.insert(t.end(),
               {{kFfnGateInpShexp, true}, {kFfnGateShexp, true}, {kFfnUpShexp, true}, {kFfnDownShexp, true}});
  } else {
    if (!arch.fused_gate_up) t.push_back({kFfnGate, true});
    t.insert(t.end(), {{kFfnUp, true}, {kFfnDown, true}});
  }
  if (arch.sandwich_norms) t.push_back({kPostFfwNorm, true});
  return t;
}

bool IsSlidingLayer(const ArchitectureSpec& arch, int64_t layer) {
  return arch.global_layer_every == 0 || (layer + 1) % arch.global_layer_every != 0;
}

}  // namespace ridge
