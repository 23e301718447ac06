#include "ridge/model/model.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>

#include "ridge/base/clock.h"
#include "ridge/base/error.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/model/model_partition.h"

namespace ridge {

namespace {

// gpt-oss's clamped SwiGLU (llama.cpp's LLM_FFN_SWIGLU_OAI_MOE constants).
constexpr float kSwigluOaiAlpha = 1.702f, kSwigluOaiLimit = 7.0f;

// 2 per multiply-add of an n-token matmul, and the weight bytes it reads.
double MatMulFlops(const kernels::WeightMatrix& w, int64_t n_tokens) {
  return 2.0 * static_cast<double>(w.n_rows) * static_cast<double>(w.n_cols) * static_cast<double>(n_tokens);
}
double MatrixBytes(const kernels::WeightMatrix& w) { return static_cast<double>(w.n_rows * w.row_bytes); }

// Multiply-adds of one token's FFN: gate, up and down, or a mixture's router,
// the n_expert_used experts it is routed to and the shared expert.
double FfnMultiplyAddsPerToken(const ModelConfig& c) {
  const double e = static_cast<double>(c.n_embd);
  return c.is_moe() ? e * static_cast<double>(c.n_expert) +
                          3 * e * static_cast<double>(c.n_ff_exp * c.n_expert_used + c.n_ff_shexp)
                    : 3 * e * static_cast<double>(c.n_ff);
}

// Tokens in tiles of up to tile_max consecutive positions of one sequence,
// (first token, tokens), in batch order.
void TileTokens(const Batch& batch, int64_t tile_max, std::vector<std::pair<int64_t, int64_t>>& tiles) {
  tiles.clear();
  for (int64_t t = 0; t < batch.size(); ++t) {
    const auto i = static_cast<size_t>(t);
    const bool extends = !tiles.empty() && tiles.back().second < tile_max &&
                         batch.seq_ids[i] == batch.seq_ids[i - 1] && batch.positions[i] == batch.positions[i - 1] + 1;
    if (extends) {
      ++tiles.back().second;
    } else {
      tiles.emplace_back(t, 1);
    }
  }
}

// The first cache position token t attends: 0, or with a sliding window its last `window` positions' first.
int64_t WindowStart(const Batch& batch, int64_t t, int64_t window) {
  return window > 0 ? std::max<int64_t>(0, batch.positions[static_cast<size_t>(t)] - window + 1) : 0;
}

// y[t, i] += bias[i] for t < n; y: [n, dim].
void AddBias(const float* bias, int64_t dim, int64_t n, float* y) {
  for (int64_t t = 0; t < n; ++t)
    for (int64_t i = 0; i < dim; ++i) y[t * dim + i] += bias[i];
}

// Batches from this many tokens run their per-token steps (norms, RoPE and
// the KV store, the FFN's activation, residual adds) on the pool: a hand-off
// costs a few µs, a token's steps ~1-3 µs on the tinyllama shape, so a
// prompt's steps would otherwise keep every other thread waiting (~2 % of a
// 2-thread pp512, perf). Decode steps stay on the calling thread.
constexpr int64_t kParallelTokenStepsFrom = 16;

// fn(t0, t1) over ranges covering tokens [0, n) in order, on the pool's
// threads for a batch of kParallelTokenStepsFrom tokens or more. Each token's
// result is computed as it would be alone, so the bits do not depend on it.
void ForTokenRanges(int64_t n, ThreadPool& pool, const std::function<void(int64_t t0, int64_t t1)>& fn) {
  if (n < kParallelTokenStepsFrom || pool.n_threads() == 1) return fn(0, n);
  const int64_t per_task = std::max<int64_t>(4, (n + 4 * pool.n_threads() - 1) / (4 * pool.n_threads()));
  pool.ParallelFor((n + per_task - 1) / per_task,
                   [&](int64_t task, int) { fn(task * per_task, std::min(n, (task + 1) * per_task)); });
}

}  // namespace

int64_t Batch::n_logits() const {
  int64_t n = 0;
  for (bool w : want_logits) n += w ? 1 : 0;
  return n;
}

struct Model::Scratch {
  std::vector<float> x, xn, q, k, v, attn, proj, gate, up, selected;
  Batch micro;  // pipeline parallel: the micro-batch a stage runs (Model::ForwardPipeline)
  std::vector<float> local_logits;  // split: [n_logits, this rank's vocabulary rows] before the gather
  std::vector<float> router, expert_out;   // mixture of experts
  std::vector<std::vector<float>> scores;  // per thread: [kMaxAttentionRows, min(positions, split)]
  // The step's attention tiles, (first token, tokens): of layers that see the
  // whole context, and of sliding-window layers (single tokens); made once a step.
  std::vector<std::pair<int64_t, int64_t>> attention_tiles, window_tiles;
  // Split attention (Model::AttendSplit): every group's rows, block tables and partial states.
  std::vector<kernels::AttentionRow> split_rows;
  std::vector<std::vector<const uint8_t*>> split_blocks;  // K and V of group g at 2g and 2g + 1
  std::vector<float> split_states;
  void Resize(const ModelConfig& c, int64_t n_tokens, int64_t n_logits, int n_threads, int64_t max_positions) {
    auto fit = [](std::vector<float>& buf, int64_t n) {
      if (static_cast<int64_t>(buf.size()) < n) buf.resize(static_cast<size_t>(n));
    };
    fit(x, n_tokens * c.n_embd);
    fit(xn, n_tokens * c.n_embd);
    fit(q, n_tokens * c.q_dim());
    fit(k, n_tokens * c.kv_dim());
    fit(v, n_tokens * c.kv_dim());
    fit(attn, n_tokens * c.q_dim());
    fit(proj, n_tokens * c.n_embd);
    // A step's experts run together: n_tokens · n_expert_used (token, expert) rows.
    const int64_t routed = n_tokens * std::max<int64_t>(1, c.n_expert_used);
    const int64_t max_ff = std::max({c.n_ff, c.n_ff_shexp});
    fit(gate, std::max(n_tokens * max_ff, routed * c.n_ff_exp));
    fit(up, std::max(n_tokens * max_ff, routed * c.n_ff_exp));
    if (c.is_moe()) {
      fit(router, n_tokens * c.n_expert);
      fit(expert_out, std::max(routed, n_tokens) * c.n_embd);
    }
    fit(selected, n_logits * c.n_embd);
    if (static_cast<int>(scores.size()) < n_threads) scores.resize(static_cast<size_t>(n_threads));
    for (auto& s : scores)
      fit(s, kernels::kMaxAttentionRows * std::min(max_positions, kernels::kAttentionSplitPositions));
  }
};

Model::Model(GgufFile file, ModelConfig config, ModelWeights weights, const ModelPartition& partition)
    : file_(std::move(file)),
      config_(std::move(config)),
      partition_(partition),
      local_(LocalConfig(config_, partition_)),
      first_layer_(LayersOf(config_, partition_).first),
      end_layer_(LayersOf(config_, partition_).end()),
      arch_(config_.arch()),
      weights_(std::move(weights)),
      scratch_(std::make_unique<Scratch>()) {}

Model::~Model() = default;

KvCacheShape Model::KvShape(GgmlType type, int64_t block_tokens) const {
  return {end_layer_ - first_layer_, local_.n_kv_heads, local_.head_dim, type, block_tokens};
}

double Model::ForwardFlops(int64_t n_tokens, int64_t attended_positions) const {
  const ModelConfig& c = config_;
  double q_dim = static_cast<double>(c.q_dim()), kv_dim = static_cast<double>(c.kv_dim());
  double e = static_cast<double>(c.n_embd);
  double per_layer = e * q_dim + 2 * e * kv_dim + q_dim * e + FfnMultiplyAddsPerToken(c);  // multiply-adds per token
  double matmul = static_cast<double>(c.n_layers) * per_layer + e * static_cast<double>(c.n_vocab);
  double attention = static_cast<double>(c.n_layers) * 2.0 * q_dim * static_cast<double>(attended_positions);
  return 2.0 * (matmul * static_cast<double>(n_tokens) + attention);
}

void Model::EmbedTokens(const Batch& batch, float* x) {
  const OpTimer timer(profile_, OpKind::kEmbed);
  const kernels::WeightMatrix& e = weights_.token_embd;
  std::vector<uint8_t> unpacked(static_cast<size_t>(e.panels ? e.row_bytes : 0));  // a row out of its panel
  for (int64_t t = 0; t < batch.size(); ++t) {
    const TokenId id = batch.tokens[static_cast<size_t>(t)];  // in the vocabulary: Forward checked
    float* row = x + t * config_.n_embd;
    if (e.panels) kernels::UnpackPanels(e, id, id + 1, unpacked.data());
    DequantizeRow(e.type, e.panels ? unpacked.data() : e.data + id * e.row_bytes, row, config_.n_embd);
    if (config_.embedding_scale != 1.0f)
      for (int64_t i = 0; i < config_.n_embd; ++i) row[i] *= config_.embedding_scale;
  }
}

void Model::ProjectQkv(const LayerWeights& w, int64_t n, ThreadPool& pool) {
  Scratch& s = *scratch_;
  const OpTimer timer(profile_, OpKind::kQkv, MatMulFlops(w.wq, n) + MatMulFlops(w.wk, n) + MatMulFlops(w.wv, n),
                      MatrixBytes(w.wq) + MatrixBytes(w.wk) + MatrixBytes(w.wv));
  const kernels::MatMulJob qkv[] = {{&w.wq, s.xn.data(), n, s.q.data()},   // [n, q_dim]
                                    {&w.wk, s.xn.data(), n, s.k.data()},   // [n, kv_dim]
                                    {&w.wv, s.xn.data(), n, s.v.data()}};  // [n, kv_dim]
  kernels::MatMulGroup(qkv, pool);
  if (!w.q_bias.empty()) AddBias(w.q_bias.data(), local_.q_dim(), n, s.q.data());
  if (!w.k_bias.empty()) AddBias(w.k_bias.data(), local_.kv_dim(), n, s.k.data());
  if (!w.v_bias.empty()) AddBias(w.v_bias.data(), local_.kv_dim(), n, s.v.data());
}

void Model::PositionQkAndStoreKv(const LayerWeights& w, int64_t layer, const Batch& batch, PagedKvCache& cache,
                                 ThreadPool& pool) {
  const OpTimer timer(profile_, OpKind::kRopeStoreKv);
  const ModelConfig& c = local_;
  Scratch& s = *scratch_;
  const int64_t hd = c.head_dim, q_dim = c.q_dim(), kv_dim = c.kv_dim();
  const RopeTable& rope = c.IsSlidingLayer(layer) ? weights_.rope_sliding : weights_.rope_global;
  const kernels::RopeFrequencies freqs{rope.inv_freq.data(), static_cast<int64_t>(rope.inv_freq.size()), rope.mscale,
                                       arch_.rope_style};
  // Each token writes its own slots of the cache (PagedKvCache::StoreKv), so ranges may run at once.
  ForTokenRanges(batch.size(), pool, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t pos = batch.positions[static_cast<size_t>(t)];
      float* q = s.q.data() + t * q_dim;  // [n_heads, head_dim]
      float* k = s.k.data() + t * kv_dim;  // [n_kv_heads, head_dim]
      if (!w.q_norm.empty())
        for (int64_t h = 0; h < c.n_heads; ++h)
          kernels::RmsNorm(q + h * hd, w.q_norm.data(), hd, c.rms_eps, q + h * hd);
      if (!w.k_norm.empty())
        for (int64_t h = 0; h < c.n_kv_heads; ++h)
          kernels::RmsNorm(k + h * hd, w.k_norm.data(), hd, c.rms_eps, k + h * hd);
      kernels::Rope(q, c.n_heads, hd, freqs, pos);
      kernels::Rope(k, c.n_kv_heads, hd, freqs, pos);
      cache.StoreKv(batch.seq_ids[static_cast<size_t>(t)], layer - first_layer_, pos, k, s.v.data() + t * kv_dim);
    }
  });
}

