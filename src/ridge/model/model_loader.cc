// Model::Load: the tensors of the file's architecture (gguf/architecture.h),
// checked for shape and type, and every tensor of the file accounted for.
#include <cmath>
#include <set>

#include "ridge/base/error.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/model/model.h"
#include "ridge/model/model_partition.h"

namespace ridge {
namespace {

const GgufTensorInfo& RequireTensor(const GgufFile& file, const std::string& name) {
  const GgufTensorInfo* t = file.FindTensor(name);
  if (!t) Fail("{}: tensor '{}' is missing", file.path(), name);
  return *t;
}

kernels::WeightMatrix Matrix(const GgufFile& file, const std::string& name, int64_t n_rows, int64_t n_cols) {
  const GgufTensorInfo& t = RequireTensor(file, name);
  if (t.dims.size() != 2 || t.dims[0] != n_cols || t.dims[1] != n_rows)
    Fail("{}: tensor '{}' has shape [{}], expected [{}, {}] (dims fastest first)", file.path(), name,
         fmt::join(t.dims, ", "), n_cols, n_rows);
  if (!TraitsOf(t.type).can_dequantize)
    Fail("{}: tensor '{}' has type {}, which ridge cannot compute with yet", file.path(), name, GgmlTypeName(t.type));
  return {t.type, t.data, n_rows, n_cols, RowBytes(t.type, n_cols)};
}

// A stack of n_mats matrices [n_rows, n_cols] (GGUF dims [n_cols, n_rows, n_mats]): one view per matrix.
std::vector<kernels::WeightMatrix> MatrixStack(const GgufFile& file, const std::string& name, int64_t n_mats,
                                               int64_t n_rows, int64_t n_cols) {
  const GgufTensorInfo& t = RequireTensor(file, name);
  if (t.dims.size() != 3 || t.dims[0] != n_cols || t.dims[1] != n_rows || t.dims[2] != n_mats)
    Fail("{}: tensor '{}' has shape [{}], expected [{}, {}, {}] (dims fastest first)", file.path(), name,
         fmt::join(t.dims, ", "), n_cols, n_rows, n_mats);
  if (!TraitsOf(t.type).can_dequantize)
    Fail("{}: tensor '{}' has type {}, which ridge cannot compute with yet", file.path(), name, GgmlTypeName(t.type));
  const int64_t row_bytes = RowBytes(t.type, n_cols);
  std::vector<kernels::WeightMatrix> views;
  for (int64_t e = 0; e < n_mats; ++e) views.push_back({t.type, t.data + e * n_rows * row_bytes, n_rows, n_cols, row_bytes});
  return views;
}

// Rows [first, first + n_rows) of a matrix: a view of the same bytes.
kernels::WeightMatrix RowSlice(const kernels::WeightMatrix& m, int64_t first, int64_t n_rows) {
  return {m.type, m.data + first * m.row_bytes, n_rows, m.n_cols, m.row_bytes};
}

std::vector<float> Vector(const GgufFile& file, const std::string& name, int64_t n) {
  const GgufTensorInfo& t = RequireTensor(file, name);
  if (t.dims.size() != 1 || t.dims[0] != n)
    Fail("{}: tensor '{}' has shape [{}], expected [{}]", file.path(), name, fmt::join(t.dims, ", "), n);
  if (!TraitsOf(t.type).can_dequantize || n % TraitsOf(t.type).block_elems != 0)
    Fail("{}: tensor '{}' has unsupported type {}", file.path(), name, GgmlTypeName(t.type));
  std::vector<float> v(static_cast<size_t>(n));
  DequantizeRow(t.type, t.data, v.data(), n);
  return v;
}

// A stack of n_stack vectors [n] (GGUF dims [n, n_stack]): per-expert biases, [n_stack · n] floats.
std::vector<float> VectorStack(const GgufFile& file, const std::string& name, int64_t n_stack, int64_t n) {
  const GgufTensorInfo& t = RequireTensor(file, name);
  if (t.dims.size() != 2 || t.dims[0] != n || t.dims[1] != n_stack)
    Fail("{}: tensor '{}' has shape [{}], expected [{}, {}] (dims fastest first)", file.path(), name,
         fmt::join(t.dims, ", "), n, n_stack);
  if (!TraitsOf(t.type).can_dequantize || n % TraitsOf(t.type).block_elems != 0)
    Fail("{}: tensor '{}' has unsupported type {}", file.path(), name, GgmlTypeName(t.type));
  std::vector<float> v(static_cast<size_t>(n_stack * n));
  for (int64_t i = 0; i < n_stack; ++i) DequantizeRow(t.type, t.data + i * RowBytes(t.type, n), v.data() + i * n, n);
  return v;
}

// Attention sinks are logits: a NaN or infinite one would poison every output of its head.
std::vector<float> FiniteVector(const GgufFile& file, const std::string& name, int64_t n) {
  std::vector<float> v = Vector(file, name, n);
  for (size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i])) Fail("{}: tensor '{}'[{}] = {} is not a finite number", file.path(), name, i, v[i]);
  return v;
}

