#include "ridge/model/model_partition.h"

#include <cstring>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/gguf/ggml_type.h"

namespace ridge {
namespace {

constexpr int64_t kSliceAlignBytes = 64;  // each copied matrix starts on a cache line

// One matrix of `w` to copy: rows [first, first + count) (by_columns false)
// or those columns of every row (true); count 0 with whole: the whole matrix.
struct Slice {
  kernels::WeightMatrix* m;
  bool by_columns;
  IndexRange part;
};

int64_t SliceRowBytes(const Slice& s) { return s.by_columns ? RowBytes(s.m->type, s.part.count) : s.m->row_bytes; }
int64_t SliceRows(const Slice& s) { return s.by_columns ? s.m->n_rows : s.part.count; }

void SliceVector(std::vector<float>& v, IndexRange part) {
  if (v.empty()) return;
  v = std::vector<float>(v.begin() + part.first, v.begin() + part.end());
}

}  // namespace

IndexRange PartOf(int64_t total, int rank, int n_ranks) {
  const int64_t first = total * rank / n_ranks;
  return {first, total * (rank + 1) / n_ranks - first};
}

ModelConfig LocalConfig(const ModelConfig& c, const ModelPartition& p) {
  ModelConfig local = c;
  if (p.kind != ModelPartition::Kind::kTensor || p.n_ranks <= 1) return local;
  local.n_heads = c.n_heads / p.n_ranks;
  local.n_kv_heads = c.n_kv_heads / p.n_ranks;
  local.n_ff = c.n_ff / p.n_ranks;
  local.n_vocab = VocabOf(c, p).count;
  return local;
}

IndexRange LayersOf(const ModelConfig& c, const ModelPartition& p) {
  if (p.kind != ModelPartition::Kind::kPipeline) return {0, c.n_layers};
  return PartOf(c.n_layers, p.rank, p.n_ranks);
}

IndexRange VocabOf(const ModelConfig& c, const ModelPartition& p) {
  if (p.kind != ModelPartition::Kind::kTensor) return {0, c.n_vocab};
  return PartOf(c.n_vocab, p.rank, p.n_ranks);
}

void CheckPartition(const ModelConfig& c, const ModelWeights& w, const ModelPartition& p) {
  const int n = p.n_ranks;
  if (!p.split()) return;
  if (c.is_moe())
    Fail("--tp/--pp: splitting a mixture-of-experts model ({}) across ranks is not supported", c.architecture);
  if (p.kind == ModelPartition::Kind::kPipeline) {
    if (c.n_layers < n) Fail("--pp {}: the model has only {} layers, fewer than the ranks", n, c.n_layers);
    return;
  }
  if (c.n_heads % n != 0)
    Fail("--tp {}: the model's {} attention heads do not split into {} equal parts", n, c.n_heads, n);
  if (c.n_kv_heads % n != 0)
    Fail("--tp {}: the model's {} KV heads do not split into {} equal parts (each rank must hold whole KV heads)", n,
         c.n_kv_heads, n);
  if (c.n_ff % n != 0) Fail("--tp {}: the FFN's {} rows do not split into {} equal parts", n, c.n_ff, n);
  // wo and down are split by input columns: a rank's columns must start and end on the type's blocks.
  for (size_t l = 0; l < w.layers.size(); ++l) {
    const LayerWeights& lw = w.layers[l];
    for (const kernels::WeightMatrix* m : {&lw.wo, &lw.w_down}) {
      const int64_t block = TraitsOf(m->type).block_elems, cols = m->n_cols / n;
      if (cols % block != 0)
        Fail(
            "--tp {}: layer {}'s {} has {} input columns per rank, not a multiple of {}'s block of {} elements; "
            "use fewer ranks or a type with smaller blocks",
            n, l, m == &lw.wo ? "attn_output" : "ffn_down", cols, GgmlTypeName(m->type), block);
    }
  }
}

void PartitionWeights(ModelWeights& w, const ModelConfig& c, const ModelPartition& p) {
  if (!p.split()) return;
  CheckPartition(c, w, p);
  std::vector<Slice> slices;
  const IndexRange layers = LayersOf(c, p);
  auto whole = [](kernels::WeightMatrix& m) { return Slice{&m, false, {0, m.n_rows}}; };
  for (int64_t l = 0; l < c.n_layers; ++l) {
    LayerWeights& lw = w.layers[static_cast<size_t>(l)];
    if (l < layers.first || l >= layers.end()) {
      lw = LayerWeights{};  // another rank's layer
      continue;
    }
    if (p.kind == ModelPartition::Kind::kPipeline) {
      for (kernels::WeightMatrix* m : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.w_gate, &lw.w_up, &lw.w_down})
        slices.push_back(whole(*m));
      continue;
    }
    const IndexRange heads = PartOf(c.n_heads, p.rank, p.n_ranks);
    const IndexRange kv_heads = PartOf(c.n_kv_heads, p.rank, p.n_ranks);
    const IndexRange q_rows{heads.first * c.head_dim, heads.count * c.head_dim};
    const IndexRange kv_rows{kv_heads.first * c.head_dim, kv_heads.count * c.head_dim};
    const IndexRange ff = PartOf(c.n_ff, p.rank, p.n_ranks);
    slices.push_back({&lw.wq, false, q_rows});
    slices.push_back({&lw.wk, false, kv_rows});
    slices.push_back({&lw.wv, false, kv_rows});
    slices.push_back({&lw.wo, true, q_rows});  // [n_embd, q_dim]: its heads' input columns
    slices.push_back({&lw.w_gate, false, ff});
    slices.push_back({&lw.w_up, false, ff});
    slices.push_back({&lw.w_down, true, ff});  // [n_embd, n_ff]
    SliceVector(lw.q_bias, q_rows);
    SliceVector(lw.k_bias, kv_rows);
    SliceVector(lw.v_bias, kv_rows);
    SliceVector(lw.attn_sinks, heads);
  }
  const bool holds_output = p.kind == ModelPartition::Kind::kTensor || p.rank == p.n_ranks - 1;
  if (holds_output) {
    slices.push_back({&w.output, false, VocabOf(c, p)});
  } else {
    w.output = {};
  }

  int64_t total = 0;
  for (const Slice& s : slices)
    total += (SliceRows(s) * SliceRowBytes(s) + kSliceAlignBytes - 1) / kSliceAlignBytes * kSliceAlignBytes;
  w.shard_memory =
      HugePageBuffer::Allocate(static_cast<size_t>(std::max<int64_t>(total, 1)), false, "the model's shard");
  uint8_t* dst = w.shard_memory.data();
  w.weight_bytes = 0;
  for (const Slice& s : slices) {
    kernels::WeightMatrix& m = *s.m;
    const int64_t rows = SliceRows(s), row_bytes = SliceRowBytes(s);
    if (s.by_columns) {
      const int64_t offset = RowBytes(m.type, s.part.first);
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(dst + r * row_bytes, m.data + r * m.row_bytes + offset, static_cast<size_t>(row_bytes));
      m.n_cols = s.part.count;
    } else {
      std::memcpy(dst, m.data + s.part.first * m.row_bytes, static_cast<size_t>(rows * row_bytes));
      m.n_rows = rows;
    }
    m.data = dst;
    m.row_bytes = row_bytes;
    dst += (rows * row_bytes + kSliceAlignBytes - 1) / kSliceAlignBytes * kSliceAlignBytes;
    w.weight_bytes += rows * row_bytes;
  }
  w.shard_memory.MakeReadOnly();
}

}  // namespace ridge