// The attention rows of query heads [h0, h0 + n_q) of tokens [t0, t0 + n_tokens)
// (one sequence) over cache positions from `first` on, appended to rows.
void Model::AppendAttentionRows(const LayerWeights& w, const Batch& batch, int64_t t0, int64_t n_tokens, int64_t h0,
                                int64_t n_q, int64_t first, std::vector<kernels::AttentionRow>& rows) {
  const int64_t hd = local_.head_dim, q_dim = local_.q_dim();
  Scratch& s = *scratch_;
  for (int64_t t = t0; t < t0 + n_tokens; ++t) {
    const int64_t n_positions = batch.positions[static_cast<size_t>(t)] + 1 - first;  // causal: up to itself
    for (int64_t h = h0; h < h0 + n_q; ++h) {
      const float sink =
          w.attn_sinks.empty() ? -std::numeric_limits<float>::infinity() : w.attn_sinks[static_cast<size_t>(h)];
      rows.push_back({s.q.data() + t * q_dim + h * hd, s.attn.data() + t * q_dim + h * hd, n_positions, sink});
    }
  }
}

// A group is the query heads that share a KV head (a grouped-query group) of
// a tile of consecutive tokens of one sequence (Scratch::attention_tiles), so
// that the tile reads its K and V once (kernels::AttendRows); a task is a
// group, or, when there are fewer groups than threads, a part of its heads.
// When groups are few and their rows long (decode at depth), AttendSplit
// spreads each group's position splits over the threads instead. A
// sliding-window layer's tokens see different windows: its tiles are single
// tokens. AttendRows gives every row the bits AttendHead would, and a row's
// splits are fixed by its positions, so a token's result depends neither on
// the tiling, the thread count, nor on what else is in the batch.
void Model::Attend(const LayerWeights& w, int64_t layer, const Batch& batch, PagedKvCache& cache, ThreadPool& pool) {
  const ModelConfig& c = local_;
  Scratch& s = *scratch_;
  const int64_t hd = c.head_dim;
  const int64_t group = c.n_heads / c.n_kv_heads;
  const int64_t window = c.IsSlidingLayer(layer) ? c.sliding_window : 0;
  const auto& tiles = window > 0 ? s.window_tiles : s.attention_tiles;
  const auto n_groups = static_cast<int64_t>(tiles.size()) * c.n_kv_heads;
  if (n_groups < kSplitBelowGroupsPerThread * pool.n_threads()) {
    int64_t splits = 0;
    for (const auto& [t0, n_tokens] : tiles) {
      const int64_t last = t0 + n_tokens - 1;
      const int64_t n_positions = batch.positions[static_cast<size_t>(last)] + 1 - WindowStart(batch, last, window);
      splits += kernels::AttentionSplits(n_positions);
    }
    if (splits > static_cast<int64_t>(tiles.size())) return AttendSplit(w, layer, batch, cache, pool, window);
  }
  const int64_t parts = std::min<int64_t>(group, (pool.n_threads() + n_groups - 1) / n_groups);
  const int64_t part_heads = (group + parts - 1) / parts;
  pool.ParallelFor(n_groups * parts, [&](int64_t task, int thread) {
    const auto [t0, n_tokens] = tiles[static_cast<size_t>(task / parts / c.n_kv_heads)];
    const int64_t kv_head = task / parts % c.n_kv_heads;
    const int64_t h0 = kv_head * group + task % parts * part_heads;
    const int64_t n_q = std::min(part_heads, (kv_head + 1) * group - h0);
    if (n_q <= 0) return;
    thread_local std::vector<const uint8_t*> k_blocks, v_blocks;
    thread_local std::vector<kernels::AttentionRow> rows;
    kernels::KvHeadView kv_k, kv_v;
    cache.HeadViews(batch.seq_ids[static_cast<size_t>(t0)], layer - first_layer_, kv_head, k_blocks, v_blocks, kv_k,
                    kv_v);
    const int64_t first = WindowStart(batch, t0, window);
    kv_k.first_position = kv_v.first_position = first;
    rows.clear();
    AppendAttentionRows(w, batch, t0, n_tokens, h0, n_q, first, rows);
    kernels::AttendRows(rows.data(), static_cast<int64_t>(rows.size()), hd, kv_k, kv_v, c.attention_scale,
                        c.attn_softcap, s.scores[static_cast<size_t>(thread)].data());
  });
}

