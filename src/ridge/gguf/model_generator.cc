#include "ridge/gguf/model_generator.h"

#include <cmath>
#include <cstring>
#include <memory>

#include "ridge/base/error.h"
#include "ridge/base/thread_pool.h"
#include "ridge/gguf/architecture.h"
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

// How the values of a generated tensor are drawn.
enum class Fill { kWeight, kNorm, kBias, kRopeDivisors, kGateVector };

struct TensorSpec {
  std::string name;
  std::vector<int64_t> dims;  // dims[0] = row length
  Fill fill;
  bool keep_f32 = false;      // a 2-D weight llama.cpp never quantizes (experts' routers)
  bool expert = false;        // a stack of experts' matrices (ffn_*_exps.weight)
};

int64_t HeadDim(const RandomModelShape& s) { return s.head_dim ? s.head_dim : s.n_embd / s.n_heads; }
int64_t ExpertFf(const RandomModelShape& s) { return s.n_ff_exp ? s.n_ff_exp : s.n_ff; }
int64_t SharedFf(const RandomModelShape& s) { return s.n_ff_shexp ? s.n_ff_shexp : ExpertFf(s); }

// The shape of a role's tensor, GGUF dims (fastest first).
std::vector<int64_t> RoleDims(TensorRole role, const RandomModelShape& s, int64_t n_vocab) {
  const int64_t hd = HeadDim(s), q = s.n_heads * hd, kv = s.n_kv_heads * hd;
  using enum TensorRole;
  switch (role) {
    case kTokenEmbd:
    case kOutput: return {s.n_embd, n_vocab};
    case kRopeFreqs:
    case kRopeFactorsLong:
    case kRopeFactorsShort: return {hd / 2};
    case kAttnNorm:
    case kOutputNorm:
    case kPostAttnNorm:
    case kFfnNorm:
    case kPostFfwNorm: return {s.n_embd};
    case kAttnQ: return {s.n_embd, q};
    case kAttnK:
    case kAttnV: return {s.n_embd, kv};
    case kAttnQkv: return {s.n_embd, q + 2 * kv};
    case kAttnQBias: return {q};
    case kAttnKBias:
    case kAttnVBias: return {kv};
    case kAttnQNorm:
    case kAttnKNorm: return {hd};
    case kAttnOutput: return {q, s.n_embd};
    case kFfnGate: return {s.n_embd, s.n_ff};
    case kFfnUp: return {s.n_embd, s.n_ff};
    case kFfnDown: return {s.n_ff, s.n_embd};
    case kFfnGateInp: return {s.n_embd, s.n_expert};
    case kFfnGateExps:
    case kFfnUpExps: return {s.n_embd, ExpertFf(s), s.n_expert};
    case kFfnDownExps: return {ExpertFf(s), s.n_embd, s.n_expert};
    case kFfnGateInpShexp: return {s.n_embd};
    case kFfnGateShexp:
    case kFfnUpShexp: return {s.n_embd, SharedFf(s)};
    case kFfnDownShexp: return {SharedFf(s), s.n_embd};
    case kAttnOutputBias: return {s.n_embd};
    case kAttnSinks: return {s.n_heads};
    case kFfnGateInpBias: return {s.n_expert};
    case kFfnGateExpsBias:
    case kFfnUpExpsBias: return {ExpertFf(s), s.n_expert};
    case kFfnDownExpsBias: return {s.n_embd, s.n_expert};
  }
  CheckFailed("a tensor role", __FILE__, __LINE__);
}

Fill RoleFill(TensorRole role) {
  using enum TensorRole;
  switch (role) {
    case kAttnNorm:
    case kOutputNorm:
    case kPostAttnNorm:
    case kFfnNorm:
    case kPostFfwNorm:
    case kAttnQNorm:
    case kAttnKNorm: return Fill::kNorm;
    case kAttnQBias:
    case kAttnKBias:
    case kAttnVBias:
    case kAttnOutputBias:
    case kAttnSinks:  // a sink logit of the scores' size: attention keeps some weight, the sink takes some
    case kFfnGateInpBias:
    case kFfnGateExpsBias:
    case kFfnUpExpsBias:
    case kFfnDownExpsBias: return Fill::kBias;
    case kRopeFreqs:
    case kRopeFactorsLong:
    case kRopeFactorsShort: return Fill::kRopeDivisors;
    case kFfnGateInpShexp: return Fill::kGateVector;
    default: return Fill::kWeight;
  }
}

