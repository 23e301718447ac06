#include "ridge/model/llama_config.h"

#include <cmath>

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

}  // namespace

LlamaConfig LlamaConfig::FromGguf(const GgufFile& f) {
  LlamaConfig c;
  c.architecture = f.RequireString("general.architecture");
  const std::string a = c.architecture;
  c.n_ctx_train = RequirePositive(f, a + ".context_length");
  c.n_embd = RequirePositive(f, a + ".embedding_length");
  c.n_layers = RequirePositive(f, a + ".block_count");
  c.n_ff = RequirePositive(f, a + ".feed_forward_length");
  c.n_heads = RequirePositive(f, a + ".attention.head_count");
  c.n_kv_heads = f.GetInt(a + ".attention.head_count_kv") ? RequirePositive(f, a + ".attention.head_count_kv")
                                                          : c.n_heads;
  if (c.n_embd % c.n_heads != 0)
    Fail("{}: {}.embedding_length {} is not divisible by {}.attention.head_count {}", f.path(), a, c.n_embd, a,
         c.n_heads);
  if (c.n_heads % c.n_kv_heads != 0)
    Fail("{}: {}.attention.head_count {} is not divisible by {}.attention.head_count_kv {}", f.path(), a, c.n_heads,
         a, c.n_kv_heads);
  c.head_dim = c.n_embd / c.n_heads;
  for (const char* suffix : {".attention.key_length", ".attention.value_length"}) {
    if (auto len = f.GetInt(a + suffix); len && *len != c.head_dim)
      Fail("{}: {}{} = {} differs from embedding_length / head_count = {}; ridge does not support that", f.path(), a,
           suffix, *len, c.head_dim);
  }
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
  if (auto base = f.GetFloat(a + ".rope.freq_base")) {
    if (!(*base > 0.0 && std::isfinite(*base)))
      Fail("{}: {}.rope.freq_base {} must be a positive number", f.path(), a, *base);
    c.rope_freq_base = static_cast<float>(*base);
  }

  // Vocabulary size: the tokenizer's token list, else token_embd.weight's rows; they must agree.
  int64_t n_from_tokens = 0, n_from_embd = 0;
  if (const GgufValue* tokens = f.Find("tokenizer.ggml.tokens")) {
    const auto* arr = tokens->AsArray();
    if (!arr) Fail("{}: metadata key 'tokenizer.ggml.tokens' is not an array", f.path());
    n_from_tokens = static_cast<int64_t>(arr->size());
  }
  if (const GgufTensorInfo* embd = f.FindTensor("token_embd.weight")) {
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
