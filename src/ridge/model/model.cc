#include "ridge/model/llama_model.h"

#include <cmath>
#include <set>

#include "ridge/base/error.h"
#include "ridge/gguf/dequantize.h"

namespace ridge {

int64_t Batch::n_logits() const {
  int64_t n = 0;
  for (bool w : want_logits) n += w ? 1 : 0;
  return n;
}

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

int64_t MatrixBytes(const kernels::WeightMatrix& m) { return m.n_rows * m.row_bytes; }

}  // namespace

struct LlamaModel::Scratch {
  std::vector<float> x, xn, q, k, v, attn, proj, gate, up, selected;
  std::vector<std::vector<float>> scores;  // per thread: [positions]
  void Resize(const LlamaConfig& c, int64_t n_tokens, int64_t n_logits, int n_threads, int64_t max_positions) {
    auto fit = [](std::vector<float>& buf, int64_t n) {
      if (static_cast<int64_t>(buf.size()) < n) buf.resize(static_cast<size_t>(n));
    };
    fit(x, n_tokens * c.n_embd);
    fit(xn, n_tokens * c.n_embd);
    fit(q, n_tokens * c.n_heads * c.head_dim);
    fit(k, n_tokens * c.n_kv_heads * c.head_dim);
    fit(v, n_tokens * c.n_kv_heads * c.head_dim);
    fit(attn, n_tokens * c.n_heads * c.head_dim);
    fit(proj, n_tokens * c.n_embd);
    fit(gate, n_tokens * c.n_ff);
    fit(up, n_tokens * c.n_ff);
    fit(selected, n_logits * c.n_embd);
    if (static_cast<int>(scores.size()) < n_threads) scores.resize(static_cast<size_t>(n_threads));
    for (auto& s : scores) fit(s, max_positions);
  }
};

LlamaModel::LlamaModel(GgufFile file, LlamaConfig config, ModelWeights weights)
    : file_(std::move(file)), config_(config), weights_(std::move(weights)), scratch_(std::make_unique<Scratch>()) {}

LlamaModel::~LlamaModel() = default;

std::unique_ptr<LlamaModel> LlamaModel::Load(const std::string& path, FileBacking backing) {
  GgufFile file = GgufFile::Open(path, backing);
  // Other graphs (Qwen's biases, Gemma's norms, ...) would run here as if
  // they were Llama's and give wrong logits without a word: refuse them.
  if (const std::string arch = file.RequireString("general.architecture"); arch != "llama")
    Fail("{}: general.architecture is '{}'; ridge runs the 'llama' graph only (other architectures are not "
         "supported yet)", file.path(), arch);
  LlamaConfig c = LlamaConfig::FromGguf(file);
  ModelWeights w;
  std::set<std::string> used;  // every tensor the graph reads
  auto use = [&used](std::string name) -> const std::string& { return *used.insert(std::move(name)).first; };
  int64_t q_dim = c.n_heads * c.head_dim, kv_dim = c.n_kv_heads * c.head_dim;
  w.token_embd = Matrix(file, use("token_embd.weight"), c.n_vocab, c.n_embd);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    std::string p = fmt::format("blk.{}.", l);
    LayerWeights lw;
    lw.attn_norm = Vector(file, use(p + "attn_norm.weight"), c.n_embd);
    lw.wq = Matrix(file, use(p + "attn_q.weight"), q_dim, c.n_embd);
    lw.wk = Matrix(file, use(p + "attn_k.weight"), kv_dim, c.n_embd);
    lw.wv = Matrix(file, use(p + "attn_v.weight"), kv_dim, c.n_embd);
    lw.wo = Matrix(file, use(p + "attn_output.weight"), c.n_embd, q_dim);
    lw.ffn_norm = Vector(file, use(p + "ffn_norm.weight"), c.n_embd);
    lw.w_gate = Matrix(file, use(p + "ffn_gate.weight"), c.n_ff, c.n_embd);
    lw.w_up = Matrix(file, use(p + "ffn_up.weight"), c.n_ff, c.n_embd);
    lw.w_down = Matrix(file, use(p + "ffn_down.weight"), c.n_embd, c.n_ff);
    for (auto* m : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down}) w.weight_bytes += MatrixBytes(*m);
    w.layers.push_back(std::move(lw));
  }
  w.output_norm = Vector(file, use("output_norm.weight"), c.n_embd);
  w.tied_output = file.FindTensor("output.weight") == nullptr;
  w.output = w.tied_output ? w.token_embd : Matrix(file, use("output.weight"), c.n_vocab, c.n_embd);
  // A tensor the graph does not read (a bias, rope_freqs' scaling factors,
  // ...) changes what the model computes: refuse rather than ignore it.
  for (const GgufTensorInfo& t : file.tensors())
    if (!used.contains(t.name))
      Fail("{}: tensor '{}' is not part of the llama graph ridge runs; refusing the file rather than ignoring it",
           file.path(), t.name);
  w.weight_bytes += MatrixBytes(w.token_embd) + (w.tied_output ? 0 : MatrixBytes(w.output));
  return std::unique_ptr<LlamaModel>(new LlamaModel(std::move(file), c, std::move(w)));
}