// Flash-decoding: a task per (tile, split of its positions), any thread
// taking any, each leaving its rows' partial states; then every group's states
// merged here in split order. The same bits as AttendRows on the group. A task
// takes every KV head of its split in turn, each head's split one stretch of
// the cache (PagedKvCache keeps a head's blocks together). Tasks of one head
// and a run of its splits (longer streams) measured level against these.
void Model::AttendSplit(const LayerWeights& w, int64_t layer, const Batch& batch, PagedKvCache& cache,
                        ThreadPool& pool, int64_t window) {
  const ModelConfig& c = local_;
  Scratch& s = *scratch_;
  const int64_t hd = c.head_dim, group = c.n_heads / c.n_kv_heads;
  const auto& tiles = window > 0 ? s.window_tiles : s.attention_tiles;
  struct Group {
    kernels::KvHeadView k, v;
    int64_t first_row = 0, n_rows = 0, n_splits = 0, first_state = 0;
  };
  std::vector<Group> groups(tiles.size() * static_cast<size_t>(c.n_kv_heads));
  std::vector<std::pair<size_t, int64_t>> tasks;  // (tile, split)
  s.split_rows.clear();
  if (s.split_blocks.size() < 2 * groups.size()) s.split_blocks.resize(2 * groups.size());
  int64_t n_states = 0;
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto [t0, n_tokens] = tiles[g / static_cast<size_t>(c.n_kv_heads)];
    const int64_t kv_head = static_cast<int64_t>(g) % c.n_kv_heads;
    Group& gr = groups[g];
    cache.HeadViews(batch.seq_ids[static_cast<size_t>(t0)], layer - first_layer_, kv_head, s.split_blocks[2 * g],
                    s.split_blocks[2 * g + 1], gr.k, gr.v);
    const int64_t first = WindowStart(batch, t0, window);
    gr.k.first_position = gr.v.first_position = first;
    gr.first_row = static_cast<int64_t>(s.split_rows.size());
    AppendAttentionRows(w, batch, t0, n_tokens, kv_head * group, group, first, s.split_rows);
    gr.n_rows = static_cast<int64_t>(s.split_rows.size()) - gr.first_row;
    gr.n_splits = kernels::AttentionSplits(s.split_rows.data() + gr.first_row, gr.n_rows);
    gr.first_state = n_states;
    n_states += gr.n_splits * gr.n_rows * kernels::AttentionStateFloats(hd);
    if (kv_head == 0)  // the tile's groups have the same rows' positions
      for (int64_t j = 0; j < gr.n_splits; ++j) tasks.emplace_back(g / static_cast<size_t>(c.n_kv_heads), j);
  }
  if (static_cast<int64_t>(s.split_states.size()) < n_states) s.split_states.resize(static_cast<size_t>(n_states));
  pool.ParallelFor(static_cast<int64_t>(tasks.size()), [&](int64_t task, int thread) {
    const auto [tile, split] = tasks[static_cast<size_t>(task)];
    for (int64_t kv_head = 0; kv_head < c.n_kv_heads; ++kv_head) {
      const Group& gr = groups[tile * static_cast<size_t>(c.n_kv_heads) + static_cast<size_t>(kv_head)];
      kernels::AttendRowsSplit(s.split_rows.data() + gr.first_row, gr.n_rows, hd, gr.k, gr.v, c.attention_scale,
                               c.attn_softcap, split, s.split_states.data() + gr.first_state,
                               s.scores[static_cast<size_t>(thread)].data());
    }
  });
  for (const Group& gr : groups)
    kernels::MergeAttentionSplits(s.split_rows.data() + gr.first_row, gr.n_rows, hd,
                                  s.split_states.data() + gr.first_state);
}