// Whether the file holds an optional tensor of the architecture.
bool Wanted(TensorRole role, const RandomModelShape& s) {
  using enum TensorRole;
  switch (role) {
    case kOutput: return !s.tied_embeddings;
    case kRopeFreqs: return s.rope_scaling == RandomRopeScaling::kLlama3;
    case kRopeFactorsLong:
    case kRopeFactorsShort: return s.rope_scaling == RandomRopeScaling::kLongRope;
    default: return false;  // optional biases of llama files
  }
}

std::vector<TensorSpec> ModelTensorSpecs(const RandomModelShape& s, int64_t n_vocab) {
  const ArchitectureSpec& arch = RequireArchitecture(s.architecture, "gen-model");
  std::vector<TensorSpec> t;
  auto add = [&](TensorPresence p, int64_t layer) {
    if (!p.required && !Wanted(p.role, s)) return;
    std::vector<int64_t> dims = RoleDims(p.role, s, n_vocab);
    if (p.role == TensorRole::kFfnUp && arch.fused_gate_up) dims[1] *= 2;  // gate rows, then up rows
    const bool expert = p.role == TensorRole::kFfnGateExps || p.role == TensorRole::kFfnUpExps ||
                        p.role == TensorRole::kFfnDownExps;
    t.push_back({TensorName(p.role, layer), std::move(dims), RoleFill(p.role), p.role == TensorRole::kFfnGateInp,
                 expert});
  };
  const std::vector<TensorPresence> model = ModelTensors(arch);
  add(model[0], -1);  // token_embd first, as llama.cpp orders them
  for (const TensorPresence& p : model)
    if (p.role != TensorRole::kTokenEmbd && p.role != TensorRole::kOutputNorm && p.role != TensorRole::kOutput)
      add(p, -1);
  for (int64_t l = 0; l < s.n_layers; ++l)
    for (const TensorPresence& p : LayerTensors(arch, s.n_expert > 0)) add(p, l);
  add({TensorRole::kOutputNorm, true}, -1);
  add({TensorRole::kOutput, false}, -1);
  return t;
}

