#pragma once
// A decoder of one of the architectures in gguf/architecture.h loaded from
// GGUF, its weights used in place from the file's memory (by default a copy in
// 2 MiB pages, see MappedFile), and its forward pass over a Batch with a paged
// KV cache.
#include <memory>
#include <string>
#include <vector>

#include "ridge/base/huge_page_buffer.h"
#include "ridge/base/thread_pool.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/kernels/ops.h"
#include "ridge/kv/paged_kv_cache.h"
#include "ridge/model/batch.h"
#include "ridge/model/model_config.h"
#include "ridge/model/op_profile.h"
#include "ridge/model/parallel_link.h"
#include "ridge/model/rope_table.h"

namespace ridge {

// Vectors are empty where the architecture has no such tensor. A fused
// tensor (attn_qkv, phi3's gate+up in ffn_up) is split into row views of the
// same file bytes, so every architecture runs the same matmuls.
struct LayerWeights {
  std::vector<float> attn_norm;       // [n_embd]
  kernels::WeightMatrix wq;           // [n_heads · head_dim, n_embd]
  kernels::WeightMatrix wk;           // [n_kv_heads · head_dim, n_embd]
  kernels::WeightMatrix wv;           // [n_kv_heads · head_dim, n_embd]
  std::vector<float> q_bias;          // [n_heads · head_dim]     (qwen2)
  std::vector<float> k_bias;          // [n_kv_heads · head_dim]
  std::vector<float> v_bias;          // [n_kv_heads · head_dim]
  std::vector<float> q_norm;          // [head_dim]               (qwen3, gemma3)
  std::vector<float> k_norm;          // [head_dim]
  std::vector<float> attn_sinks;      // [n_heads]                (gpt-oss)
  kernels::WeightMatrix wo;           // [n_embd, n_heads · head_dim]
  std::vector<float> o_bias;          // [n_embd]                 (gpt-oss)
  std::vector<float> post_attn_norm;  // [n_embd]                 (gemma2/3)
  std::vector<float> ffn_norm;        // [n_embd]
  kernels::WeightMatrix w_gate;       // [n_ff, n_embd]
  kernels::WeightMatrix w_up;         // [n_ff, n_embd]
  kernels::WeightMatrix w_down;       // [n_embd, n_ff]
  std::vector<float> post_ffw_norm;   // [n_embd]                 (gemma2/3)
  // Mixture of experts (w_gate/w_up/w_down unused, these empty when dense).
  kernels::WeightMatrix router;                   // [n_expert, n_embd]
  std::vector<float> router_bias;                 // [n_expert]           (gpt-oss)
  std::vector<kernels::WeightMatrix> exp_gate;    // [n_expert] × [n_ff_exp, n_embd]: row views of ffn_gate_exps
  std::vector<kernels::WeightMatrix> exp_up;      // [n_expert] × [n_ff_exp, n_embd]
  std::vector<kernels::WeightMatrix> exp_down;    // [n_expert] × [n_embd, n_ff_exp]
  std::vector<float> exp_gate_bias, exp_up_bias;  // [n_expert, n_ff_exp] (gpt-oss)
  std::vector<float> exp_down_bias;               // [n_expert, n_embd]   (gpt-oss)
  std::vector<float> shared_gate_inp;             // [n_embd]  (qwen2moe's shared expert)
  kernels::WeightMatrix shared_gate, shared_up;   // [n_ff_shexp, n_embd]
  kernels::WeightMatrix shared_down;              // [n_embd, n_ff_shexp]
};

// What loading did to the matrices' layout (see RepackWeights).
struct WeightLayout {
  int64_t repacked_matrices = 0;
  int64_t repacked_bytes = 0;  // rewritten in place: the resident bytes are the file's
  double repack_ms = 0;
  bool mapped = false;         // --mmap: the file's pages, read in place, never rewritten
  std::string isa;             // the ISA whose kernels the panels are laid out for
};

struct ModelWeights {
  kernels::WeightMatrix token_embd;  // [n_vocab, n_embd]
  std::vector<LayerWeights> layers;
  std::vector<float> output_norm;    // [n_embd]
  kernels::WeightMatrix output;      // [n_vocab, n_embd]; token_embd when tied
  bool tied_output = false;
  RopeTable rope_global, rope_sliding;
  int64_t weight_bytes = 0;          // every matrix, as stored (split: the bytes this rank holds)
  // Split across ranks (model_partition.h): this rank's slices, copied out of the file.
  HugePageBuffer shard_memory;
  WeightLayout layout;
};

// Repacks every matrix that the active ISA has
// weight-panel kernels for (kernels::RepackInPlace) in the file's memory, when that memory is a private copy
// (FileBacking::kHugePageMemory); a mapped file keeps its layout. The token
// embedding (read by row, and the output too when tied) is never repacked.
WeightLayout RepackWeights(GgufFile& file, ModelWeights& weights);
// One line for load logs and bench reports, e.g. "repacked at load for avx512:
// 154 matrices, 1050 MiB in place in 180 ms" or "file layout (mapped: ...)".
std::string DescribeWeightLayout(const WeightLayout& layout);

// Biases of a gated FFN's three projections (null: none), as gpt-oss's experts have.
struct FfnBiases {
  const float* gate = nullptr;  // [n_ff]
  const float* up = nullptr;    // [n_ff]
  const float* down = nullptr;  // [n_embd]
};

class Model {
 public:
  // Opens and validates a GGUF; throws ridge::Error naming the architecture
  // ridge does not run, the missing or mis-shaped tensor, or a tensor the
  // architecture's graph would not read.
  // With a partition (parallel_link.h) the file is mapped, not copied, and
  // only this rank's slices are read into memory (model_partition.h).
  static std::unique_ptr<Model> Load(const std::string& path,
                                          FileBacking backing = FileBacking::kHugePageMemory,
                                          const ModelPartition& partition = {});
  ~Model();