Model::AttentionWork Model::CountAttentionWork(int64_t layer, const Batch& batch, const PagedKvCache& cache) const {
  const ModelConfig& c = local_;
  const int64_t window = c.IsSlidingLayer(layer) ? c.sliding_window : 0;
  const auto& tiles = window > 0 ? scratch_->window_tiles : scratch_->attention_tiles;
  const double position_flops = 4.0 * static_cast<double>(c.n_heads * c.head_dim);  // Q·K and P·V, every head
  const double position_bytes = 2.0 * static_cast<double>(c.kv_dim()) * KvBytesPerElement(cache.shape().type);
  AttentionWork work;
  // Each sequence's cached positions [first, end) that some tile reads.
  std::map<SeqId, std::pair<int64_t, int64_t>> spans;
  for (const auto& [t0, n_tokens] : tiles) {
    for (int64_t t = t0; t < t0 + n_tokens; ++t) {
      const int64_t first = WindowStart(batch, t, window), end = batch.positions[static_cast<size_t>(t)] + 1;
      work.flops += position_flops * static_cast<double>(end - first);
      const auto [it, added] = spans.try_emplace(batch.seq_ids[static_cast<size_t>(t)], first, end);
      it->second = {std::min(it->second.first, first), std::max(it->second.second, end)};
    }
  }
  for (const auto& [seq, span] : spans) work.kv_bytes += position_bytes * static_cast<double>(span.second - span.first);
  return work;
}

void Model::AddResidual(const std::vector<float>& post_norm, int64_t n, float* x, ThreadPool& pool) {
  const OpTimer timer(profile_, OpKind::kResidual);
  const int64_t e = config_.n_embd;
  float* proj = scratch_->proj.data();  // [n, n_embd]
  ForTokenRanges(n, pool, [&](int64_t t0, int64_t t1) {
    if (!post_norm.empty())
      for (int64_t t = t0; t < t1; ++t)
        kernels::RmsNorm(proj + t * e, post_norm.data(), e, config_.rms_eps, proj + t * e);
    for (int64_t i = t0 * e; i < t1 * e; ++i) x[i] += proj[i];
  });
}

