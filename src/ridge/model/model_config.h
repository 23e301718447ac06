#pragma once
// The shape of a Llama-family model, read from GGUF metadata (llama.* keys),
// and the reference model's KV-cache formula.
#include <cstdint>
#include <string>

#include "ridge/kv/kv_formula.h"  // KvBytesPerToken

namespace ridge {

class GgufFile;

struct LlamaConfig {
  std::string architecture = "llama";
  int64_t n_vocab = 0;
  int64_t n_ctx_train = 0;   // llama.context_length
  int64_t n_embd = 0;        // llama.embedding_length
  int64_t n_layers = 0;      // llama.block_count
  int64_t n_ff = 0;          // llama.feed_forward_length
  int64_t n_heads = 0;       // llama.attention.head_count
  int64_t n_kv_heads = 0;    // llama.attention.head_count_kv (defaults to n_heads)
  int64_t head_dim = 0;      // n_embd / n_heads
  int64_t rope_dim = 0;      // llama.rope.dimension_count (defaults to head_dim)
  float rms_eps = 1e-5f;     // llama.attention.layer_norm_rms_epsilon
  float rope_freq_base = 10000.0f;  // llama.rope.freq_base

  // Reads and validates the keys of `architecture` (general.architecture);
  // throws ridge::Error naming the key that is missing or inconsistent.
  // n_vocab comes from the tokenizer token list or token_embd.weight.
  static LlamaConfig FromGguf(const GgufFile& file);
};

}  // namespace ridge