  const ModelConfig& config() const { return config_; }
  // What this rank computes with (config() when the model is not split).
  const ModelConfig& local_config() const { return local_; }
  const ModelPartition& partition() const { return partition_; }
  // Required before Forward when the model is split; must outlive its use.
  void set_parallel_link(ParallelLink* link) { link_ = link; }
  // Rank 0 of a split model, between forward passes: ParallelLink::KeepAlive
  // (nothing when the model is whole).
  void KeepLinkAlive() {
    if (link_) link_->KeepAlive();
  }
  const GgufFile& file() const { return file_; }
  const ModelWeights& weights() const { return weights_; }
  // The shape a KV cache for this model must have, with the given element
  // type and block size (split: this rank's KV heads or layers).
  KvCacheShape KvShape(GgmlType type, int64_t block_tokens) const;

  // Runs every token of `batch` through the model. K and V of each token are
  // written to `cache` at its (sequence, position), which must be reserved;
  // attention of a token reads positions [0, position] of its sequence.
  // logits: [batch.n_logits(), n_vocab], rows in batch order of want_logits.
  // Split across ranks: every rank calls it for the same step (rank 0 shares
  // the step first); logits are written on rank 0 only.
  void Forward(const Batch& batch, PagedKvCache& cache, float* logits, ThreadPool& pool);

  // Mixture of experts: what Forward's routing made the expert matmuls read,
  // summed over every layer of every call since the last reset (all zero for
  // a dense model). Each expert hit in a call is read once for all of its
  // tokens, so bytes = Σ over (call, layer, expert hit) of its gate, up and
  // down weights' bytes: the measured side of the roofline's predicted union
  // of experts hit.
  struct ExpertReads {
    int64_t experts_hit = 0;
    int64_t bytes = 0;
    // [n_layers × n_expert] (the model's layers, this rank's only counted):
    // tokens routed to each expert of each layer, and [n_layers] the tokens
    // through each layer's experts; empty until a MoE forward pass. Their
    // ratio is the routing's rate of hitting each expert, per token.
    std::vector<int64_t> routes;
    std::vector<int64_t> layer_tokens;
  };
  const ExpertReads& expert_reads() const { return expert_reads_; }
  void ResetExpertReads() { expert_reads_ = {}; }

  // Forward times each of its steps into `profile` (op_profile.h) until it
  // is set to null; the profile must outlive its use.
  void set_op_profile(OpProfile* profile) { profile_ = profile; }

  // FLOPs of one forward pass over n_tokens tokens whose attention spans
  // `attended_positions` positions in total (2 per multiply-add; experts: the
  // n_expert_used each token is routed to).
  double ForwardFlops(int64_t n_tokens, int64_t attended_positions) const;