void Model::NormTokens(const float* x, const std::vector<float>& norm, int64_t n, ThreadPool& pool) {
  const OpTimer timer(profile_, OpKind::kNorm);
  const int64_t e = config_.n_embd;
  float* xn = scratch_->xn.data();  // [n, n_embd]
  ForTokenRanges(n, pool, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) kernels::RmsNorm(x + t * e, norm.data(), e, config_.rms_eps, xn + t * e);
  });
}

void Model::AttentionBlock(const LayerWeights& w, int64_t layer, const Batch& batch, PagedKvCache& cache, float* x,
                           ThreadPool& pool) {
  const ModelConfig& c = config_;
  Scratch& s = *scratch_;
  const int64_t n = batch.size();
  NormTokens(x, w.attn_norm, n, pool);
  ProjectQkv(w, n, pool);
  PositionQkAndStoreKv(w, layer, batch, cache, pool);
  {
    const AttentionWork work = profile_ ? CountAttentionWork(layer, batch, cache) : AttentionWork{};
    const OpTimer timer(profile_, OpKind::kAttention, work.flops, work.kv_bytes);
    Attend(w, layer, batch, cache, pool);
  }
  {
    const OpTimer timer(profile_, OpKind::kAttnOut, MatMulFlops(w.wo, n), MatrixBytes(w.wo));
    kernels::MatMul(w.wo, s.attn.data(), n, s.proj.data(), pool);  // [n, n_embd]
  }
  if (partition_.kind == ModelPartition::Kind::kTensor && link_) link_->AllReduceSum(s.proj.data(), n * c.n_embd);
  if (!w.o_bias.empty()) AddBias(w.o_bias.data(), c.n_embd, n, s.proj.data());
  AddResidual(w.post_attn_norm, n, x, pool);
}

void Model::GatedFfn(const kernels::WeightMatrix& gate, const kernels::WeightMatrix& up,
                     const kernels::WeightMatrix& down, const float* xn, int64_t n, float* out, ThreadPool& pool,
                     OpProfile* profile, const FfnBiases& biases) {
  Scratch& s = *scratch_;
  const int64_t ff = gate.n_rows;
  const kernels::MatMulJob gate_up[] = {{&gate, xn, n, s.gate.data()},  // [n, ff]
                                        {&up, xn, n, s.up.data()}};     // [n, ff]
  {
    const OpTimer timer(profile, OpKind::kFfnGateUp, MatMulFlops(gate, n) + MatMulFlops(up, n),
                        MatrixBytes(gate) + MatrixBytes(up));
    kernels::MatMulGroup(gate_up, pool);
  }
  {
    const OpTimer timer(profile, OpKind::kFfnActivation);
    ForTokenRanges(n, pool, [&](int64_t t0, int64_t t1) {
      ActivateFfn(biases, ff, t1 - t0, s.gate.data() + t0 * ff, s.up.data() + t0 * ff);
    });
  }
  const OpTimer timer(profile, OpKind::kFfnDown, MatMulFlops(down, n), MatrixBytes(down));
  kernels::MatMul(down, s.gate.data(), n, out, pool);  // [n, n_embd]
  if (biases.down) AddBias(biases.down, down.n_rows, n, out);
}

void Model::ActivateFfn(const FfnBiases& biases, int64_t ff, int64_t n, float* gate, float* up) const {
  if (biases.gate) AddBias(biases.gate, ff, n, gate);
  if (biases.up) AddBias(biases.up, ff, n, up);
  switch (arch_.ffn_activation) {
    case FfnActivation::kSilu: kernels::SwiGlu(gate, up, n * ff, gate); break;
    case FfnActivation::kGeluTanh: kernels::GeGlu(gate, up, n * ff, gate); break;
    case FfnActivation::kSwigluOai: kernels::SwigluOai(gate, up, n * ff, kSwigluOaiAlpha, kSwigluOaiLimit, gate); break;
  }
}

