// Attention micro-benchmarks on the smollm2-135m shape (9 query heads on 3 KV
// heads, head_dim 64, F16 (or BF16) cache in 16-token blocks laid out as PagedKvCache
// lays them: keys [layer, block, kv head, head_dim, token], values as the keys
// (ValuesByDimension: AVX2) or [layer, block, token, kv head, head_dim], in 2 MiB pages).
//
//   read kv: the probe's read kernel over the K and V of 30 layers at depth
//            4096 (94 MB) on one thread: the roof of the next one;
//   decode:  one decode step's attention at depth D over L layers, as
//            Model::AttendSplit runs it on ONE thread (each 256-position split
//            for every KV head in turn, the group's 3 query rows per call,
//            then the merge); 30 layers at 4096 stream from memory, 1 layer at
//            1024 sits in L2 (what the arithmetic alone allows);
//   prefill: a 15-row tile (5 tokens × 3 heads of one group, the tile
//            Model::Attend makes) at depth D, one layer per call in turn;
//   prompt:  a whole prompt's attention on one KV head at depth 0, in the
//            tiles Model::Attend makes (8 heads a group: tinyllama's), K and
//            V in cache: prefill's attention arithmetic, in GFLOP/s (compare
//            BM_Peak/0 of ridge_kernels_bench on as many threads).
// Reported: ns per KV-head position (K and V of one head at one position:
// 256 bytes, read once for every row of the call), per row-position, and GB/s
// of K and V, from thread CPU time (the host is shared; see README.md).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "ridge/base/huge_page_buffer.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/base/cpu_features.h"
#include "ridge/kernels/ops.h"
#include "ridge/roofline/probe_kernels.h"