 private:
  Model(GgufFile file, ModelConfig config, ModelWeights weights, const ModelPartition& partition);
  struct Scratch;
  void EmbedTokens(const Batch& batch, float* x);
  // This rank's layers over the batch's residual stream x [batch.size(), n_embd].
  void RunLayers(const Batch& batch, PagedKvCache& cache, float* x, ThreadPool& pool);
  // Pipeline parallel, by default: the fewest tokens a micro-batch is cut to.
  // Fewer rows make a stage's matmuls read their weights for too little work:
  // qwen2.5-0.5b Q8_0 on one Zen 4 thread prefilled 152 tokens/s in passes of
  // 8 tokens, 214 of 16 and 262 of 32, so under --pp 2 four micro-batches of a
  // 32-token step were no faster than one, and of a 16-token step slower
  // (docs/benchmarks.md, issue 18). A decode step's one token per sequence is
  // memory-bound at any small batch: cut, each stage would read its weights
  // once per micro-batch.
  static constexpr int64_t kMinMicroBatchTokens = 32;
  // Forward of a model split by layers: the step in micro-batches through this
  // rank's stage (parallel_link.h); x [batch.size(), n_embd], the step's stream.
  void ForwardPipeline(const Batch& batch, PagedKvCache& cache, float* x, float* logits, ThreadPool& pool);
  void AttentionBlock(const LayerWeights& w, int64_t layer, const Batch& batch, PagedKvCache& cache, float* x,
                      ThreadPool& pool);
  void ProjectQkv(const LayerWeights& w, int64_t n_tokens, ThreadPool& pool);
  void PositionQkAndStoreKv(const LayerWeights& w, int64_t layer, const Batch& batch, PagedKvCache& cache,
                            ThreadPool& pool);
  void Attend(const LayerWeights& w, int64_t layer, const Batch& batch, PagedKvCache& cache, ThreadPool& pool);
  void AttendSplit(const LayerWeights& w, int64_t layer, const Batch& batch, PagedKvCache& cache, ThreadPool& pool,
                   int64_t window);
  // Attend's arithmetic over a layer, and the cached K and V it must read:
  // each sequence's positions once (tiles of its tokens that read a position
  // again find it in the CPU's caches), for the profile.
  struct AttentionWork {
    double flops = 0, kv_bytes = 0;
  };
  AttentionWork CountAttentionWork(int64_t layer, const Batch& batch, const PagedKvCache& cache) const;
  void AppendAttentionRows(const LayerWeights& w, const Batch& batch, int64_t t0, int64_t n_tokens, int64_t h0,
                           int64_t n_q, int64_t first, std::vector<kernels::AttentionRow>& rows);
  // Attention groups (tile, KV head) below this many per thread are split by
  // positions over the threads when their rows are long (Model::Attend).
  static constexpr int64_t kSplitBelowGroupsPerThread = 2;
  void FeedForwardBlock(const LayerWeights& w, int64_t layer, int64_t n_tokens, float* x, ThreadPool& pool);
  // down(act(gate · xn) ⊙ (up · xn)) for n rows of xn: [n, n_embd] → out [n, n_embd].
  void GatedFfn(const kernels::WeightMatrix& gate, const kernels::WeightMatrix& up, const kernels::WeightMatrix& down,
                const float* xn, int64_t n, float* out, ThreadPool& pool, OpProfile* profile,
                const FfnBiases& biases = {});
  // gate = act(gate + biases.gate, up + biases.up) over n rows of ff, in place (biases null: none).
  void ActivateFfn(const FfnBiases& biases, int64_t ff, int64_t n, float* gate, float* up) const;
  void MixtureOfExperts(const LayerWeights& w, int64_t layer, int64_t n_tokens, ThreadPool& pool);
  // x[t] += norm(proj[t]) (post_norm empty: x[t] += proj[t]) for every token.
  void AddResidual(const std::vector<float>& post_norm, int64_t n_tokens, float* x, ThreadPool& pool);
  // scratch xn[t] = RmsNorm(x[t]) · norm for t < n_tokens; x: [n_tokens, n_embd].
  void NormTokens(const float* x, const std::vector<float>& norm, int64_t n_tokens, ThreadPool& pool);
  // The final norm and LM head over the rows that want logits (split: this
  // rank's vocabulary rows, gathered to rank 0's logits).
  void ComputeLogits(const Batch& batch, const float* x, float* logits, ThreadPool& pool);

  GgufFile file_;
  ModelConfig config_;
  ModelPartition partition_;
  ModelConfig local_;       // LocalConfig(config_, partition_)
  int64_t first_layer_ = 0;  // this rank's layers: [first_layer_, end_layer_)
  int64_t end_layer_ = 0;
  ParallelLink* link_ = nullptr;
  const ArchitectureSpec& arch_;
  ModelWeights weights_;
  std::unique_ptr<Scratch> scratch_;
  ExpertReads expert_reads_;
  OpProfile* profile_ = nullptr;
};

}  // namespace ridge