// Each token's FFN is the weighted sum of its top-k experts' FFNs. The tokens
// routed to an expert run through it together (its weights read once per
// step), and each token's sum is taken in expert order, so a token's result
// does not depend on what else is in the batch. A router logit that is not a
// finite number (hostile weights) ends the forward pass with an error naming
// the layer: its experts' choice would be meaningless.
void Model::MixtureOfExperts(const LayerWeights& w, int64_t layer, int64_t n, ThreadPool& pool) {
  const ModelConfig& c = config_;
  Scratch& s = *scratch_;
  const int64_t e_dim = c.n_embd, n_exp = c.n_expert, k = c.n_expert_used;
  kernels::MatMul(w.router, s.xn.data(), n, s.router.data(), pool);  // [n, n_expert]
  if (!w.router_bias.empty()) AddBias(w.router_bias.data(), n_exp, n, s.router.data());
  struct Route {
    int64_t token;
    float weight;
  };
  std::vector<std::vector<Route>> routed(static_cast<size_t>(n_exp));
  std::vector<double> score(static_cast<size_t>(n_exp));  // what the top k is taken of
  std::vector<int64_t> order(static_cast<size_t>(n_exp));
  const bool softmax_all = arch_.expert_gating == ExpertGating::kSoftmax;
  for (int64_t t = 0; t < n; ++t) {
    const float* logits = s.router.data() + t * n_exp;
    for (int64_t e = 0; e < n_exp; ++e)
      if (!std::isfinite(logits[e]))
        Fail("layer {}: the router (ffn_gate_inp) gave expert {} the logit {} for token {} of the step", layer, e,
             logits[e], t);
    const double max = *std::max_element(logits, logits + n_exp);
    double sum = 0;  // softmax_all: Σ exp over every expert
    for (int64_t e = 0; e < n_exp; ++e) {
      score[static_cast<size_t>(e)] = softmax_all ? std::exp(logits[e] - max) : logits[e];
      sum += score[static_cast<size_t>(e)];
    }
    for (int64_t e = 0; e < n_exp; ++e) order[static_cast<size_t>(e)] = e;
    std::partial_sort(order.begin(), order.begin() + k, order.end(), [&](int64_t a, int64_t b) {
      return score[static_cast<size_t>(a)] != score[static_cast<size_t>(b)]
                 ? score[static_cast<size_t>(a)] > score[static_cast<size_t>(b)]
                 : a < b;
    });
    // The chosen experts' weights: their probabilities (renormalised or not), or a softmax over their logits.
    const double top = score[static_cast<size_t>(order[0])];
    double chosen = 0;
    for (int64_t i = 0; i < k; ++i) {
      double& v = score[static_cast<size_t>(order[static_cast<size_t>(i)])];
      if (!softmax_all) v = std::exp(v - top);
      chosen += v;
    }
    const double norm = !softmax_all || arch_.norm_expert_weights ? chosen : sum;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t e = order[static_cast<size_t>(i)];
      routed[static_cast<size_t>(e)].push_back({t, static_cast<float>(score[static_cast<size_t>(e)] / norm)});
    }
  }
  // Every expert hit runs once for all of its tokens, and all experts' products
  // share the pool's barriers: gate and up of every expert in one MatMulGroup,
  // then every down. Expert e's tokens are rows [first[e], first[e + 1]) of
  // gate/up [n·k, n_ff_exp] and expert_out [n·k, n_embd]; gate and up gather
  // them from xn, which MatMulGroup quantizes once for all the experts.
  // The per-row steps between the products (activation, down's bias, the
  // weighted sums) run on the pool too: on the calling thread, gpt-oss's
  // SwiGLU alone had taken ~14 % of a pp256 while the other thread waited.
  const int64_t ff = c.n_ff_exp;
  std::vector<int64_t> first(static_cast<size_t>(n_exp + 1));
  std::vector<int64_t> token_rows(static_cast<size_t>(n * k));  // token t's rows, in expert order: [t·k, t·k + k)
  std::vector<int64_t> row_tokens(static_cast<size_t>(n * k));  // the token of each row
  std::vector<float> token_weights(static_cast<size_t>(n * k));
  std::vector<int64_t> token_routes(static_cast<size_t>(n), 0);
  int64_t rows = 0;
  for (int64_t e = 0; e < n_exp; ++e) {
    first[static_cast<size_t>(e)] = rows;
    for (const Route& r : routed[static_cast<size_t>(e)]) {
      const size_t slot = static_cast<size_t>(r.token * k + token_routes[static_cast<size_t>(r.token)]++);
      row_tokens[static_cast<size_t>(rows)] = r.token;
      token_rows[slot] = rows++;
      token_weights[slot] = r.weight;
    }
  }
  first[static_cast<size_t>(n_exp)] = rows;
  // fn(e, r0, r1) over rows [0, rows) in pieces of one expert each, on the pool.
  auto for_expert_rows = [&](const std::function<void(int64_t e, int64_t r0, int64_t r1)>& fn) {
    ForTokenRanges(rows, pool, [&](int64_t r0, int64_t r1) {
      int64_t e = std::upper_bound(first.begin(), first.end(), r0) - first.begin() - 1;
      for (int64_t r = r0; r < r1; ++e) {
        const int64_t end = std::min(r1, first[static_cast<size_t>(e + 1)]);
        if (end > r) fn(e, r, end);
        r = std::max(r, end);
      }
    });
  };
  ExpertReads& reads = expert_reads_;
  if (reads.routes.empty()) {
    reads.routes.assign(static_cast<size_t>(c.n_layers * n_exp), 0);
    reads.layer_tokens.assign(static_cast<size_t>(c.n_layers), 0);
  }
  for (int64_t e = 0; e < n_exp; ++e)
    reads.routes[static_cast<size_t>(layer * n_exp + e)] += static_cast<int64_t>(routed[static_cast<size_t>(e)].size());
  reads.layer_tokens[static_cast<size_t>(layer)] += n;
  std::vector<kernels::MatMulJob> jobs;
  for (int64_t e = 0; e < n_exp; ++e) {
    const int64_t r0 = first[static_cast<size_t>(e)], m = first[static_cast<size_t>(e + 1)] - r0;
    if (m == 0) continue;
    const kernels::WeightMatrix& gate = w.exp_gate[static_cast<size_t>(e)];
    const kernels::WeightMatrix& up = w.exp_up[static_cast<size_t>(e)];
    const kernels::WeightMatrix& down = w.exp_down[static_cast<size_t>(e)];
    const int64_t* tokens = row_tokens.data() + r0;  // gathered from xn [n, n_embd]
    jobs.push_back({&gate, s.xn.data(), m, s.gate.data() + r0 * ff, tokens, n});
    jobs.push_back({&up, s.xn.data(), m, s.up.data() + r0 * ff, tokens, n});
    reads.experts_hit += 1;
    reads.bytes += gate.n_rows * gate.row_bytes + up.n_rows * up.row_bytes + down.n_rows * down.row_bytes;
  }
  kernels::MatMulGroup(jobs, pool);
  for_expert_rows([&](int64_t e, int64_t r0, int64_t r1) {
    FfnBiases biases;
    if (!w.exp_gate_bias.empty()) biases = {w.exp_gate_bias.data() + e * ff, w.exp_up_bias.data() + e * ff, nullptr};
    ActivateFfn(biases, ff, r1 - r0, s.gate.data() + r0 * ff, s.up.data() + r0 * ff);
  });
  jobs.clear();
  for (int64_t e = 0; e < n_exp; ++e) {
    const int64_t r0 = first[static_cast<size_t>(e)], m = first[static_cast<size_t>(e + 1)] - r0;
    if (m == 0) continue;
    jobs.push_back(
        {&w.exp_down[static_cast<size_t>(e)], s.gate.data() + r0 * ff, m, s.expert_out.data() + r0 * e_dim});
  }
  kernels::MatMulGroup(jobs, pool);
  if (!w.exp_down_bias.empty())
    for_expert_rows([&](int64_t e, int64_t r0, int64_t r1) {
      AddBias(w.exp_down_bias.data() + e * e_dim, e_dim, r1 - r0, s.expert_out.data() + r0 * e_dim);
    });
  ForTokenRanges(n, pool, [&](int64_t t0, int64_t t1) {  // each token's weighted sum, in expert order
    for (int64_t t = t0; t < t1; ++t) {
      float* dst = s.proj.data() + t * e_dim;
      std::fill(dst, dst + e_dim, 0.0f);
      for (int64_t j = 0; j < k; ++j) {
        const size_t slot = static_cast<size_t>(t * k + j);
        const float* src = s.expert_out.data() + token_rows[slot] * e_dim;
        const float weight = token_weights[slot];
        for (int64_t d = 0; d < e_dim; ++d) dst[d] += weight * src[d];
      }
    }
  });
  if (w.shared_gate_inp.empty()) return;
  // qwen2moe: + sigmoid(gate_inp_shexp · xn) · shared FFN(xn)
  GatedFfn(w.shared_gate, w.shared_up, w.shared_down, s.xn.data(), n, s.expert_out.data(), pool, nullptr);
  for (int64_t t = 0; t < n; ++t) {
    double dot = 0;
    for (int64_t d = 0; d < e_dim; ++d) dot += static_cast<double>(w.shared_gate_inp[static_cast<size_t>(d)]) * s.xn[static_cast<size_t>(t * e_dim + d)];
    const float g = static_cast<float>(1.0 / (1.0 + std::exp(-dot)));
    for (int64_t d = 0; d < e_dim; ++d) s.proj[static_cast<size_t>(t * e_dim + d)] += g * s.expert_out[static_cast<size_t>(t * e_dim + d)];
  }
}

