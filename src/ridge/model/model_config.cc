#include "ridge/model/model_config.h"

#include <cmath>
#include <optional>

#include "ridge/base/error.h"
#include "ridge/gguf/gguf_file.h"

namespace ridge {
namespace {

constexpr int64_t kMaxDim = int64_t{1} << 31;  // any sane model fits; keeps products far from overflow

int64_t RequirePositive(const GgufFile& f, const std::string& key) {
  const int64_t v = f.RequireInt(key);
  if (v <= 0 || v > kMaxDim) Fail("{}: metadata key '{}' = {} is out of range (1..{})", f.path(), key, v, kMaxDim);
  return v;
}

// A float key that must be a positive finite number when present.
std::optional<float> OptionalPositiveFloat(const GgufFile& f, const std::string& key) {
  const std::optional<double> v = f.GetFloat(key);
  if (!v) return std::nullopt;
  if (!(*v > 0.0 && *v < 1e30)) Fail("{}: metadata key '{}' = {} must be a positive number", f.path(), key, *v);
  return static_cast<float>(*v);
}

RopeScaling ReadRopeScaling(const GgufFile& f, const std::string& a, int64_t n_ctx_train) {
  RopeScaling r;
  const std::string type_key = a + ".rope.scaling.type", factor_key = a + ".rope.scaling.factor";
  const std::string type = f.GetString(type_key).value_or("none");
  const std::optional<float> factor = OptionalPositiveFloat(f, factor_key);
  // Older files: {arch}.rope.scale_linear alone means linear scaling.
  const std::optional<float> scale_linear = OptionalPositiveFloat(f, a + ".rope.scale_linear");
  if (type == "none") {
    r.type = scale_linear && *scale_linear != 1.0f ? RopeScalingType::kLinear : RopeScalingType::kNone;
    r.factor = scale_linear.value_or(1.0f);
  } else if (type == "linear" || type == "yarn") {
    if (!factor) Fail("{}: {} is '{}' but '{}' is missing", f.path(), type_key, type, factor_key);
    r.type = type == "linear" ? RopeScalingType::kLinear : RopeScalingType::kYarn;
    r.factor = *factor;
  } else if (type == "longrope") {
    r.type = RopeScalingType::kLongRope;
  } else {
    Fail("{}: {} = '{}' is not a RoPE scaling ridge knows (none, linear, yarn, longrope)", f.path(), type_key,
         type);
  }
  const std::string orig_key = a + ".rope.scaling.original_context_length";
  r.original_context = f.GetInt(orig_key) ? RequirePositive(f, orig_key) : n_ctx_train;
  r.attn_factor = OptionalPositiveFloat(f, a + ".rope.scaling.attn_factor").value_or(1.0f);
  r.yarn_beta_fast = OptionalPositiveFloat(f, a + ".rope.scaling.yarn_beta_fast").value_or(32.0f);
  r.yarn_beta_slow = OptionalPositiveFloat(f, a + ".rope.scaling.yarn_beta_slow").value_or(1.0f);
  return r;
}

// The dimension whose inverse square root scales q·k when the file does not
// say ({arch}.attention.scale): the head size, except Gemma 2/3 27B, whose
// query_pre_attn_scalar is n_embd / n_heads (llama.cpp tells them by depth).
int64_t DefaultQueryScaleDim(const ModelConfig& c) {
  const bool gemma_27b = (c.architecture == "gemma2" && c.n_layers == 46) ||
                         (c.architecture == "gemma3" && c.n_layers == 62);
  return gemma_27b ? c.n_embd / c.n_heads : c.head_dim;
}

// Experts: a count and a top-k the architecture allows, each expert's FFN size.
void ReadExperts(const GgufFile& f, const ArchitectureSpec& spec, ModelConfig& c) {
  const std::string a = c.architecture, count_key = a + ".expert_count", used_key = a + ".expert_used_count";
  const bool has_experts = f.GetInt(count_key).value_or(0) != 0;
  if (spec.experts == Experts::kNever) {
    if (has_experts) Fail("{}: {} is set but {} has no mixture-of-experts variant", f.path(), count_key, a);
    return;
  }
  if (!has_experts) {
    if (spec.experts == Experts::kAlways) Fail("{}: required metadata key '{}' is missing", f.path(), count_key);
    return;
  }
  constexpr int64_t kMaxExperts = 1024;
  c.n_expert = RequirePositive(f, count_key);
  c.n_expert_used = RequirePositive(f, used_key);
  if (c.n_expert > kMaxExperts || c.n_expert_used > c.n_expert)
    Fail("{}: {} = {} with {} = {}: need 1 <= used <= count <= {}", f.path(), used_key, c.n_expert_used, count_key,
         c.n_expert, kMaxExperts);
  const std::string ff_key = a + ".expert_feed_forward_length";
  c.n_ff_exp = f.GetInt(ff_key) ? RequirePositive(f, ff_key) : c.n_ff;
  if (spec.shared_expert) {
    const std::string shared_key = a + ".expert_shared_feed_forward_length";
    c.n_ff_shexp = f.GetInt(shared_key) ? RequirePositive(f, shared_key) : c.n_ff_exp;
  }
}

}  // namespace

const ArchitectureSpec& ModelConfig::arch() const { return RequireArchitecture(architecture, "model config"); }

bool ModelConfig::IsSlidingLayer(int64_t layer) const {
  return sliding_window > 0 && ridge::IsSlidingLayer(arch(), layer);
}

int64_t ModelConfig::SlidingLayerCount() const {
  int64_t n = 0;
  for (int64_t l = 0; l < n_layers; ++l) n += IsSlidingLayer(l) ? 1 : 0;
  return n;
}

ModelConfig ModelConfig::FromGguf(const GgufFile& f) {
  ModelConfig c;
  c.architecture = f.RequireString("general.architecture");
  const ArchitectureSpec& spec = RequireArchitecture(c.architecture, f.path());
  const std::string a = c.architecture;
  c.n_ctx_train = RequirePositive(f, a + ".context_length");
  c.n_embd = RequirePositive(f, a + ".embedding_length");
  c.n_layers = RequirePositive(f, a + ".block_count");
  c.n_ff = RequirePositive(f, a + ".feed_forward_length");
  c.n_heads = RequirePositive(f, a + ".attention.head_count");
  c.n_kv_heads = f.GetInt(a + ".attention.head_count_kv") ? RequirePositive(f, a + ".attention.head_count_kv")
                                                          : c.n_heads;
  // The head size is its own key in files whose heads do not tile n_embd (qwen3, gemma).
  const std::optional<int64_t> key_length =
      f.GetInt(a + ".attention.key_length") ? std::optional(RequirePositive(f, a + ".attention.key_length"))
                                            : std::nullopt;
  if (key_length) {
    c.head_dim = *key_length;
  } else if (c.n_embd % c.n_heads != 0) {
    Fail("{}: {}.embedding_length {} is not divisible by {}.attention.head_count {} and {}.attention.key_length "
         "is absent",
         f.path(), a, c.n_embd, a, c.n_heads, a);
  } else {
    c.head_dim = c.n_embd / c.n_heads;
  }
  if (c.n_heads % c.n_kv_heads != 0)
    Fail("{}: {}.attention.head_count {} is not divisible by {}.attention.head_count_kv {}", f.path(), a, c.n_heads,
         a, c.n_kv_heads);
  if (auto len = f.GetInt(a + ".attention.value_length"); len && *len != c.head_dim)
    Fail("{}: {}.attention.value_length = {} differs from the key length {}; ridge does not support that", f.path(),
         a, *len, c.head_dim);
  c.rope_dim = f.GetInt(a + ".rope.dimension_count") ? RequirePositive(f, a + ".rope.dimension_count") : c.head_dim;
  if (c.rope_dim > c.head_dim || c.rope_dim % 2 != 0)
    Fail("{}: {}.rope.dimension_count {} must be even and at most the head dim {}", f.path(), a, c.rope_dim,
         c.head_dim);
  if (auto eps = f.GetFloat(a + ".attention.layer_norm_rms_epsilon")) {
    if (!(*eps > 0.0 && *eps < 1.0))
      Fail("{}: {}.attention.layer_norm_rms_epsilon {} is not in (0, 1)", f.path(), a, *eps);
    c.rms_eps = static_cast<float>(*eps);
  } else {
    Fail("{}: required metadata key '{}.attention.layer_norm_rms_epsilon' is missing", f.path(), a);
  }
  if (auto base = OptionalPositiveFloat(f, a + ".rope.freq_base")) c.rope_freq_base = *base;
  // Gemma 3's sliding layers turn at base 10000 whatever the global base (llama.cpp's default when the key is absent).
  c.rope_freq_base_swa = OptionalPositiveFloat(f, a + ".rope.freq_base_swa").value_or(a == "gemma3" ? 10000.0f : c.rope_freq_base);
  c.rope_scaling = ReadRopeScaling(f, a, c.n_ctx_train);
  if (auto window = f.GetInt(a + ".attention.sliding_window")) {
    if (*window < 1 || *window > kMaxDim)
      Fail("{}: {}.attention.sliding_window = {} must be at least 1 token", f.path(), a, *window);
    c.sliding_window = *window;
  }
  if (spec.soft_caps) {
    c.attn_softcap = OptionalPositiveFloat(f, a + ".attn_logit_softcapping").value_or(0.0f);
    c.final_softcap = OptionalPositiveFloat(f, a + ".final_logit_softcapping").value_or(0.0f);
  }
  c.attention_scale = OptionalPositiveFloat(f, a + ".attention.scale")
                          .value_or(1.0f / std::sqrt(static_cast<float>(DefaultQueryScaleDim(c))));
  if (spec.scale_embeddings) c.embedding_scale = std::sqrt(static_cast<float>(c.n_embd));
  ReadExperts(f, spec, c);

  // Vocabulary size: the tokenizer's token list, else token_embd.weight's rows; they must agree.
  int64_t n_from_tokens = 0, n_from_embd = 0;
  if (const GgufValue* tokens = f.Find("tokenizer.ggml.tokens")) {
    const auto* arr = tokens->AsArray();
    if (!arr) Fail("{}: metadata key 'tokenizer.ggml.tokens' is not an array", f.path());
    n_from_tokens = static_cast<int64_t>(arr->size());
  }
  if (const GgufTensorInfo* embd = f.FindTensor(TensorName(TensorRole::kTokenEmbd))) {
    if (embd->dims.size() != 2 || embd->dims[0] != c.n_embd)
      Fail("{}: token_embd.weight should be [{} × n_vocab] (dims[0] = n_embd) but its dims[0] is {} and it has {} "
           "dims",
           f.path(), c.n_embd, embd->dims[0], embd->dims.size());
    n_from_embd = embd->dims[1];
  }
  if (n_from_tokens && n_from_embd && n_from_tokens != n_from_embd)
    Fail("{}: tokenizer.ggml.tokens has {} tokens but token_embd.weight has {} rows", f.path(), n_from_tokens,
         n_from_embd);
  c.n_vocab = n_from_tokens ? n_from_tokens : n_from_embd;
  if (c.n_vocab <= 0)
    Fail("{}: cannot tell the vocabulary size: neither tokenizer.ggml.tokens nor token_embd.weight is present",
         f.path());
  return c;
}

}  // namespace ridge
