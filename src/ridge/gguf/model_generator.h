#pragma once
// Random-weight llama GGUF files of any shape (`ridge gen-model`): the
// metadata keys and tensor names llama.cpp writes, the tokenizer copied from a
// vocabulary GGUF, and seeded weights small enough that activations stay
// finite through any number of layers.
//
// Weights: every entry of a 2-D weight with rows of n_in elements is uniform
// in [-sqrt(3 / n_in), sqrt(3 / n_in)): mean 0 and standard deviation
// 1 / sqrt(n_in), the variance of N(0, 1 / sqrt(n_in)) entries but ~10x cheaper
// to draw. So y = W x keeps the scale of x, and RMSNorm resets it each layer.
// Norm weights are 1.0 and always F32.
//
// Determinism: each row is drawn by its own xoshiro256** generator seeded from
// (seed, hash of the tensor name, row index), so the file's bytes depend only on
// the seed and the shape, not on the thread count or tensor order.
#include <cstdint>
#include <string>
#include <vector>

#include "ridge/gguf/ggml_type.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/gguf_writer.h"

namespace ridge {

class ThreadPool;

struct RandomLlamaShape {
  int64_t n_embd = 0;      // llama.embedding_length
  int64_t n_ff = 0;        // llama.feed_forward_length
  int64_t n_layers = 0;    // llama.block_count
  int64_t n_heads = 0;     // llama.attention.head_count
  int64_t n_kv_heads = 0;  // llama.attention.head_count_kv
  int64_t n_ctx = 2048;    // llama.context_length
  float rope_freq_base = 10000.0f;
  float rms_eps = 1e-5f;
  bool tied_embeddings = false;  // true: no output.weight (the runtime reuses token_embd.weight)
};

struct RandomModelOptions {
  RandomLlamaShape shape;
  GgmlType type = GgmlType::kF32;  // of the 2-D weights: F32, F16, BF16, Q8_0 or Q4_0
  uint64_t seed = 0;
  std::string name = "ridge-random";  // general.name
};

// Throws ridge::Error naming the field when the shape cannot be a llama model
// (non-positive sizes, heads that do not divide, an odd head dimension, rows
// that are not a multiple of the type's block) or the type cannot be written.
void ValidateRandomModel(const RandomModelOptions& options, int64_t n_vocab);

// The vocabulary size of a tokenizer GGUF: the length of tokenizer.ggml.tokens.
int64_t VocabSize(const GgufFile& vocab);

// Fills a writer with llama metadata, every tokenizer.* key of `vocab` (copied,
// so `vocab` need not outlive the writer) and lazily produced random tensors.
// The producers run on `pool` (which must outlive the writer's Write) or on the
// calling thread when it is null.
GgufWriter BuildRandomLlamaGguf(const GgufFile& vocab, const RandomModelOptions& options, ThreadPool* pool);

// The values of row `row` of the 2-D tensor `tensor_name` (row length n_in) for
// `seed`, as BuildRandomLlamaGguf draws them before conversion to the file's type.
void RandomWeightRow(uint64_t seed, const std::string& tensor_name, int64_t row, float* out, int64_t n_in);

}  // namespace ridge