// RoPE frequency divisors must be finite and positive: a zero would make an infinite angle.
std::vector<float> FreqDivisors(const GgufFile& file, const std::string& name, int64_t n_pairs) {
  std::vector<float> v = Vector(file, name, n_pairs);
  for (size_t i = 0; i < v.size(); ++i)
    if (!(v[i] > 0.0f && std::isfinite(v[i])))
      Fail("{}: tensor '{}'[{}] = {} is not a positive frequency factor", file.path(), name, i, v[i]);
  return v;
}

int64_t MatrixBytes(const kernels::WeightMatrix& m) { return m.n_rows * m.row_bytes; }

// The tensors of one block; `has` says whether an optional one is in the file.
LayerWeights LoadLayer(const GgufFile& file, const ModelConfig& c, int64_t l, const std::set<TensorRole>& present,
                       std::set<std::string>& used) {
  auto name = [&](TensorRole role) { return *used.insert(TensorName(role, l)).first; };
  auto vector_if = [&](TensorRole role, int64_t n) {
    return present.contains(role) ? Vector(file, name(role), n) : std::vector<float>{};
  };
  using enum TensorRole;
  const int64_t q_dim = c.q_dim(), kv_dim = c.kv_dim();
  LayerWeights w;
  w.attn_norm = Vector(file, name(kAttnNorm), c.n_embd);
  if (present.contains(kAttnQkv)) {
    const kernels::WeightMatrix qkv = Matrix(file, name(kAttnQkv), q_dim + 2 * kv_dim, c.n_embd);
    w.wq = RowSlice(qkv, 0, q_dim);
    w.wk = RowSlice(qkv, q_dim, kv_dim);
    w.wv = RowSlice(qkv, q_dim + kv_dim, kv_dim);
  } else {
    w.wq = Matrix(file, name(kAttnQ), q_dim, c.n_embd);
    w.wk = Matrix(file, name(kAttnK), kv_dim, c.n_embd);
    w.wv = Matrix(file, name(kAttnV), kv_dim, c.n_embd);
  }
  w.q_bias = vector_if(kAttnQBias, q_dim);
  w.k_bias = vector_if(kAttnKBias, kv_dim);
  w.v_bias = vector_if(kAttnVBias, kv_dim);
  w.q_norm = vector_if(kAttnQNorm, c.head_dim);
  w.k_norm = vector_if(kAttnKNorm, c.head_dim);
  if (present.contains(kAttnSinks)) w.attn_sinks = FiniteVector(file, name(kAttnSinks), c.n_heads);
  w.wo = Matrix(file, name(kAttnOutput), c.n_embd, q_dim);
  w.o_bias = vector_if(kAttnOutputBias, c.n_embd);
  // gpt-oss names its FFN's input norm post_attention_norm: no sandwich norm then.
  const bool ffn_norm_is_post_attn = c.arch().ffn_norm_is_post_attn_norm;
  if (!ffn_norm_is_post_attn) w.post_attn_norm = vector_if(kPostAttnNorm, c.n_embd);
  w.ffn_norm = Vector(file, name(ffn_norm_is_post_attn ? kPostAttnNorm : kFfnNorm), c.n_embd);
  if (c.is_moe()) {
    w.router = Matrix(file, name(kFfnGateInp), c.n_expert, c.n_embd);
    w.exp_gate = MatrixStack(file, name(kFfnGateExps), c.n_expert, c.n_ff_exp, c.n_embd);
    w.exp_up = MatrixStack(file, name(kFfnUpExps), c.n_expert, c.n_ff_exp, c.n_embd);
    w.exp_down = MatrixStack(file, name(kFfnDownExps), c.n_expert, c.n_embd, c.n_ff_exp);
    if (present.contains(kFfnGateInpBias)) {
      w.router_bias = Vector(file, name(kFfnGateInpBias), c.n_expert);
      w.exp_gate_bias = VectorStack(file, name(kFfnGateExpsBias), c.n_expert, c.n_ff_exp);
      w.exp_up_bias = VectorStack(file, name(kFfnUpExpsBias), c.n_expert, c.n_ff_exp);
      w.exp_down_bias = VectorStack(file, name(kFfnDownExpsBias), c.n_expert, c.n_embd);
    }
    if (present.contains(kFfnGateInpShexp)) {
      w.shared_gate_inp = Vector(file, name(kFfnGateInpShexp), c.n_embd);
      w.shared_gate = Matrix(file, name(kFfnGateShexp), c.n_ff_shexp, c.n_embd);
      w.shared_up = Matrix(file, name(kFfnUpShexp), c.n_ff_shexp, c.n_embd);
      w.shared_down = Matrix(file, name(kFfnDownShexp), c.n_embd, c.n_ff_shexp);
    }
  } else if (present.contains(kFfnGate)) {
    w.w_gate = Matrix(file, name(kFfnGate), c.n_ff, c.n_embd);
    w.w_up = Matrix(file, name(kFfnUp), c.n_ff, c.n_embd);
  } else {  // phi3: ffn_up holds gate then up
    const kernels::WeightMatrix gate_up = Matrix(file, name(kFfnUp), 2 * c.n_ff, c.n_embd);
    w.w_gate = RowSlice(gate_up, 0, c.n_ff);
    w.w_up = RowSlice(gate_up, c.n_ff, c.n_ff);
  }
  if (!c.is_moe()) w.w_down = Matrix(file, name(kFfnDown), c.n_embd, c.n_ff);
  w.post_ffw_norm = vector_if(kPostFfwNorm, c.n_embd);
  return w;
}

}  // namespace