namespace ridge::kernels {
namespace {

constexpr int64_t kKvHeads = 3;
constexpr int64_t kGroup = 3;  // query heads per KV head (BM_AttentionDecode: range(3), 8 as tinyllama's)
constexpr int64_t kHeadDim = 64;
constexpr int64_t kBlockTokens = 16;

// K and V of every layer for `depth` positions of one sequence, and the
// block tables of each (layer, KV head), laid out as PagedKvCache lays them.
// How a head's part of a block is laid out: by dimension [head_dim, token], token-major [token, head_dim].
enum class Layout { kTokenMajor = 0, kKeysByDim = 1, kKeysAndValuesByDim = 2 };

struct Cache {
  Layout layout = Layout::kKeysByDim;
  GgmlType type = GgmlType::kF16;
  int64_t depth = 0, layers = 0, head_bytes = 0, head_block_bytes = 0, n_blocks = 0;
  HugePageBuffer k, v;  // [layer, kv head, block, a head's part], in 2 MiB pages like PagedKvCache's pools
  std::vector<const uint8_t*> k_blocks, v_blocks;  // [layer, kv head, block]
  Cache(int64_t depth_positions, int64_t n_layers, Layout kv_layout = Layout::kKeysByDim,
        GgmlType kv_type = GgmlType::kF16)
      : layout(kv_layout), type(kv_type), depth(depth_positions), layers(n_layers) {
    head_bytes = RowBytes(type, kHeadDim);
    head_block_bytes = kBlockTokens * head_bytes;
    n_blocks = (depth + kBlockTokens - 1) / kBlockTokens;
    const auto total = static_cast<size_t>(layers * kKvHeads * n_blocks * head_block_bytes);
    k = HugePageBuffer::Allocate(total, /*prefault=*/true, "keys");
    v = HugePageBuffer::Allocate(total, /*prefault=*/true, "values");
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> head(kHeadDim);
    for (size_t off = 0; off < total; off += static_cast<size_t>(head_bytes)) {
      for (auto& x : head) x = normal(rng);
      QuantizeRow(type, head.data(), k.data() + off, kHeadDim);
      for (auto& x : head) x = normal(rng);
      QuantizeRow(type, head.data(), v.data() + off, kHeadDim);
    }
    for (int64_t b = 0; b < layers * kKvHeads * n_blocks; ++b) {
      k_blocks.push_back(k.data() + b * head_block_bytes);
      v_blocks.push_back(v.data() + b * head_block_bytes);
    }
  }
  KvHeadView View(bool keys, int64_t layer, int64_t kv_head) const {
    KvHeadView view;
    view.type = type;
    view.blocks = (keys ? k_blocks : v_blocks).data() + (layer * kKvHeads + kv_head) * n_blocks;
    view.block_tokens = kBlockTokens;
    // The same bytes either way: random halves.
    const bool by_dim = keys ? layout != Layout::kTokenMajor : layout == Layout::kKeysAndValuesByDim;
    const int64_t elem = head_bytes / kHeadDim;
    view.token_stride_bytes = by_dim ? elem : head_bytes;
    view.dim_stride_bytes = by_dim ? kBlockTokens * elem : 0;
    return view;
  }
};

// tokens × group rows over one KV head, token t seeing depth + t + 1 positions.
struct Rows {
  std::vector<float> q, out, scores;
  std::vector<AttentionRow> rows;
  Rows(int64_t tokens, int64_t depth, int64_t group = kGroup) {
    const int64_t n = tokens * group;
    q.resize(static_cast<size_t>(n * kHeadDim));
    out.resize(q.size());
    std::mt19937 rng(11);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (auto& x : q) x = normal(rng);
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t h = 0; h < group; ++h) {
        const int64_t r = t * group + h;
        rows.push_back({q.data() + r * kHeadDim, out.data() + r * kHeadDim, depth + t + 1});
      }
    scores.resize(static_cast<size_t>(AttentionScoresFloats(rows.data(), n)));
  }
};

void Report(benchmark::State& state, const Cache& cache, int64_t kv_positions_per_iteration,
            int64_t row_positions_per_iteration) {
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["ns/kv_pos"] = benchmark::Counter(
      static_cast<double>(kv_positions_per_iteration) * iterations * 1e-9,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["ns/row_pos"] = benchmark::Counter(
      static_cast<double>(row_positions_per_iteration) * iterations * 1e-9,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.SetBytesProcessed(static_cast<int64_t>(iterations) * kv_positions_per_iteration * 2 *
                          cache.head_bytes);
}

// The roof of BM_AttentionDecode/4096/30: the probe's read kernel over the
// same K and V bytes, on one thread.
void BM_AttentionReadKv(benchmark::State& state) {
  const Cache cache(state.range(0) + 1, state.range(1));
  const probe::IsaKernels kernels = probe::KernelsFor(ActiveIsa());
  uint64_t sum = 0;
  for (auto _ : state) {
    sum += kernels.read_sum(cache.k.data(), cache.k.size_bytes());
    sum += kernels.read_sum(cache.v.data(), cache.v.size_bytes());
  }
  benchmark::DoNotOptimize(sum);
  Report(state, cache, cache.layers * kKvHeads * cache.depth, cache.layers * kKvHeads * kGroup * cache.depth);
}

// state.range(0): depth, range(1): layers (30: from memory; 1 at depth 1024:
// K and V in L2), range(2): the Layout (1, keys by dimension: PagedKvCache's on
// AVX-512; 2, values too: on AVX2; 0, token-major: Q8_0's, and every type's
// before), range(3): query heads per KV head (the rows of each call),
// range(4): 1 for a BF16 cache (its keys take the BF16 dot on AVX-512), 0 F16. As
// Model::AttendSplit runs a decode step on one thread: for each split of 256
// positions every KV head in turn (each head's split one stretch of memory), then
// the merge.
void BM_AttentionDecode(benchmark::State& state) {
  const int64_t depth = state.range(0), layers = state.range(1), group = state.range(3);
  const Cache cache(depth + 1, layers, static_cast<Layout>(state.range(2)),
                    state.range(4) != 0 ? GgmlType::kBF16 : GgmlType::kF16);
  std::vector<Rows> heads;
  for (int64_t h = 0; h < kKvHeads; ++h) heads.emplace_back(1, depth, group);
  const int64_t n_splits = AttentionSplits(depth + 1);
  std::vector<float> states(static_cast<size_t>(kKvHeads * n_splits * group * AttentionStateFloats(kHeadDim)));
  const auto state_floats = static_cast<int64_t>(states.size()) / kKvHeads;
  const float scale = 0.125f;
  for (auto _ : state) {
    for (int64_t l = 0; l < layers; ++l) {
      for (int64_t j = 0; j < n_splits; ++j)
        for (int64_t h = 0; h < kKvHeads; ++h)
          AttendRowsSplit(heads[h].rows.data(), group, kHeadDim, cache.View(true, l, h), cache.View(false, l, h),
                          scale, 0.0f, j, states.data() + h * state_floats, heads[h].scores.data());
      for (int64_t h = 0; h < kKvHeads; ++h)
        MergeAttentionSplits(heads[h].rows.data(), group, kHeadDim, states.data() + h * state_floats);
    }
    benchmark::DoNotOptimize(heads[0].out.data());
  }
  Report(state, cache, layers * kKvHeads * (depth + 1), layers * kKvHeads * group * (depth + 1));
}

// state.range(0): depth, range(1): the Layout; a 15-row tile (5 tokens × 3
// query heads) per call, the next layer each call.
void BM_AttentionPrefillTile(benchmark::State& state) {
  const int64_t depth = state.range(0), tokens = 5;
  constexpr int64_t kLayers = 30;
  const Cache cache(depth + tokens, kLayers, static_cast<Layout>(state.range(1)));
  Rows rows(tokens, depth);
  int64_t layer = 0, row_positions = 0;
  for (const AttentionRow& row : rows.rows) row_positions += row.n_positions;
  for (auto _ : state) {
    AttendRows(rows.rows.data(), tokens * kGroup, kHeadDim, cache.View(true, layer, 0), cache.View(false, layer, 0),
               0.125f, 0.0f, rows.scores.data());
    benchmark::DoNotOptimize(rows.out.data());
    layer = (layer + 1) % kLayers;
  }
  Report(state, cache, depth + tokens, row_positions);
}

// state.range(0): prompt tokens, range(1): query heads per KV head. One KV
// head's attention over a whole prompt at depth 0, as Model::Attend tiles it
// (AttentionTileTokens(group) tokens a tile, token t seeing t + 1 positions),
// K and V of one layer in cache: prefill's attention, FP32 arithmetic from L2.
// Reported as GFLOP/s (4 · head_dim a row-position: q·k and p·v).
void BM_AttentionPrompt(benchmark::State& state) {
  const int64_t tokens = state.range(0), group = state.range(1);
  const int64_t tile_tokens = AttentionTileTokens(group);
  const Cache cache(tokens, 1);
  std::vector<Rows> tiles;
  int64_t row_positions = 0;
  for (int64_t t0 = 0; t0 < tokens; t0 += tile_tokens) {
    tiles.emplace_back(std::min(tile_tokens, tokens - t0), t0, group);
    for (const AttentionRow& row : tiles.back().rows) row_positions += row.n_positions;
  }
  for (auto _ : state) {
    for (Rows& tile : tiles)
      AttendRows(tile.rows.data(), static_cast<int64_t>(tile.rows.size()), kHeadDim, cache.View(true, 0, 0),
                 cache.View(false, 0, 0), 0.125f, 0.0f, tile.scores.data());
    benchmark::DoNotOptimize(tiles.back().out.data());
  }
  Report(state, cache, tokens, row_positions);
  state.counters["GFLOP/s"] = benchmark::Counter(static_cast<double>(row_positions) * 4 * kHeadDim *
                                                     static_cast<double>(state.iterations()) * 1e-9,
                                                 benchmark::Counter::kIsRate);
}

BENCHMARK(BM_AttentionReadKv)->Args({4096, 30})->MinTime(1.0);
BENCHMARK(BM_AttentionPrompt)->Args({512, 8})->Args({512, 3})->MinTime(1.0);
BENCHMARK(BM_AttentionDecode)
    ->Args({1024, 1, 1, kGroup, 0})
    ->Args({1024, 1, 0, kGroup, 0})
    ->Args({1024, 1, 2, kGroup, 0})
    ->Args({4096, 30, 1, kGroup, 0})
    ->Args({4096, 30, 0, kGroup, 0})
    ->Args({4096, 30, 2, kGroup, 0})
    ->Args({1024, 1, 1, 8, 0})
    ->Args({1024, 1, 0, 8, 0})
    ->Args({1024, 1, 2, 8, 0})
    ->Args({4096, 30, 1, 8, 0})
    ->Args({4096, 30, 0, 8, 0})
    ->Args({4096, 30, 2, 8, 0})
    ->Args({1024, 1, 1, kGroup, 1})
    ->Args({4096, 30, 1, kGroup, 1})
    ->Args({1024, 1, 2, kGroup, 1})
    ->Args({1024, 1, 1, 8, 1})
    ->Args({4096, 30, 1, 8, 1})
    ->Args({1024, 1, 2, 8, 1})
    ->MinTime(1.0);
BENCHMARK(BM_AttentionPrefillTile)->Args({4096, 1})->Args({4096, 2})->MinTime(1.0);

}  // namespace
}  // namespace ridge::kernels