KvCacheShape LlamaModel::KvShape(GgmlType type, int64_t block_tokens) const {
  return {config_.n_layers, config_.n_kv_heads, config_.head_dim, type, block_tokens};
}

double LlamaModel::ForwardFlops(int64_t n_tokens, int64_t attended_positions) const {
  const LlamaConfig& c = config_;
  double q_dim = static_cast<double>(c.n_heads * c.head_dim), kv_dim = static_cast<double>(c.n_kv_heads * c.head_dim);
  double e = static_cast<double>(c.n_embd), ff = static_cast<double>(c.n_ff);
  double per_layer = e * q_dim + 2 * e * kv_dim + q_dim * e + 3 * e * ff;  // multiply-adds per token
  double matmul = static_cast<double>(c.n_layers) * per_layer + e * static_cast<double>(c.n_vocab);
  double attention = static_cast<double>(c.n_layers) * 2.0 * q_dim * static_cast<double>(attended_positions);
  return 2.0 * (matmul * static_cast<double>(n_tokens) + attention);
}

void LlamaModel::EmbedTokens(const Batch& batch, float* x) {
  const kernels::WeightMatrix& e = weights_.token_embd;
  for (int64_t t = 0; t < batch.size(); ++t) {
    TokenId id = batch.tokens[static_cast<size_t>(t)];
    if (id < 0 || id >= config_.n_vocab) Fail("token id {} is outside the vocabulary [0, {})", id, config_.n_vocab);
    DequantizeRow(e.type, e.data + id * e.row_bytes, x + t * config_.n_embd, config_.n_embd);
  }
}

void LlamaModel::AttentionBlock(const LayerWeights& w, int64_t layer, const Batch& batch, PagedKvCache& cache,
                                float* x, ThreadPool& pool) {
  const LlamaConfig& c = config_;
  Scratch& s = *scratch_;
  const int64_t n = batch.size(), hd = c.head_dim;
  const int64_t q_dim = c.n_heads * hd, kv_dim = c.n_kv_heads * hd;
  for (int64_t t = 0; t < n; ++t) kernels::RmsNorm(x + t * c.n_embd, w.attn_norm.data(), c.n_embd, c.rms_eps, s.xn.data() + t * c.n_embd);
  kernels::MatMul(w.wq, s.xn.data(), n, s.q.data(), pool);  // [n, q_dim]
  kernels::MatMul(w.wk, s.xn.data(), n, s.k.data(), pool);  // [n, kv_dim]
  kernels::MatMul(w.wv, s.xn.data(), n, s.v.data(), pool);  // [n, kv_dim]
  const int64_t head_bytes = kernels::KvHeadBytes(cache.shape().type, hd);
  for (int64_t t = 0; t < n; ++t) {
    int64_t pos = batch.positions[static_cast<size_t>(t)];
    SeqId seq = batch.seq_ids[static_cast<size_t>(t)];
    kernels::Rope(s.q.data() + t * q_dim, c.n_heads, hd, c.rope_dim, pos, c.rope_freq_base);
    kernels::Rope(s.k.data() + t * kv_dim, c.n_kv_heads, hd, c.rope_dim, pos, c.rope_freq_base);
    uint8_t* k_slot = cache.KSlot(seq, layer, pos);  // [n_kv_heads, head_dim]
    uint8_t* v_slot = cache.VSlot(seq, layer, pos);
    for (int64_t h = 0; h < c.n_kv_heads; ++h) {
      kernels::StoreKv(s.k.data() + t * kv_dim + h * hd, hd, cache.shape().type, k_slot + h * head_bytes);
      kernels::StoreKv(s.v.data() + t * kv_dim + h * hd, hd, cache.shape().type, v_slot + h * head_bytes);
    }
  }
  const int64_t group = c.n_heads / c.n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
  pool.ParallelFor(n * c.n_heads, [&](int64_t task, int thread) {
    int64_t t = task / c.n_heads, h = task % c.n_heads;
    thread_local std::vector<const uint8_t*> k_blocks, v_blocks;
    kernels::KvHeadView kv_k, kv_v;
    cache.HeadViews(batch.seq_ids[static_cast<size_t>(t)], layer, h / group, k_blocks, v_blocks, kv_k, kv_v);
    int64_t n_positions = batch.positions[static_cast<size_t>(t)] + 1;  // causal: up to and including itself
    kernels::AttendHead(s.q.data() + t * q_dim + h * hd, hd, kv_k, kv_v, n_positions, scale,
                        s.scores[static_cast<size_t>(thread)].data(), s.attn.data() + t * q_dim + h * hd);
  });
  kernels::MatMul(w.wo, s.attn.data(), n, s.proj.data(), pool);  // [n, n_embd]
  for (int64_t i = 0; i < n * c.n_embd; ++i) x[i] += s.proj[static_cast<size_t>(i)];
}