void Model::FeedForwardBlock(const LayerWeights& w, int64_t layer, int64_t n, float* x, ThreadPool& pool) {
  const ModelConfig& c = config_;
  Scratch& s = *scratch_;
  NormTokens(x, w.ffn_norm, n, pool);
  if (c.is_moe()) {
    OpTimer timer(
        profile_, OpKind::kExperts, 2.0 * FfnMultiplyAddsPerToken(local_) * static_cast<double>(n),
        MatrixBytes(w.router) + MatrixBytes(w.shared_gate) + MatrixBytes(w.shared_up) + MatrixBytes(w.shared_down));
    const int64_t expert_bytes_before = expert_reads_.bytes;
    MixtureOfExperts(w, layer, n, pool);
    timer.AddWork(0, static_cast<double>(expert_reads_.bytes - expert_bytes_before));
  } else {
    GatedFfn(w.w_gate, w.w_up, w.w_down, s.xn.data(), n, s.proj.data(), pool, profile_);
    if (partition_.kind == ModelPartition::Kind::kTensor && link_) link_->AllReduceSum(s.proj.data(), n * c.n_embd);
  }
  AddResidual(w.post_ffw_norm, n, x, pool);
}

void Model::Forward(const Batch& batch, PagedKvCache& cache, float* logits, ThreadPool& pool) {
  const ModelConfig& c = local_;
  const int64_t n = batch.size();
  if (n == 0) return;
  int64_t max_positions = 0;
  for (int64_t t = 0; t < n; ++t) {
    int64_t pos = batch.positions[static_cast<size_t>(t)];
    if (pos < 0 || pos >= c.n_ctx_train)
      Fail("position {} is outside the model's context of {} tokens", pos, c.n_ctx_train);
    max_positions = std::max(max_positions, pos + 1);
    // Checked before the step is shared: a split step fails on every rank or on none.
    const TokenId id = batch.tokens[static_cast<size_t>(t)];
    if (id < 0 || id >= config_.n_vocab) Fail("token id {} is outside the vocabulary [0, {})", id, config_.n_vocab);
  }
  const bool split = partition_.split();
  if (split && !link_) Fail("the model is split across {} ranks but has no link to them", partition_.n_ranks);
  if (split && partition_.rank == 0) link_->ShareStep(batch, cache);
  Scratch& s = *scratch_;
  const Clock::time_point start = profile_ ? Clock::now() : Clock::time_point{};
  s.Resize(c, n, batch.n_logits(), pool.n_threads(), max_positions);
  float* x = s.x.data();  // [n, n_embd], the residual stream
  if (split && partition_.kind == ModelPartition::Kind::kPipeline) {
    ForwardPipeline(batch, cache, x, logits, pool);
  } else {
    EmbedTokens(batch, x);
    RunLayers(batch, cache, x, pool);
    ComputeLogits(batch, x, logits, pool);
  }
  if (profile_) profile_->AddForward(SecondsSince(start));
}

