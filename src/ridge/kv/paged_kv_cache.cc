#include "ridge/kv/paged_kv_cache.h"

#include "ridge/base/error.h"
#include "ridge/kv/kv_formula.h"

namespace ridge {

double KvBytesPerElement(GgmlType type) {
  const GgmlTypeTraits& t = TraitsOf(type);
  return static_cast<double>(t.block_bytes) / static_cast<double>(t.block_elems);
}

namespace {
void CheckShape(const KvCacheShape& shape) {
  if (shape.type != GgmlType::kF32 && shape.type != GgmlType::kF16 && shape.type != GgmlType::kBF16 &&
      shape.type != GgmlType::kQ8_0)
    Fail("KV cache type {} is not supported (use f32, f16, bf16 or q8_0)", GgmlTypeName(shape.type));
  if (shape.head_dim % TraitsOf(shape.type).block_elems != 0)
    Fail("KV cache type {} needs a head dimension that is a multiple of {}, the model has {}",
         GgmlTypeName(shape.type), TraitsOf(shape.type).block_elems, shape.head_dim);
  if (shape.block_tokens < 1) Fail("KV block size must be at least 1 token, got {}", shape.block_tokens);
  if (shape.n_layers < 1 || shape.n_kv_heads < 1 || shape.head_dim < 1) Fail("KV cache shape has a zero dimension");
}
}  // namespace

int64_t PagedKvCache::BlockBytes(const KvCacheShape& shape) {
  CheckShape(shape);
  return 2 * shape.n_layers * shape.block_tokens * shape.n_kv_heads * RowBytes(shape.type, shape.head_dim);
}

int64_t PagedKvCache::BlocksForBudget(const KvCacheShape& shape, int64_t bytes) {
  return bytes <= 0 ? 0 : bytes / BlockBytes(shape);
}

PagedKvCache::PagedKvCache(const KvCacheShape& shape, int64_t n_blocks) : shape_(shape), n_blocks_(n_blocks) {
  CheckShape(shape);
  if (n_blocks < 1) Fail("the KV cache needs at least one block; the budget gives {}", n_blocks);
  head_bytes_ = RowBytes(shape.type, shape.head_dim);
  token_bytes_ = shape.n_kv_heads * head_bytes_;
  block_bytes_per_layer_ = shape.block_tokens * token_bytes_;
  size_t pool_bytes = static_cast<size_t>(shape.n_layers * n_blocks * block_bytes_per_layer_);
  k_pool_.assign(pool_bytes, 0);
  v_pool_.assign(pool_bytes, 0);
  free_list_.reserve(static_cast<size_t>(n_blocks));
  for (int64_t b = n_blocks - 1; b >= 0; --b) free_list_.push_back(static_cast<BlockId>(b));
}

bool PagedKvCache::Reserve(SeqId seq, int64_t n_tokens) {
  auto it = seqs_.find(seq);
  int64_t have = it == seqs_.end() ? 0 : static_cast<int64_t>(it->second.blocks.size());
  int64_t need = BlocksFor(n_tokens) - have;
  if (need > free_blocks()) return false;
  Sequence& s = seqs_[seq];
  for (int64_t i = 0; i < need; ++i) {
    s.blocks.push_back(free_list_.back());
    free_list_.pop_back();
  }
  return true;
}

void PagedKvCache::SetStoredTokens(SeqId seq, int64_t n_tokens) {
  auto it = seqs_.find(seq);
  RIDGE_CHECK(it != seqs_.end());
  RIDGE_CHECK(n_tokens >= 0 && BlocksFor(n_tokens) <= static_cast<int64_t>(it->second.blocks.size()));
  it->second.stored_tokens = n_tokens;
}

int64_t PagedKvCache::StoredTokens(SeqId seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0 : it->second.stored_tokens;
}

void PagedKvCache::Free(SeqId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  for (BlockId b : it->second.blocks) free_list_.push_back(b);
  seqs_.erase(it);
}

const PagedKvCache::Sequence& PagedKvCache::SeqOrDie(SeqId seq) const {
  auto it = seqs_.find(seq);
  RIDGE_CHECK(it != seqs_.end());
  return it->second;
}

uint8_t* PagedKvCache::Slot(bool value, SeqId seq, int64_t layer, int64_t position) {
  const Sequence& s = SeqOrDie(seq);
  int64_t index = position / shape_.block_tokens;
  RIDGE_CHECK(position >= 0 && index < static_cast<int64_t>(s.blocks.size()));
  RIDGE_CHECK(layer >= 0 && layer < shape_.n_layers);
  std::vector<uint8_t>& pool = value ? v_pool_ : k_pool_;
  int64_t block_offset = (layer * n_blocks_ + s.blocks[static_cast<size_t>(index)]) * block_bytes_per_layer_;
  return pool.data() + block_offset + (position % shape_.block_tokens) * token_bytes_;
}

uint8_t* PagedKvCache::KSlot(SeqId seq, int64_t layer, int64_t position) { return Slot(false, seq, layer, position); }
uint8_t* PagedKvCache::VSlot(SeqId seq, int64_t layer, int64_t position) { return Slot(true, seq, layer, position); }

void PagedKvCache::HeadViews(SeqId seq, int64_t layer, int64_t kv_head, std::vector<const uint8_t*>& k_blocks,
                             std::vector<const uint8_t*>& v_blocks, kernels::KvHeadView& k,
                             kernels::KvHeadView& v) const {
  const Sequence& s = SeqOrDie(seq);
  k_blocks.clear();
  v_blocks.clear();
  for (BlockId b : s.blocks) {
    int64_t offset = (layer * n_blocks_ + b) * block_bytes_per_layer_;
    k_blocks.push_back(k_pool_.data() + offset);
    v_blocks.push_back(v_pool_.data() + offset);
  }
  for (auto [view, blocks] : {std::pair{&k, &k_blocks}, std::pair{&v, &v_blocks}}) {
    view->type = shape_.type;
    view->blocks = blocks->data();
    view->block_tokens = shape_.block_tokens;
    view->token_stride_bytes = token_bytes_;
    view->head_offset_bytes = kv_head * head_bytes_;
  }
}

KvAccounting PagedKvCache::Accounting() const {
  KvAccounting a;
  a.blocks_total = n_blocks_;
  a.blocks_free = free_blocks();
  a.blocks_used = n_blocks_ - a.blocks_free;
  for (const auto& [id, s] : seqs_) a.tokens_stored += s.stored_tokens;
  a.token_slots_allocated = a.blocks_used * shape_.block_tokens;
  int64_t block_bytes = 2 * shape_.n_layers * block_bytes_per_layer_;
  a.bytes_total = n_blocks_ * block_bytes;
  a.bytes_used = a.blocks_used * block_bytes;
  a.bytes_per_token = KvBytesPerToken(shape_.n_layers, shape_.n_kv_heads, shape_.head_dim, KvBytesPerElement(shape_.type));
  a.utilization = a.token_slots_allocated == 0 ? 1.0
                                               : static_cast<double>(a.tokens_stored) / static_cast<double>(a.token_slots_allocated);
  a.sequences = static_cast<int64_t>(seqs_.size());
  return a;
}

}  // namespace ridge