void LlamaModel::FeedForwardBlock(const LayerWeights& w, int64_t n, float* x, ThreadPool& pool) {
  const LlamaConfig& c = config_;
  Scratch& s = *scratch_;
  for (int64_t t = 0; t < n; ++t) kernels::RmsNorm(x + t * c.n_embd, w.ffn_norm.data(), c.n_embd, c.rms_eps, s.xn.data() + t * c.n_embd);
  kernels::MatMul(w.w_gate, s.xn.data(), n, s.gate.data(), pool);  // [n, n_ff]
  kernels::MatMul(w.w_up, s.xn.data(), n, s.up.data(), pool);      // [n, n_ff]
  kernels::SwiGlu(s.gate.data(), s.up.data(), n * c.n_ff, s.gate.data());
  kernels::MatMul(w.w_down, s.gate.data(), n, s.proj.data(), pool);  // [n, n_embd]
  for (int64_t i = 0; i < n * c.n_embd; ++i) x[i] += s.proj[static_cast<size_t>(i)];
}

void LlamaModel::Forward(const Batch& batch, PagedKvCache& cache, float* logits, ThreadPool& pool) {
  const LlamaConfig& c = config_;
  const int64_t n = batch.size();
  if (n == 0) return;
  int64_t max_positions = 0;
  for (int64_t t = 0; t < n; ++t) {
    int64_t pos = batch.positions[static_cast<size_t>(t)];
    if (pos < 0 || pos >= c.n_ctx_train)
      Fail("position {} is outside the model's context of {} tokens", pos, c.n_ctx_train);
    max_positions = std::max(max_positions, pos + 1);
  }
  Scratch& s = *scratch_;
  s.Resize(c, n, batch.n_logits(), pool.n_threads(), max_positions);
  float* x = s.x.data();  // [n, n_embd], the residual stream
  EmbedTokens(batch, x);
  for (int64_t l = 0; l < c.n_layers; ++l) {
    const LayerWeights& w = weights_.layers[static_cast<size_t>(l)];
    AttentionBlock(w, l, batch, cache, x, pool);
    FeedForwardBlock(w, n, x, pool);
  }
  int64_t row = 0;
  for (int64_t t = 0; t < n; ++t) {
    if (!batch.want_logits[static_cast<size_t>(t)]) continue;
    kernels::RmsNorm(x + t * c.n_embd, weights_.output_norm.data(), c.n_embd, c.rms_eps, s.selected.data() + row * c.n_embd);
    ++row;
  }
  kernels::MatMul(weights_.output, s.selected.data(), row, logits, pool);  // [n_logits, n_vocab]
}

}  // namespace ridge
