#include "ridge/gguf/model_generator.h"

#include <cmath>
#include <cstring>
#include <memory>

#include "ridge/base/error.h"
#include "ridge/base/thread_pool.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/gguf/quantize_file.h"
#include "ridge/gguf/row_chunks.h"

namespace ridge {
namespace {

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t Fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// xoshiro256** (Blackman & Vigna), state filled by SplitMix64 as its authors advise.
class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t key) {
    for (uint64_t& word : s_) word = SplitMix64(key);
  }
  uint64_t Next() {
    const uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

struct TensorSpec {
  std::string name;
  std::vector<int64_t> dims;  // dims[0] = row length
  bool is_norm;
};

std::vector<TensorSpec> LlamaTensors(const RandomLlamaShape& s, int64_t n_vocab) {
  const int64_t head_dim = s.n_embd / s.n_heads;
  const int64_t n_kv_embd = head_dim * s.n_kv_heads;
  std::vector<TensorSpec> t;
  t.push_back({"token_embd.weight", {s.n_embd, n_vocab}, false});
  for (int64_t i = 0; i < s.n_layers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    t.push_back({b + "attn_norm.weight", {s.n_embd}, true});
    t.push_back({b + "attn_q.weight", {s.n_embd, s.n_embd}, false});
    t.push_back({b + "attn_k.weight", {s.n_embd, n_kv_embd}, false});
    t.push_back({b + "attn_v.weight", {s.n_embd, n_kv_embd}, false});
    t.push_back({b + "attn_output.weight", {s.n_embd, s.n_embd}, false});
    t.push_back({b + "ffn_norm.weight", {s.n_embd}, true});
    t.push_back({b + "ffn_gate.weight", {s.n_embd, s.n_ff}, false});
    t.push_back({b + "ffn_up.weight", {s.n_embd, s.n_ff}, false});
    t.push_back({b + "ffn_down.weight", {s.n_ff, s.n_embd}, false});
  }
  t.push_back({"output_norm.weight", {s.n_embd}, true});
  if (!s.tied_embeddings) t.push_back({"output.weight", {s.n_embd, n_vocab}, false});
  return t;
}

void CheckPositive(const char* field, int64_t v) {
  if (v <= 0) Fail("gen-model: {} must be > 0, got {}", field, v);
}

}  // namespace

void RandomWeightRow(uint64_t seed, const std::string& tensor_name, int64_t row, float* out, int64_t n_in) {
  uint64_t key = seed;
  key = SplitMix64(key) ^ Fnv1a(tensor_name);
  key = SplitMix64(key) ^ static_cast<uint64_t>(row);
  Xoshiro256 rng(SplitMix64(key));
  // Uniform in [-a, a) with a = sqrt(3 / n_in): variance a^2 / 3 = 1 / n_in.
  const float a = static_cast<float>(std::sqrt(3.0 / static_cast<double>(n_in)));
  const float scale = a * 0x1.0p-23f;
  int64_t i = 0;
  for (; i + 1 < n_in; i += 2) {  // two 24-bit values per 64-bit draw
    const uint64_t x = rng.Next();
    out[i] = static_cast<float>(static_cast<int32_t>(x >> 40) - (1 << 23)) * scale;
    out[i + 1] = static_cast<float>(static_cast<int32_t>((x >> 16) & 0xffffff) - (1 << 23)) * scale;
  }
  if (i < n_in) out[i] = static_cast<float>(static_cast<int32_t>(rng.Next() >> 40) - (1 << 23)) * scale;
}

int64_t VocabSize(const GgufFile& vocab) {
  const GgufValue* tokens = vocab.Find("tokenizer.ggml.tokens");
  const auto* array = tokens ? tokens->AsArray() : nullptr;
  if (!array || tokens->array_elem_type != GgufValueType::kString)
    Fail("{}: no tokenizer.ggml.tokens array of strings; is it a vocabulary GGUF?", vocab.path());
  if (array->empty()) Fail("{}: tokenizer.ggml.tokens is empty", vocab.path());
  return static_cast<int64_t>(array->size());
}

void ValidateRandomModel(const RandomModelOptions& options, int64_t n_vocab) {
  const RandomLlamaShape& s = options.shape;
  CheckPositive("dim (embedding length)", s.n_embd);
  CheckPositive("ffn (feed-forward length)", s.n_ff);
  CheckPositive("layers", s.n_layers);
  CheckPositive("heads", s.n_heads);
  CheckPositive("kv-heads", s.n_kv_heads);
  CheckPositive("ctx", s.n_ctx);
  CheckPositive("vocabulary size", n_vocab);
  constexpr int64_t kMaxDim = int64_t{1} << 20;  // keeps every product far from overflow
  if (s.n_embd > kMaxDim || s.n_ff > kMaxDim || n_vocab > kMaxDim || s.n_layers > 4096 || s.n_ctx > 0xffffffffll)
    Fail("gen-model: shape too large (dim {}, ffn {}, vocab {}, layers {}, ctx {})", s.n_embd, s.n_ff, n_vocab,
         s.n_layers, s.n_ctx);
  if (s.n_embd % s.n_heads != 0)
    Fail("gen-model: dim {} is not a multiple of heads {}", s.n_embd, s.n_heads);
  if (s.n_heads % s.n_kv_heads != 0)
    Fail("gen-model: heads {} is not a multiple of kv-heads {}", s.n_heads, s.n_kv_heads);
  if ((s.n_embd / s.n_heads) % 2 != 0)
    Fail("gen-model: head dimension {} (dim / heads) must be even for RoPE", s.n_embd / s.n_heads);
  if (!(std::isfinite(s.rope_freq_base) && s.rope_freq_base > 0.0f))
    Fail("gen-model: rope freq base must be > 0, got {}", s.rope_freq_base);
  if (!(std::isfinite(s.rms_eps) && s.rms_eps > 0.0f)) Fail("gen-model: rms eps must be > 0, got {}", s.rms_eps);
  if (!CanQuantizeTo(options.type))
    Fail("gen-model: type {} cannot be written; use F32, F16, BF16, Q8_0 or Q4_0", GgmlTypeName(options.type));
  const int64_t block = TraitsOf(options.type).block_elems;
  if (s.n_embd % block != 0)
    Fail("gen-model: dim {} is not a multiple of the {} block size {}", s.n_embd, GgmlTypeName(options.type), block);
  if (s.n_ff % block != 0)
    Fail("gen-model: ffn {} is not a multiple of the {} block size {}", s.n_ff, GgmlTypeName(options.type), block);
}

GgufWriter BuildRandomLlamaGguf(const GgufFile& vocab, const RandomModelOptions& options, ThreadPool* pool) {
  const int64_t n_vocab = VocabSize(vocab);
  ValidateRandomModel(options, n_vocab);
  const RandomLlamaShape& s = options.shape;

  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetString("general.name", options.name);
  w.SetU32("general.file_type", LlamaFileType(options.type));
  if (TraitsOf(options.type).block_elems > 1) w.SetU32("general.quantization_version", kGgmlQuantizationVersion);
  w.SetU32("llama.vocab_size", static_cast<uint32_t>(n_vocab));
  w.SetU32("llama.context_length", static_cast<uint32_t>(s.n_ctx));
  w.SetU32("llama.embedding_length", static_cast<uint32_t>(s.n_embd));
  w.SetU32("llama.block_count", static_cast<uint32_t>(s.n_layers));
  w.SetU32("llama.feed_forward_length", static_cast<uint32_t>(s.n_ff));
  w.SetU32("llama.rope.dimension_count", static_cast<uint32_t>(s.n_embd / s.n_heads));
  w.SetU32("llama.attention.head_count", static_cast<uint32_t>(s.n_heads));
  w.SetU32("llama.attention.head_count_kv", static_cast<uint32_t>(s.n_kv_heads));
  w.SetF32("llama.attention.layer_norm_rms_epsilon", s.rms_eps);
  w.SetF32("llama.rope.freq_base", s.rope_freq_base);
  for (const auto& [key, value] : vocab.metadata())
    if (key.rfind("tokenizer.", 0) == 0) w.Set(key, value);

  for (const TensorSpec& t : LlamaTensors(s, n_vocab)) {
    if (t.is_norm) {
      std::vector<uint8_t> ones(static_cast<size_t>(t.dims[0]) * sizeof(float));
      const float one = 1.0f;
      for (size_t i = 0; i < ones.size(); i += sizeof(float)) std::memcpy(&ones[i], &one, sizeof(float));
      w.AddTensorBytes(t.name, GgmlType::kF32, t.dims, std::move(ones));
      continue;
    }
    const int64_t n_in = t.dims[0];   // [n_rows, n_in]
    const int64_t n_rows = t.dims[1];
    const GgmlType type = options.type;
    const uint64_t seed = options.seed;
    const std::string name = t.name;
    w.AddTensor(t.name, type, t.dims, [=](uint8_t* out, int64_t n_bytes) {
      const int64_t row_bytes = RowBytes(type, n_in);
      RIDGE_CHECK(n_bytes == row_bytes * n_rows);
      std::vector<std::vector<float>> scratch(static_cast<size_t>(RowChunkThreads(pool)));
      ForEachRowChunk(pool, n_rows, n_in, [&](int64_t begin, int64_t end, int thread) {
        std::vector<float>& row = scratch[static_cast<size_t>(thread)];
        row.resize(static_cast<size_t>(n_in));
        for (int64_t r = begin; r < end; ++r) {
          RandomWeightRow(seed, name, r, row.data(), n_in);
          QuantizeRow(type, row.data(), out + r * row_bytes, n_in);  // F32: a plain copy
        }
      });
    });
  }
  return w;
}

}  // namespace ridge
