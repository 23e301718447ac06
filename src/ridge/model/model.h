#pragma once
// A Llama-family decoder loaded from GGUF, its weights used in place from the
// file's memory (by default a copy in 2 MiB pages, see MappedFile), and its
// forward pass over a Batch with a paged KV cache.
#include <memory>
#include <string>
#include <vector>

#include "ridge/base/thread_pool.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/kernels/ops.h"
#include "ridge/kv/paged_kv_cache.h"
#include "ridge/model/batch.h"
#include "ridge/model/llama_config.h"

namespace ridge {

struct LayerWeights {
  std::vector<float> attn_norm;  // [n_embd]
  kernels::WeightMatrix wq;      // [n_heads · head_dim, n_embd]
  kernels::WeightMatrix wk;      // [n_kv_heads · head_dim, n_embd]
  kernels::WeightMatrix wv;      // [n_kv_heads · head_dim, n_embd]
  kernels::WeightMatrix wo;      // [n_embd, n_heads · head_dim]
  std::vector<float> ffn_norm;   // [n_embd]
  kernels::WeightMatrix w_gate;  // [n_ff, n_embd]
  kernels::WeightMatrix w_up;    // [n_ff, n_embd]
  kernels::WeightMatrix w_down;  // [n_embd, n_ff]
};

struct ModelWeights {
  kernels::WeightMatrix token_embd;  // [n_vocab, n_embd]
  std::vector<LayerWeights> layers;
  std::vector<float> output_norm;    // [n_embd]
  kernels::WeightMatrix output;      // [n_vocab, n_embd]; token_embd when tied
  bool tied_output = false;
  int64_t weight_bytes = 0;          // every matrix, as stored
};

class LlamaModel {
 public:
  // Opens and validates a llama GGUF; throws ridge::Error naming the missing or
  // mis-shaped tensor.
  static std::unique_ptr<LlamaModel> Load(const std::string& path,
                                          FileBacking backing = FileBacking::kHugePageMemory);
  ~LlamaModel();

  const LlamaConfig& config() const { return config_; }
  const GgufFile& file() const { return file_; }
  const ModelWeights& weights() const { return weights_; }
  // The shape a KV cache for this model must have, with the given element type and block size.
  KvCacheShape KvShape(GgmlType type, int64_t block_tokens) const;

  // Runs every token of `batch` through the model. K and V of each token are
  // written to `cache` at its (sequence, position), which must be reserved;
  // attention of a token reads positions [0, position] of its sequence.
  // logits: [batch.n_logits(), n_vocab], rows in batch order of want_logits.
  void Forward(const Batch& batch, PagedKvCache& cache, float* logits, ThreadPool& pool);

  // FLOPs of one forward pass over n_tokens tokens whose attention spans
  // `attended_positions` positions in total (2 per multiply-add).
  double ForwardFlops(int64_t n_tokens, int64_t attended_positions) const;

 private:
  LlamaModel(GgufFile file, LlamaConfig config, ModelWeights weights);
  struct Scratch;
  void EmbedTokens(const Batch& batch, float* x);
  void AttentionBlock(const LayerWeights& w, int64_t layer, const Batch& batch, PagedKvCache& cache, float* x,
                      ThreadPool& pool);
  void FeedForwardBlock(const LayerWeights& w, int64_t n_tokens, float* x, ThreadPool& pool);

  GgufFile file_;
  LlamaConfig config_;
  ModelWeights weights_;
  std::unique_ptr<Scratch> scratch_;
};

}  // namespace ridge
