#include "ridge/roofline/model_shape.h"

#include <fmt/format.h>

#include <map>

#include "ridge/base/error.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/tensor_names.h"

namespace ridge {
namespace {

// Bytes of everything when all matrices and token_embd are `weight_type`.
double UniformTotalBytes(const ModelConfig& c, bool tied, double bpw) {
  const double d = static_cast<double>(c.n_embd), q = static_cast<double>(c.q_dim());
  const double kv_dim = static_cast<double>(c.kv_dim());
  const double ffn = c.is_moe() ? 3 * d * static_cast<double>(c.n_ff_exp * c.n_expert + c.n_ff_shexp) * bpw +
                                      d * static_cast<double>(c.n_expert) * 4.0  // F32 router
                                : 3 * d * static_cast<double>(c.n_ff) * bpw;
  const double per_layer = (d * q + 2 * d * kv_dim + q * d) * bpw + ffn + 2 * d * 4.0;  // + attn_norm, ffn_norm (F32)
  const double embd = static_cast<double>(c.n_vocab) * d * bpw;
  return static_cast<double>(c.n_layers) * per_layer + embd * (tied ? 1 : 2) + d * 4.0;
}

}  // namespace

double BytesPerWeight(GgmlType type) {
  const GgmlTypeTraits& t = TraitsOf(type);
  return static_cast<double>(t.block_bytes) / static_cast<double>(t.block_elems);
}

ModelShape ShapeFromPreset(const ModelPreset& preset, GgmlType weight_type) {
  ModelShape s;
  s.name = preset.name;
  s.config = preset.config;
  s.tied_embeddings = preset.tied_embeddings;
  return WithWeightType(s, weight_type);
}

ModelShape WithWeightType(const ModelShape& shape, GgmlType weight_type) {
  ModelShape s = shape;
  const double bpw = BytesPerWeight(weight_type);
  s.bytes_per_weight = {bpw, bpw, bpw, bpw, bpw, bpw, bpw, bpw};
  s.weight_types = GgmlTypeName(weight_type);
  s.main_weight_type = weight_type;
  s.total_weight_bytes = UniformTotalBytes(s.config, s.tied_embeddings, bpw);
  return s;
}

ModelShape ShapeFromGguf(const GgufFile& file) {
  ModelShape s;
  s.config = ModelConfig::FromGguf(file);
  s.name = file.GetString("general.name").value_or(file.path());
  const ModelConfig& c = s.config;
  const int64_t kv_dim = c.n_kv_heads * c.head_dim;

  // Average bytes per weight of each kind of layer matrix, checking each
  // shape; a fused tensor (phi3's attn_qkv, gate+up in ffn_up) stands for its parts.
  // n_mats > 0: a stack of experts' matrices [n_in, n_out, n_mats].
  auto kind = [&](TensorRole role, int64_t n_in, int64_t n_out, int64_t n_mats) {
    double bytes = 0, weights = 0;
    for (int64_t layer = 0; layer < c.n_layers; ++layer) {
      const std::string tensor = TensorName(role, layer);
      const GgufTensorInfo* t = file.FindTensor(tensor);
      if (!t) Fail("{}: tensor '{}' is missing", file.path(), tensor);
      const bool stack = n_mats > 0;
      if (t->dims.size() != (stack ? 3u : 2u) || t->dims[0] != n_in || t->dims[1] != n_out ||
          (stack && t->dims[2] != n_mats))
        Fail("{}: tensor '{}' should be {} × {}{} (dims[0] = {})", file.path(), tensor, n_out, n_in,
             stack ? fmt::format(" × {} experts", n_mats) : "", n_in);
      bytes += static_cast<double>(t->n_bytes);
      weights += static_cast<double>(t->n_elements);
    }
    return bytes / weights;
  };
  const ArchitectureSpec& arch = c.arch();
  auto& b = s.bytes_per_weight;
  if (arch.fused_qkv) {
    b.attn_q = b.attn_k = b.attn_v = kind(TensorRole::kAttnQkv, c.n_embd, c.q_dim() + 2 * kv_dim, 0);
  } else {
    b.attn_q = kind(TensorRole::kAttnQ, c.n_embd, c.q_dim(), 0);
    b.attn_k = kind(TensorRole::kAttnK, c.n_embd, kv_dim, 0);
    b.attn_v = kind(TensorRole::kAttnV, c.n_embd, kv_dim, 0);
  }
  b.attn_output = kind(TensorRole::kAttnOutput, c.q_dim(), c.n_embd, 0);
  if (c.is_moe()) {  // the experts' stacks (what decode streams); routers are F32
    b.ffn_gate = kind(TensorRole::kFfnGateExps, c.n_embd, c.n_ff_exp, c.n_expert);
    b.ffn_up = kind(TensorRole::kFfnUpExps, c.n_embd, c.n_ff_exp, c.n_expert);
    b.ffn_down = kind(TensorRole::kFfnDownExps, c.n_ff_exp, c.n_embd, c.n_expert);
  } else if (arch.fused_gate_up) {
    b.ffn_gate = b.ffn_up = kind(TensorRole::kFfnUp, c.n_embd, 2 * c.n_ff, 0);
    b.ffn_down = kind(TensorRole::kFfnDown, c.n_ff, c.n_embd, 0);
  } else {
    b.ffn_gate = kind(TensorRole::kFfnGate, c.n_embd, c.n_ff, 0);
    b.ffn_up = kind(TensorRole::kFfnUp, c.n_embd, c.n_ff, 0);
    b.ffn_down = kind(TensorRole::kFfnDown, c.n_ff, c.n_embd, 0);
  }

  const GgufTensorInfo* output = file.FindTensor(TensorName(TensorRole::kOutput));
  s.tied_embeddings = output == nullptr;
  if (!output) output = file.FindTensor(TensorName(TensorRole::kTokenEmbd));
  if (!output) Fail("{}: neither output.weight nor token_embd.weight is present", file.path());
  if (output->dims.size() != 2 || output->dims[0] != c.n_embd || output->dims[1] != c.n_vocab)
    Fail("{}: tensor '{}' should be {} × {}", file.path(), output->name, c.n_vocab, c.n_embd);
  b.output = static_cast<double>(output->n_bytes) / static_cast<double>(output->n_elements);

  for (const GgufTensorInfo& t : file.tensors()) s.total_weight_bytes += static_cast<double>(t.n_bytes);
  // Display: the type holding most of the layers' weights, the others, and the LM head's.
  std::map<std::string, double> weights_by_type;
  for (const GgufTensorInfo& t : file.tensors())
    if (t.name.rfind("blk.", 0) == 0 && t.dims.size() >= 2)
      weights_by_type[GgmlTypeName(t.type)] += static_cast<double>(t.n_elements);
  std::string main_type;
  double all_weights = 0;
  for (const auto& [name, n] : weights_by_type) {
    all_weights += n;
    if (main_type.empty() || n > weights_by_type[main_type]) main_type = name;
  }
  s.weight_types = main_type;
  s.main_weight_type = ParseGgmlType(main_type).value_or(GgmlType::kF16);
  for (const auto& [name, n] : weights_by_type)
    if (name != main_type) s.weight_types += fmt::format(" + {} ({:.0f}%)", name, 100.0 * n / all_weights);
  if (GgmlTypeName(output->type) != main_type) s.weight_types += fmt::format(", LM head {}", GgmlTypeName(output->type));
  return s;
}

}  // namespace ridge