void Model::RunLayers(const Batch& batch, PagedKvCache& cache, float* x, ThreadPool& pool) {
  Scratch& s = *scratch_;
  const ModelConfig& c = local_;
  TileTokens(batch, kernels::AttentionTileTokens(c.n_heads / c.n_kv_heads), s.attention_tiles);
  if (c.sliding_window > 0) TileTokens(batch, 1, s.window_tiles);
  for (int64_t l = first_layer_; l < end_layer_; ++l) {
    const LayerWeights& w = weights_.layers[static_cast<size_t>(l)];
    AttentionBlock(w, l, batch, cache, x, pool);
    FeedForwardBlock(w, l, batch.size(), x, pool);
  }
}

// Micro-batch j is tokens PartOf(n, j, M) of the step, the same cut on every
// rank: rank r runs j while rank r + 1 runs j − 1, and a step of n tokens keeps
// every stage busy but for the first and last micro-batches' fill and drain.
// By default M = 2 · ranks, but no micro-batch under kMinMicroBatchTokens.
// A rank runs its micro-batches in order, so a token's attention finds the K
// and V of its sequence's earlier positions (the scheduler adds a sequence's
// tokens in position order) already written by the earlier micro-batches of
// the step. Every row's bits are those of the whole step (a row's result does
// not depend on the rest of its batch); logits rows stay in batch order.
void Model::ForwardPipeline(const Batch& batch, PagedKvCache& cache, float* x, float* logits, ThreadPool& pool) {
  const ModelConfig& c = local_;
  const int rank = partition_.rank, last = partition_.n_ranks - 1;
  const int64_t n = batch.size();
  const int64_t wanted = partition_.micro_batches > 0
                            ? partition_.micro_batches
                            : std::clamp<int64_t>(n / kMinMicroBatchTokens, 1, 2 * partition_.n_ranks);
  const int n_micro = static_cast<int>(std::min(wanted, n));
  // Rank 0 posts every micro-batch's logits receive first, so that the last
  // stage never waits for rank 0 to be done with its own work.
  if (rank == 0) {
    int64_t row = 0;  // the micro-batch's first logits row
    for (int j = 0; j < n_micro; ++j) {
      const IndexRange part = PartOf(n, j, n_micro);
      const auto want = batch.want_logits.begin() + part.first;
      const int64_t rows = std::count(want, want + part.count, true);
      link_->StartRecv(logits + row * c.n_vocab, rows * c.n_vocab, last);
      row += rows;
    }
  }
  Batch& micro = scratch_->micro;
  for (int j = 0; j < n_micro; ++j) {
    const IndexRange part = PartOf(n, j, n_micro);
    micro.Clear();
    for (int64_t t = part.first; t < part.end(); ++t) {
      const auto i = static_cast<size_t>(t);
      micro.Add(batch.tokens[i], batch.positions[i], batch.seq_ids[i], batch.want_logits[i]);
    }
    float* micro_x = x + part.first * c.n_embd;  // [part.count, n_embd]
    if (rank > 0) {
      link_->Recv(micro_x, part.count * c.n_embd, rank - 1);
    } else {
      EmbedTokens(micro, micro_x);
    }
    RunLayers(micro, cache, micro_x, pool);
    if (rank < last) {
      link_->Send(micro_x, part.count * c.n_embd, rank + 1);
    } else {
      ComputeLogits(micro, micro_x, nullptr, pool);  // sent to rank 0
    }
  }
  if (rank == 0) link_->FinishRecvs();
}

void Model::ComputeLogits(const Batch& batch, const float* x, float* logits, ThreadPool& pool) {
  const ModelConfig& c = local_;
  Scratch& s = *scratch_;
  OpTimer timer(profile_, OpKind::kLogits);
  int64_t row = 0;
  for (int64_t t = 0; t < batch.size(); ++t) {
    if (!batch.want_logits[static_cast<size_t>(t)]) continue;
    kernels::RmsNorm(x + t * c.n_embd, weights_.output_norm.data(), c.n_embd, c.rms_eps, s.selected.data() + row * c.n_embd);
    ++row;
  }
  const bool split = partition_.split();
  float* out = logits;  // [n_logits, n_vocab of this rank]
  if (split) {
    if (static_cast<int64_t>(s.local_logits.size()) < row * c.n_vocab)
      s.local_logits.resize(static_cast<size_t>(row * c.n_vocab));
    out = s.local_logits.data();
  }
  timer.AddWork(MatMulFlops(weights_.output, row), MatrixBytes(weights_.output));
  kernels::MatMul(weights_.output, s.selected.data(), row, out, pool);  // [n_logits, n_vocab]
  if (const float cap = c.final_softcap; cap > 0.0f) kernels::SoftCap(out, row * c.n_vocab, cap);
  if (!split) return;
  if (partition_.kind == ModelPartition::Kind::kPipeline) {
    link_->Send(out, row * c.n_vocab, 0);  // the last stage's logits go to rank 0
    return;
  }
  std::vector<int64_t> cols(static_cast<size_t>(partition_.n_ranks));
  for (int r = 0; r < partition_.n_ranks; ++r)
    cols[static_cast<size_t>(r)] = PartOf(config_.n_vocab, r, partition_.n_ranks).count;
  link_->GatherColumns(out, row, cols, logits);
}

}  // namespace ridge
