#include "ridge/gguf/tensor_names.h"

#include <array>
#include <charconv>

#include <fmt/format.h>

#include "ridge/base/error.h"

namespace ridge {
namespace {

struct RoleName {
  TensorRole role;
  std::string_view name;  // whole-model: the full name; layer: the part after "blk.N."
  bool per_layer;
};

constexpr std::array<RoleName, 37> kNames{{
    {TensorRole::kTokenEmbd, "token_embd.weight", false},
    {TensorRole::kOutputNorm, "output_norm.weight", false},
    {TensorRole::kOutput, "output.weight", false},
    {TensorRole::kRopeFreqs, "rope_freqs.weight", false},
    {TensorRole::kRopeFactorsLong, "rope_factors_long.weight", false},
    {TensorRole::kRopeFactorsShort, "rope_factors_short.weight", false},
    {TensorRole::kAttnNorm, "attn_norm.weight", true},
    {TensorRole::kAttnQ, "attn_q.weight", true},
    {TensorRole::kAttnK, "attn_k.weight", true},
    {TensorRole::kAttnV, "attn_v.weight", true},
    {TensorRole::kAttnQkv, "attn_qkv.weight", true},
    {TensorRole::kAttnQBias, "attn_q.bias", true},
    {TensorRole::kAttnKBias, "attn_k.bias", true},
    {TensorRole::kAttnVBias, "attn_v.bias", true},
    {TensorRole::kAttnQNorm, "attn_q_norm.weight", true},
    {TensorRole::kAttnKNorm, "attn_k_norm.weight", true},
    {TensorRole::kAttnOutput, "attn_output.weight", true},
    {TensorRole::kAttnOutputBias, "attn_output.bias", true},
    {TensorRole::kAttnSinks, "attn_sinks.weight", true},
    {TensorRole::kPostAttnNorm, "post_attention_norm.weight", true},
    {TensorRole::kFfnNorm, "ffn_norm.weight", true},
    {TensorRole::kFfnGate, "ffn_gate.weight", true},
    {TensorRole::kFfnUp, "ffn_up.weight", true},
    {TensorRole::kFfnDown, "ffn_down.weight", true},
    {TensorRole::kPostFfwNorm, "post_ffw_norm.weight", true},
    {TensorRole::kFfnGateInp, "ffn_gate_inp.weight", true},
    {TensorRole::kFfnGateExps, "ffn_gate_exps.weight", true},
    {TensorRole::kFfnUpExps, "ffn_up_exps.weight", true},
    {TensorRole::kFfnDownExps, "ffn_down_exps.weight", true},
    {TensorRole::kFfnGateInpShexp, "ffn_gate_inp_shexp.weight", true},
    {TensorRole::kFfnGateShexp, "ffn_gate_shexp.weight", true},
    {TensorRole::kFfnUpShexp, "ffn_up_shexp.weight", true},
    {TensorRole::kFfnDownShexp, "ffn_down_shexp.weight", true},
    {TensorRole::kFfnGateInpBias, "ffn_gate_inp.bias", true},
    {TensorRole::kFfnGateExpsBias, "ffn_gate_exps.bias", true},
    {TensorRole::kFfnUpExpsBias, "ffn_up_exps.bias", true},
    {TensorRole::kFfnDownExpsBias, "ffn_down_exps.bias", true},
}};

const RoleName& Entry(TensorRole role) {
  for (const RoleName& e : kNames)
    if (e.role == role) return e;
  CheckFailed("TensorRole in the name table", __FILE__, __LINE__);
}

constexpr std::string_view kBlockPrefix = "blk.";

}  // namespace

bool IsLayerRole(TensorRole role) { return Entry(role).per_layer; }

std::string TensorName(TensorRole role, int64_t layer) {
  const RoleName& e = Entry(role);
  if (!e.per_layer) return std::string(e.name);
  RIDGE_CHECK(layer >= 0);
  return fmt::format("{}{}.{}", kBlockPrefix, layer, e.name);
}

std::string_view LayerTensorSuffix(TensorRole role) {
  const RoleName& e = Entry(role);
  RIDGE_CHECK(e.per_layer);
  return e.name;
}

std::optional<ParsedTensorName> ParseTensorName(std::string_view name) {
  if (!name.starts_with(kBlockPrefix)) {
    for (const RoleName& e : kNames)
      if (!e.per_layer && e.name == name) return ParsedTensorName{e.role, -1};
    return std::nullopt;
  }
  std::string_view rest = name.substr(kBlockPrefix.size());
  int64_t layer = -1;
  const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), layer);
  if (ec != std::errc() || end == rest.data() || layer < 0 || end == rest.data() + rest.size() || *end != '.')
    return std::nullopt;
  rest = rest.substr(static_cast<size_t>(end - rest.data()) + 1);
  for (const RoleName& e : kNames)
    if (e.per_layer && e.name == rest) return ParsedTensorName{e.role, layer};
  return std::nullopt;
}

}  // namespace ridge
