#pragma once
// Random-weight GGUF files of any supported architecture and shape (`ridge
// gen-model`): the metadata keys and tensors llama.cpp writes for that
// architecture (gguf/architecture.h: biases, per-head norms, fused tensors,
// sandwich norms, RoPE divisors, soft-caps, sliding window), the tokenizer
// copied from a vocabulary GGUF, and seeded weights small enough that
// activations stay finite through any number of layers.
//
// Weights: every entry of a 2-D weight with rows of n_in elements is uniform
// in [-sqrt(3 / n_in), sqrt(3 / n_in)): mean 0 and standard deviation
// 1 / sqrt(n_in), the variance of N(0, 1 / sqrt(n_in)) entries but ~10x cheaper
// to draw. So y = W x keeps the scale of x, and RMSNorm resets it each layer.
// Norm weights are F32: 1.0 in llama files (as they always were), uniform in
// [0.75, 1.25) in the other architectures', so that a graph that skipped or
// misplaced a norm could not pass for right. Biases are uniform in [-0.5, 0.5).
// Experts' routers (ffn_gate_inp) stay F32, as llama.cpp's quantize leaves them.
// gpt-oss's sinks are drawn as biases are (uniform in [-0.5, 0.5)).
//
// Determinism: each row is drawn by its own xoshiro256** generator seeded from
// (seed, hash of the tensor name, row index), so the file's bytes depend only on
// the seed and the shape, not on the thread count or tensor order.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ridge/gguf/ggml_type.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/gguf_writer.h"
#include "ridge/gguf/quant_recipe.h"

namespace ridge {

class ThreadPool;

// How RoPE divisors or scaling keys are written.
enum class RandomRopeScaling {
  kNone,
  kLinear,    // {arch}.rope.scaling.type linear + factor
  kYarn,      // yarn + factor + original_context_length
  kLlama3,    // rope_freqs.weight from Llama 3.1's rule (factor, low 1, high 4, original_context_length)
  kLongRope,  // rope_factors_long/short.weight + original_context_length + attn_factor (phi3)
};

struct RandomModelShape {
  int64_t n_embd = 0;      // {arch}.embedding_length
  int64_t n_ff = 0;        // {arch}.feed_forward_length
  int64_t n_layers = 0;    // {arch}.block_count
  int64_t n_heads = 0;     // {arch}.attention.head_count
  int64_t n_kv_heads = 0;  // {arch}.attention.head_count_kv
  int64_t n_ctx = 2048;    // {arch}.context_length
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-5f;
  bool tied_embeddings = false;  // true: no output.weight (the runtime reuses token_embd.weight)
  std::string architecture = "llama";  // one of SupportedArchitectureNames()
  int64_t head_dim = 0;          // 0: n_embd / n_heads; else written as key_length and value_length
  int64_t sliding_window = 0;    // {arch}.attention.sliding_window; 0: not written
  float attn_softcap = 0.0f;     // {arch}.attn_logit_softcapping (gemma2); 0: not written
  float final_softcap = 0.0f;    // {arch}.final_logit_softcapping (gemma2); 0: not written
  float rope_freq_base_swa = 0;  // {arch}.rope.freq_base_swa; 0: not written
  RandomRopeScaling rope_scaling = RandomRopeScaling::kNone;
  float rope_factor = 1.0f;            // rope.scaling.factor
  int64_t rope_original_context = 0;   // rope.scaling.original_context_length
  int64_t n_expert = 0;        // {arch}.expert_count; 0: a dense FFN
  int64_t n_expert_used = 0;   // {arch}.expert_used_count
  int64_t n_ff_exp = 0;        // {arch}.expert_feed_forward_length (0: n_ff)
  int64_t n_ff_shexp = 0;      // {arch}.expert_shared_feed_forward_length (qwen2moe; 0: n_ff_exp)
};

struct RandomModelOptions {
  RandomModelShape shape;
  GgmlType type = GgmlType::kF32;  // of the 2-D weights: any type QuantizeRow writes
  // A llama.cpp mix (Q4_K_M, ...) deciding each weight's type instead; its base type must be `type`.
  std::optional<QuantRecipe> recipe;
  // The experts' stacked matrices (ffn_*_exps.weight); nullopt: MXFP4 in
  // gpt-oss files, as its real files hold them, else `type` (or the mix's choice).
  std::optional<GgmlType> expert_type;
  uint64_t seed = 0;
  std::string name = "ridge-random";  // general.name
};

// Throws ridge::Error naming the field when the shape cannot be a model of its
// architecture (an unknown one, non-positive sizes, heads that do not divide,
// an odd head dimension, rows that are not a multiple of the type's block,
// variant settings the architecture does not have) or the type cannot be written.
void ValidateRandomModel(const RandomModelOptions& options, int64_t n_vocab);

// The vocabulary size of a tokenizer GGUF: the length of tokenizer.ggml.tokens.
int64_t VocabSize(const GgufFile& vocab);

// Fills a writer with the architecture's metadata, every tokenizer.* key of `vocab` (copied,
// so `vocab` need not outlive the writer) and lazily produced random tensors.
// The producers run on `pool` (which must outlive the writer's Write) or on the
// calling thread when it is null.
GgufWriter BuildRandomModelGguf(const GgufFile& vocab, const RandomModelOptions& options, ThreadPool* pool);

// The values of row `row` of the 2-D tensor `tensor_name` (row length n_in) for
// `seed`, as BuildRandomModelGguf draws them before conversion to the file's type.
void RandomWeightRow(uint64_t seed, const std::string& tensor_name, int64_t row, float* out, int64_t n_in);

}  // namespace ridge