std::unique_ptr<Model> Model::Load(const std::string& path, FileBacking backing, const ModelPartition& partition) {
  // Split: map the file, so that only the bytes this rank copies are read.
  GgufFile file = GgufFile::Open(path, partition.split() ? FileBacking::kMapped : backing);
  ModelConfig c = ModelConfig::FromGguf(file);
  const ArchitectureSpec& arch = c.arch();
  ModelWeights w;
  std::set<std::string> used;  // every tensor the graph reads
  auto use = [&used](std::string name) -> const std::string& { return *used.insert(std::move(name)).first; };
  auto has = [&file](TensorRole role, int64_t layer) { return file.FindTensor(TensorName(role, layer)) != nullptr; };

  w.token_embd = Matrix(file, use(TensorName(TensorRole::kTokenEmbd)), c.n_vocab, c.n_embd);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    std::set<TensorRole> present;
    for (const TensorPresence& t : LayerTensors(arch, c.is_moe())) {
      if (t.required && !has(t.role, l)) Fail("{}: tensor '{}' is missing", file.path(), TensorName(t.role, l));
      if (has(t.role, l)) present.insert(t.role);
    }
    LayerWeights lw = LoadLayer(file, c, l, present, used);
    for (auto* m : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down, &lw.router, &lw.shared_gate,
                    &lw.shared_up, &lw.shared_down})
      w.weight_bytes += MatrixBytes(*m);
    for (const auto* stack : {&lw.exp_gate, &lw.exp_up, &lw.exp_down})
      for (const kernels::WeightMatrix& m : *stack) w.weight_bytes += MatrixBytes(m);
    w.layers.push_back(std::move(lw));
  }
  w.output_norm = Vector(file, use(TensorName(TensorRole::kOutputNorm)), c.n_embd);
  w.tied_output = !has(TensorRole::kOutput, -1);
  w.output = w.tied_output ? w.token_embd : Matrix(file, use(TensorName(TensorRole::kOutput)), c.n_vocab, c.n_embd);

  // RoPE divisors: Llama 3.1's rope_freqs, or phi3's LongRoPE factors (long
  // when ridge's context, the trained one, exceeds the original context, as
  // llama.cpp decides at its default context size).
  std::vector<float> divisors;
  const int64_t n_pairs = c.rope_dim / 2;
  if (arch.rope_freqs && has(TensorRole::kRopeFreqs, -1))
    divisors = FreqDivisors(file, use(TensorName(TensorRole::kRopeFreqs)), n_pairs);
  if (arch.long_rope && (has(TensorRole::kRopeFactorsLong, -1) || has(TensorRole::kRopeFactorsShort, -1))) {
    const std::string long_name = use(TensorName(TensorRole::kRopeFactorsLong));
    const std::string short_name = use(TensorName(TensorRole::kRopeFactorsShort));
    const std::vector<float> long_factors = FreqDivisors(file, long_name, n_pairs);
    const std::vector<float> short_factors = FreqDivisors(file, short_name, n_pairs);
    divisors = c.n_ctx_train > c.rope_scaling.original_context ? long_factors : short_factors;
    c.rope_scaling.type = RopeScalingType::kLongRope;
  }
  w.rope_global = BuildRopeTable(c, false, divisors);
  w.rope_sliding = BuildRopeTable(c, true, divisors);

  // A tensor the graph does not read (an unknown bias, another architecture's
  // norm, ...) changes what the model computes: refuse rather than ignore it.
  for (const GgufTensorInfo& t : file.tensors())
    if (!used.contains(t.name))
      Fail("{}: tensor '{}' is not part of the {} graph ridge runs; refusing the file rather than ignoring it",
           file.path(), t.name, c.architecture);
  w.weight_bytes += MatrixBytes(w.token_embd) + (w.tied_output ? 0 : MatrixBytes(w.output));
  // Repacking rewrites the file's private copy in place; a split rank maps
  // the file (nothing to rewrite) and keeps its slices in the file's layout.
  w.layout = RepackWeights(file, w);
  PartitionWeights(w, c, partition);
  return std::unique_ptr<Model>(new Model(std::move(file), c, std::move(w), partition));
}

}  // namespace ridge
