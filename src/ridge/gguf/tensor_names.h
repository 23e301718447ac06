#pragma once
// The tensor names of a decoder GGUF, as llama.cpp writes them: one table
// shared by the model loader, gen-model, convert, inspect and the roofline's
// shape reader, so that a name is spelled once.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ridge {

enum class TensorRole {
  // Whole-model tensors.
  kTokenEmbd,         // token_embd.weight          [n_embd, n_vocab]
  kOutputNorm,        // output_norm.weight         [n_embd]
  kOutput,            // output.weight              [n_embd, n_vocab] (absent: tied to token_embd)
  kRopeFreqs,         // rope_freqs.weight          [rope_dim / 2] Llama 3.1 frequency divisors
  kRopeFactorsLong,   // rope_factors_long.weight   [rope_dim / 2] LongRoPE, long context
  kRopeFactorsShort,  // rope_factors_short.weight  [rope_dim / 2] LongRoPE, short context
  // Per-layer tensors (blk.N.*).
  kAttnNorm,          // attn_norm.weight           [n_embd]
  kAttnQ,             // attn_q.weight              [n_embd, n_heads · head_dim]
  kAttnK,             // attn_k.weight              [n_embd, n_kv_heads · head_dim]
  kAttnV,             // attn_v.weight              [n_embd, n_kv_heads · head_dim]
  kAttnQkv,           // attn_qkv.weight            [n_embd, (n_heads + 2 · n_kv_heads) · head_dim], fused
  kAttnQBias,         // attn_q.bias                [n_heads · head_dim]
  kAttnKBias,         // attn_k.bias                [n_kv_heads · head_dim]
  kAttnVBias,         // attn_v.bias                [n_kv_heads · head_dim]
  kAttnQNorm,         // attn_q_norm.weight         [head_dim]
  kAttnKNorm,         // attn_k_norm.weight         [head_dim]
  kAttnOutput,        // attn_output.weight         [n_heads · head_dim, n_embd]
  kAttnOutputBias,    // attn_output.bias           [n_embd]                      (gpt-oss)
  kAttnSinks,         // attn_sinks.weight          [n_heads] a softmax logit per head (gpt-oss)
  kPostAttnNorm,      // post_attention_norm.weight [n_embd]
  kFfnNorm,           // ffn_norm.weight            [n_embd]
  kFfnGate,           // ffn_gate.weight            [n_embd, n_ff]
  kFfnUp,             // ffn_up.weight              [n_embd, n_ff] (fused gate+up: 2 · n_ff)
  kFfnDown,           // ffn_down.weight            [n_ff, n_embd]
  kPostFfwNorm,       // post_ffw_norm.weight       [n_embd]
  // Mixture of experts (per layer).
  kFfnGateInp,        // ffn_gate_inp.weight        [n_embd, n_expert] router
  kFfnGateExps,       // ffn_gate_exps.weight       [n_embd, n_ff_exp, n_expert]
  kFfnUpExps,         // ffn_up_exps.weight         [n_embd, n_ff_exp, n_expert]
  kFfnDownExps,       // ffn_down_exps.weight       [n_ff_exp, n_embd, n_expert]
  kFfnGateInpShexp,   // ffn_gate_inp_shexp.weight  [n_embd] shared expert's sigmoid gate (qwen2moe)
  kFfnGateShexp,      // ffn_gate_shexp.weight      [n_embd, n_ff_shexp]
  kFfnUpShexp,        // ffn_up_shexp.weight        [n_embd, n_ff_shexp]
  kFfnDownShexp,      // ffn_down_shexp.weight      [n_ff_shexp, n_embd]
  kFfnGateInpBias,    // ffn_gate_inp.bias          [n_expert]                    (gpt-oss)
  kFfnGateExpsBias,   // ffn_gate_exps.bias         [n_ff_exp, n_expert]
  kFfnUpExpsBias,     // ffn_up_exps.bias           [n_ff_exp, n_expert]
  kFfnDownExpsBias,   // ffn_down_exps.bias         [n_embd, n_expert]
};

// True for the blk.N.* roles.
bool IsLayerRole(TensorRole role);

// "token_embd.weight", "blk.3.attn_q.weight", ...; layer is ignored for
// whole-model roles and must be >= 0 for layer roles.
std::string TensorName(TensorRole role, int64_t layer = -1);

// The short name of a layer role without the block prefix: "attn_q.weight".
std::string_view LayerTensorSuffix(TensorRole role);

// The role and layer of a name; nullopt for a name outside the table.
struct ParsedTensorName {
  TensorRole role;
  int64_t layer;  // -1 for whole-model roles
};
std::optional<ParsedTensorName> ParseTensorName(std::string_view name);

}  // namespace ridge