// Llama 3.1's frequency divisors (what llama.cpp's converter writes as
// rope_freqs.weight): 1 for wavelengths under original_context / 4, `factor`
// over original_context / 1, smoothly between.
std::vector<float> Llama3Divisors(const RandomModelShape& s) {
  const int64_t rope_dim = HeadDim(s);
  const double low_freq_factor = 1.0, high_freq_factor = 4.0, orig = static_cast<double>(s.rope_original_context);
  std::vector<float> d(static_cast<size_t>(rope_dim / 2));
  for (int64_t i = 0; i < rope_dim / 2; ++i) {
    const double freq = std::pow(static_cast<double>(s.rope_freq_base), -2.0 * static_cast<double>(i) / rope_dim);
    const double wavelen = 2.0 * 3.14159265358979323846 / freq;
    double divisor;
    if (wavelen < orig / high_freq_factor) {
      divisor = 1.0;
    } else if (wavelen > orig / low_freq_factor) {
      divisor = s.rope_factor;
    } else {
      const double smooth = (orig / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      divisor = 1.0 / ((1.0 - smooth) / s.rope_factor + smooth);
    }
    d[static_cast<size_t>(i)] = static_cast<float>(divisor);
  }
  return d;
}

// Uniform values in [lo, hi) for a 1-D tensor, seeded by its name.
std::vector<float> UniformVector(uint64_t seed, const std::string& name, int64_t n, float lo, float hi) {
  std::vector<float> v(static_cast<size_t>(n));
  RandomWeightRow(seed, name, 0, v.data(), n);  // uniform in [-a, a), a = sqrt(3 / n)
  const float a = static_cast<float>(std::sqrt(3.0 / static_cast<double>(n)));
  for (float& x : v) x = lo + (hi - lo) * (x / (2.0f * a) + 0.5f);
  return v;
}

std::vector<float> VectorValues(const TensorSpec& t, const RandomModelShape& s, uint64_t seed) {
  int64_t n = 1;  // 1-D, or a stack of per-expert biases
  for (int64_t d : t.dims) n *= d;
  switch (t.fill) {
    case Fill::kNorm:
      return s.architecture == "llama" ? std::vector<float>(static_cast<size_t>(n), 1.0f)
                                       : UniformVector(seed, t.name, n, 0.75f, 1.25f);
    case Fill::kBias: return UniformVector(seed, t.name, n, -0.5f, 0.5f);
    case Fill::kGateVector: {  // as a weight row: a dot product with x keeps x's scale
      const float a = static_cast<float>(std::sqrt(3.0 / static_cast<double>(n)));
      return UniformVector(seed, t.name, n, -a, a);
    }
    case Fill::kRopeDivisors:
      if (t.name == TensorName(TensorRole::kRopeFreqs)) return Llama3Divisors(s);
      return t.name == TensorName(TensorRole::kRopeFactorsLong) ? UniformVector(seed, t.name, n, 1.0f, 4.0f)
                                                                : UniformVector(seed, t.name, n, 1.0f, 1.2f);
    case Fill::kWeight: break;
  }
  CheckFailed("a 1-D fill", __FILE__, __LINE__);
}

std::vector<uint8_t> VectorBytes(const std::vector<float>& v) {
  std::vector<uint8_t> bytes(v.size() * sizeof(float));
  std::memcpy(bytes.data(), v.data(), bytes.size());
  return bytes;
}

// The type of the experts' stacked matrices: as asked, else MXFP4 in gpt-oss
// files (as its real ones are), else the file's type.
GgmlType ExpertType(const RandomModelOptions& o) {
  if (o.expert_type) return *o.expert_type;
  return o.shape.architecture == "gpt-oss" ? GgmlType::kMXFP4 : o.type;
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
  const RandomModelShape& s = options.shape;
  const ArchitectureSpec* arch = FindArchitecture(s.architecture);
  if (!arch)
    Fail("gen-model: architecture '{}' is not one ridge runs; supported: {}", s.architecture,
         SupportedArchitectureNames());
  CheckPositive("dim (embedding length)", s.n_embd);
  CheckPositive("ffn (feed-forward length)", s.n_ff);
  CheckPositive("layers", s.n_layers);
  CheckPositive("heads", s.n_heads);
  CheckPositive("kv-heads", s.n_kv_heads);
  CheckPositive("ctx", s.n_ctx);
  CheckPositive("vocabulary size", n_vocab);
  constexpr int64_t kMaxDim = int64_t{1} << 20;  // keeps every product far from overflow
  if (s.n_embd > kMaxDim || s.n_ff > kMaxDim || n_vocab > kMaxDim || s.n_layers > 4096 || s.n_ctx > 0xffffffffll ||
      s.head_dim < 0 || s.head_dim > 4096)
    Fail("gen-model: shape too large (dim {}, ffn {}, vocab {}, layers {}, ctx {}, head dim {})", s.n_embd, s.n_ff,
         n_vocab, s.n_layers, s.n_ctx, s.head_dim);
  if (s.head_dim == 0 && s.n_embd % s.n_heads != 0)
    Fail("gen-model: dim {} is not a multiple of heads {} (give --head-dim)", s.n_embd, s.n_heads);
  if (s.n_heads % s.n_kv_heads != 0)
    Fail("gen-model: heads {} is not a multiple of kv-heads {}", s.n_heads, s.n_kv_heads);
  if (HeadDim(s) % 2 != 0) Fail("gen-model: head dimension {} must be even for RoPE", HeadDim(s));
  if (!(std::isfinite(s.rope_freq_base) && s.rope_freq_base > 0.0f))
    Fail("gen-model: rope freq base must be > 0, got {}", s.rope_freq_base);
  if (!(std::isfinite(s.rms_eps) && s.rms_eps > 0.0f)) Fail("gen-model: rms eps must be > 0, got {}", s.rms_eps);
  if (s.sliding_window < 0) Fail("gen-model: sliding window must be >= 0 tokens, got {}", s.sliding_window);
  if (s.attn_softcap < 0.0f || s.final_softcap < 0.0f || ((s.attn_softcap > 0 || s.final_softcap > 0) && !arch->soft_caps))
    Fail("gen-model: soft-caps must be >= 0 and exist in gemma2 only (architecture {})", s.architecture);
  if (s.rope_scaling == RandomRopeScaling::kLlama3 && !arch->rope_freqs)
    Fail("gen-model: llama3 RoPE divisors (rope_freqs.weight) exist in llama files only, not {}", s.architecture);
  if (s.rope_scaling == RandomRopeScaling::kLongRope && !arch->long_rope)
    Fail("gen-model: LongRoPE factors exist in phi3 files only, not {}", s.architecture);
  if (s.rope_scaling != RandomRopeScaling::kNone &&
      (!(s.rope_factor > 0.0f && std::isfinite(s.rope_factor)) || s.rope_original_context <= 0))
    Fail("gen-model: RoPE scaling needs a factor > 0 and an original context > 0 (got {} and {})", s.rope_factor,
         s.rope_original_context);
  const bool moe = s.n_expert > 0;
  if ((arch->experts == Experts::kNever && moe) || (arch->experts == Experts::kAlways && !moe))
    Fail("gen-model: {} {} experts (give --experts N --experts-used K{})", s.architecture,
         moe ? "has no" : "needs", moe ? " only for llama, qwen2moe, qwen3moe, gpt-oss" : "");
  if (moe && (s.n_expert_used < 1 || s.n_expert_used > s.n_expert || s.n_expert > 1024 || s.n_ff_exp < 0 ||
              s.n_ff_shexp < 0))
    Fail("gen-model: experts {} with {} used per token: need 1 <= used <= experts <= 1024", s.n_expert,
         s.n_expert_used);
  for (GgmlType type : {options.type, ExpertType(options)})
    if (!CanQuantizeTo(type)) Fail("gen-model: type {} cannot be written", GgmlTypeName(type));
  const int64_t block = TraitsOf(options.type).block_elems;
  for (auto [what, n] : {std::pair{"dim", s.n_embd}, {"ffn", s.n_ff}, {"heads × head dim", s.n_heads * HeadDim(s)},
                         {"shared expert ffn", moe ? SharedFf(s) : 0}})
    if (n % block != 0)
      Fail("gen-model: {} {} is not a multiple of the {} block size {}", what, n, GgmlTypeName(options.type), block);
  const int64_t expert_block = TraitsOf(ExpertType(options)).block_elems;
  for (auto [what, n] : {std::pair{"dim", moe ? s.n_embd : 0}, {"expert ffn", moe ? ExpertFf(s) : 0}})
    if (n % expert_block != 0)
      Fail("gen-model: {} {} is not a multiple of the experts' {} block size {}", what, n,
           GgmlTypeName(ExpertType(options)), expert_block);
}

GgufWriter BuildRandomModelGguf(const GgufFile& vocab, const RandomModelOptions& options, ThreadPool* pool) {
  const int64_t n_vocab = VocabSize(vocab);
  ValidateRandomModel(options, n_vocab);
  const RandomModelShape& s = options.shape;
  const std::string a = s.architecture;

  GgufWriter w;
  w.SetString("general.architecture", a);
  w.SetString("general.name", options.name);
  // MXFP4 experts beside other weights: llama.cpp's MOSTLY_MXFP4_MOE, as the real gpt-oss files say.
  const bool mxfp4_moe = s.n_expert > 0 && ExpertType(options) == GgmlType::kMXFP4;
  w.SetU32("general.file_type", mxfp4_moe        ? LlamaFileType(GgmlType::kMXFP4)
                                : options.recipe ? options.recipe->file_type
                                                 : LlamaFileType(options.type));
  if (TraitsOf(options.type).block_elems > 1 || mxfp4_moe)
    w.SetU32("general.quantization_version", kGgmlQuantizationVersion);
  w.SetU32(a + ".vocab_size", static_cast<uint32_t>(n_vocab));
  w.SetU32(a + ".context_length", static_cast<uint32_t>(s.n_ctx));
  w.SetU32(a + ".embedding_length", static_cast<uint32_t>(s.n_embd));
  w.SetU32(a + ".block_count", static_cast<uint32_t>(s.n_layers));
  w.SetU32(a + ".feed_forward_length", static_cast<uint32_t>(s.n_ff));
  w.SetU32(a + ".rope.dimension_count", static_cast<uint32_t>(HeadDim(s)));
  w.SetU32(a + ".attention.head_count", static_cast<uint32_t>(s.n_heads));
  w.SetU32(a + ".attention.head_count_kv", static_cast<uint32_t>(s.n_kv_heads));
  if (s.head_dim) {
    w.SetU32(a + ".attention.key_length", static_cast<uint32_t>(s.head_dim));
    w.SetU32(a + ".attention.value_length", static_cast<uint32_t>(s.head_dim));
  }
  w.SetF32(a + ".attention.layer_norm_rms_epsilon", s.rms_eps);
  w.SetF32(a + ".rope.freq_base", s.rope_freq_base);
  if (s.rope_freq_base_swa > 0) w.SetF32(a + ".rope.freq_base_swa", s.rope_freq_base_swa);
  if (s.sliding_window > 0) w.SetU32(a + ".attention.sliding_window", static_cast<uint32_t>(s.sliding_window));
  if (s.attn_softcap > 0) w.SetF32(a + ".attn_logit_softcapping", s.attn_softcap);
  if (s.final_softcap > 0) w.SetF32(a + ".final_logit_softcapping", s.final_softcap);
  switch (s.rope_scaling) {
    case RandomRopeScaling::kNone: break;
    case RandomRopeScaling::kLinear:
    case RandomRopeScaling::kYarn:
      w.SetString(a + ".rope.scaling.type", s.rope_scaling == RandomRopeScaling::kLinear ? "linear" : "yarn");
      w.SetF32(a + ".rope.scaling.factor", s.rope_factor);
      w.SetU32(a + ".rope.scaling.original_context_length", static_cast<uint32_t>(s.rope_original_context));
      break;
    case RandomRopeScaling::kLlama3: break;  // the divisors are a tensor
    case RandomRopeScaling::kLongRope:
      // As phi-3.5's converter writes it: attention factor sqrt(1 + ln(ctx / original) / ln(original)).
      w.SetU32(a + ".rope.scaling.original_context_length", static_cast<uint32_t>(s.rope_original_context));
      w.SetF32(a + ".rope.scaling.attn_factor",
               static_cast<float>(std::sqrt(1.0 + std::log(static_cast<double>(s.n_ctx) / s.rope_original_context) /
                                                      std::log(static_cast<double>(s.rope_original_context)))));
      break;
  }
  if (s.n_expert > 0) {
    w.SetU32(a + ".expert_count", static_cast<uint32_t>(s.n_expert));
    w.SetU32(a + ".expert_used_count", static_cast<uint32_t>(s.n_expert_used));
    w.SetU32(a + ".expert_feed_forward_length", static_cast<uint32_t>(ExpertFf(s)));
    if (RequireArchitecture(a, "gen-model").shared_expert)
      w.SetU32(a + ".expert_shared_feed_forward_length", static_cast<uint32_t>(SharedFf(s)));
  }
  for (const auto& [key, value] : vocab.metadata())
    if (key.rfind("tokenizer.", 0) == 0) w.Set(key, value);

  for (const TensorSpec& t : ModelTensorSpecs(s, n_vocab)) {
    if (t.fill != Fill::kWeight) {
      w.AddTensorBytes(t.name, GgmlType::kF32, t.dims, VectorBytes(VectorValues(t, s, options.seed)));
      continue;
    }
    const int64_t n_in = t.dims[0];  // [n_rows, n_in], experts stacked: [n_expert · n_out, n_in]
    const int64_t n_rows = t.dims.size() == 3 ? t.dims[1] * t.dims[2] : t.dims[1];
    GgmlType type = t.keep_f32 ? GgmlType::kF32 : t.expert ? ExpertType(options) : options.type;
    const bool fixed_expert_type = t.expert && (options.expert_type || s.architecture == "gpt-oss");
    if (options.recipe && !t.keep_f32 && !fixed_expert_type) {
      const RecipeModel model{s.n_layers, s.n_heads / s.n_kv_heads, !s.tied_embeddings};
      type = TypeFor(*options.recipe, t.name, t.dims, model).value_or(GgmlType::kF32);
      if (!RowsFit(type, n_in))
        Fail("gen-model: {} gives {} type {}, whose blocks do not fit its rows of {}", options.recipe->name, t.name,
             GgmlTypeName(type), n_in);
    }
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
