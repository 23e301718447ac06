#include "ridge/kv/paged_kv_cache.h"

#include <algorithm>
#include <cstring>

#include "ridge/base/error.h"
#include "ridge/gguf/dequantize.h"
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

uint64_t BlockHash(uint64_t parent_hash, std::span<const int32_t> tokens) {
  // FNV-1a over the parent key and the token ids, then a final avalanche.
  uint64_t h = 0xcbf29ce484222325ull ^ parent_hash;
  auto mix = [&h](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xffu;
      h *= 0x100000001b3ull;
    }
  };
  mix(parent_hash);
  for (int32_t t : tokens) mix(static_cast<uint32_t>(t));
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

PagedKvCache::PagedKvCache(const KvCacheShape& shape, int64_t n_blocks) : shape_(shape), n_blocks_(n_blocks) {
  CheckShape(shape);
  if (n_blocks < 1) Fail("the KV cache needs at least one block; the budget gives {}", n_blocks);
  head_bytes_ = RowBytes(shape.type, shape.head_dim);
  keys_by_dim_ = shape.type != GgmlType::kQ8_0;
  values_by_dim_ = kernels::ValuesByDimension(shape.type);
  elem_bytes_ = keys_by_dim_ ? head_bytes_ / shape.head_dim : 0;
  dim_stride_bytes_ = shape.block_tokens * elem_bytes_;
  head_block_bytes_ = shape.block_tokens * head_bytes_;
  block_bytes_per_layer_ = shape.n_kv_heads * head_block_bytes_;
  size_t pool_bytes = static_cast<size_t>(shape.n_layers * n_blocks * block_bytes_per_layer_);
  k_pool_ = HugePageBuffer::Allocate(pool_bytes, /*prefault=*/true, "the KV cache's keys");
  v_pool_ = HugePageBuffer::Allocate(pool_bytes, /*prefault=*/true, "the KV cache's values");
  blocks_.resize(static_cast<size_t>(n_blocks));
  free_list_.reserve(static_cast<size_t>(n_blocks));
  for (int64_t b = n_blocks - 1; b >= 0; --b) free_list_.push_back(static_cast<BlockId>(b));
}

BlockId PagedKvCache::TakeBlock() {
  BlockId b;
  if (!free_list_.empty()) {
    b = free_list_.back();
    free_list_.pop_back();
  } else {  // evict the least recently used cached block
    RIDGE_CHECK(!evictable_.empty());
    b = evictable_.begin()->second;
    evictable_.erase(evictable_.begin());
    BlockState& state = blocks_[static_cast<size_t>(b)];
    hash_index_.erase(state.hash);
    state.keyed = false;
    state.tokens.clear();
  }
  BlockState& state = blocks_[static_cast<size_t>(b)];
  RIDGE_CHECK(state.ref_count == 0);
  state.ref_count = 1;
  state.last_use = ++tick_;
  return b;
}

void PagedKvCache::Release(BlockId b) {
  BlockState& state = blocks_[static_cast<size_t>(b)];
  RIDGE_CHECK(state.ref_count > 0);
  if (--state.ref_count > 0) return;
  if (state.keyed) {
    state.last_use = ++tick_;
    evictable_.emplace(state.last_use, b);
  } else {
    free_list_.push_back(b);
  }
}

bool PagedKvCache::Reserve(SeqId seq, int64_t n_tokens) {
  RIDGE_CHECK(!borrowed_);  // a follower's cache allocates nothing itself
  auto it = seqs_.find(seq);
  int64_t have = it == seqs_.end() ? 0 : static_cast<int64_t>(it->second.blocks.size());
  int64_t need = BlocksFor(n_tokens) - have;
  if (need > free_blocks()) return false;
  Sequence& s = seqs_[seq];
  for (int64_t i = 0; i < need; ++i) s.blocks.push_back(TakeBlock());
  return true;
}

void PagedKvCache::SetStoredTokens(SeqId seq, int64_t n_tokens) {
  auto it = seqs_.find(seq);
  RIDGE_CHECK(it != seqs_.end());
  RIDGE_CHECK(n_tokens >= 0 && BlocksFor(n_tokens) <= static_cast<int64_t>(it->second.blocks.size()));
  it->second.stored_tokens = n_tokens;
}

std::optional<BlockId> PagedKvCache::FindCached(uint64_t hash, uint64_t parent_hash,
                                                std::span<const int32_t> tokens) const {
  auto it = hash_index_.find(hash);
  if (it == hash_index_.end()) return std::nullopt;
  const BlockState& state = blocks_[static_cast<size_t>(it->second)];
  if (state.parent_hash != parent_hash || !std::equal(tokens.begin(), tokens.end(), state.tokens.begin(), state.tokens.end()))
    return std::nullopt;  // a hash collision: treat as a miss
  return it->second;
}

void PagedKvCache::CommitTokens(SeqId seq, std::span<const int32_t> tokens, int64_t n_tokens) {
  SetStoredTokens(seq, n_tokens);
  RIDGE_CHECK(static_cast<int64_t>(tokens.size()) >= n_tokens);
  if (!prefix_caching_) return;
  Sequence& s = seqs_.at(seq);
  const int64_t bt = shape_.block_tokens;
  for (int64_t i = static_cast<int64_t>(s.block_hashes.size()); i < n_tokens / bt; ++i) {
    uint64_t parent = i == 0 ? 0 : s.block_hashes[static_cast<size_t>(i - 1)];
    std::span<const int32_t> block_tokens = tokens.subspan(static_cast<size_t>(i * bt), static_cast<size_t>(bt));
    uint64_t hash = BlockHash(parent, block_tokens);
    s.block_hashes.push_back(hash);
    BlockId b = s.blocks[static_cast<size_t>(i)];
    BlockState& state = blocks_[static_cast<size_t>(b)];
    if (state.keyed || hash_index_.count(hash)) continue;  // already known (shared, or another copy is)
    state.keyed = true;
    state.hash = hash;
    state.parent_hash = parent;
    state.tokens.assign(block_tokens.begin(), block_tokens.end());
    hash_index_[hash] = b;
  }
}

int64_t PagedKvCache::AttachPrefix(SeqId seq, std::span<const int32_t> prompt) {
  RIDGE_CHECK(!borrowed_);
  RIDGE_CHECK(!HasSequence(seq));
  if (!prefix_caching_) return 0;
  const int64_t bt = shape_.block_tokens;
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  const int64_t max_blocks = n_prompt > 0 ? (n_prompt - 1) / bt : 0;  // keep one token to compute
  std::vector<BlockId> found;
  std::vector<uint64_t> hashes;
  uint64_t parent = 0;
  for (int64_t i = 0; i < max_blocks; ++i) {
    ++prefix_lookup_blocks_;
    std::span<const int32_t> block_tokens = prompt.subspan(static_cast<size_t>(i * bt), static_cast<size_t>(bt));
    uint64_t hash = BlockHash(parent, block_tokens);
    std::optional<BlockId> b = FindCached(hash, parent, block_tokens);
    if (!b) break;
    found.push_back(*b);
    hashes.push_back(hash);
    parent = hash;
  }
  if (found.empty()) return 0;
  Sequence& s = seqs_[seq];
  for (BlockId b : found) {
    BlockState& state = blocks_[static_cast<size_t>(b)];
    if (state.ref_count == 0) evictable_.erase({state.last_use, b});
    ++state.ref_count;
    state.last_use = ++tick_;
    s.blocks.push_back(b);
  }
  s.block_hashes = std::move(hashes);
  s.stored_tokens = static_cast<int64_t>(found.size()) * bt;
  prefix_hit_blocks_ += static_cast<int64_t>(found.size());
  prefix_hit_tokens_ += s.stored_tokens;
  return s.stored_tokens;
}

int64_t PagedKvCache::StoredTokens(SeqId seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0 : it->second.stored_tokens;
}

void PagedKvCache::Truncate(SeqId seq, int64_t n_tokens) {
  Sequence& s = seqs_.at(seq);
  RIDGE_CHECK(n_tokens >= s.stored_tokens);
  while (static_cast<int64_t>(s.blocks.size()) > BlocksFor(n_tokens)) {
    Release(s.blocks.back());
    s.blocks.pop_back();
  }
}

void PagedKvCache::Free(SeqId seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  // Release the tail first so that, among blocks of equal age, a prefix's
  // first blocks (the most shareable) are evicted last.
  for (auto b = it->second.blocks.rbegin(); b != it->second.blocks.rend(); ++b) Release(*b);
  seqs_.erase(it);
}

std::span<const BlockId> PagedKvCache::BlockTable(SeqId seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? std::span<const BlockId>{} : std::span<const BlockId>(it->second.blocks);
}

void PagedKvCache::BorrowTable(SeqId seq, std::span<const BlockId> blocks) {
  RIDGE_CHECK(borrowed_ || seqs_.empty());  // never mixed with the cache's own sequences
  for (BlockId b : blocks)
    if (b < 0 || b >= n_blocks_) Fail("KV block {} of sequence {} is outside the pool of {} blocks", b, seq, n_blocks_);
  borrowed_ = true;
  seqs_[seq].blocks.assign(blocks.begin(), blocks.end());
}

void PagedKvCache::ClearBorrowedTables() {
  RIDGE_CHECK(borrowed_ || seqs_.empty());
  seqs_.clear();
  borrowed_ = false;
}

std::string PagedKvCache::CheckInvariants() const {
  std::vector<int32_t> holders(blocks_.size(), 0);
  std::vector<int> places(blocks_.size(), 0);
  for (const auto& [id, s] : seqs_)
    for (BlockId b : s.blocks) ++holders[static_cast<size_t>(b)];
  for (BlockId b : free_list_) ++places[static_cast<size_t>(b)];
  for (const auto& [tick, b] : evictable_) ++places[static_cast<size_t>(b)];
  for (size_t b = 0; b < blocks_.size(); ++b) {
    const BlockState& state = blocks_[b];
    if (holders[b] != state.ref_count)
      return fmt::format("block {}: reference count {} but {} sequences hold it", b, state.ref_count, holders[b]);
    int expected_places = state.ref_count > 0 ? 0 : 1;
    if (places[b] != expected_places)
      return fmt::format("block {} (refs {}) is on the free list / cache {} times", b, state.ref_count, places[b]);
    if (state.keyed && hash_index_.count(state.hash) == 0) return fmt::format("block {} keyed but not indexed", b);
  }
  for (const auto& [hash, b] : hash_index_)
    if (!blocks_[static_cast<size_t>(b)].keyed || blocks_[static_cast<size_t>(b)].hash != hash)
      return fmt::format("hash index points at block {} whose key differs", b);
  return {};
}

const PagedKvCache::Sequence& PagedKvCache::SeqOrDie(SeqId seq) const {
  auto it = seqs_.find(seq);
  RIDGE_CHECK(it != seqs_.end());
  return it->second;
}

BlockId PagedKvCache::BlockOf(SeqId seq, int64_t layer, int64_t position) const {
  const Sequence& s = SeqOrDie(seq);
  int64_t index = position / shape_.block_tokens;
  RIDGE_CHECK(position >= 0 && index < static_cast<int64_t>(s.blocks.size()));
  RIDGE_CHECK(layer >= 0 && layer < shape_.n_layers);
  return s.blocks[static_cast<size_t>(index)];
}

void PagedKvCache::StoreHeads(const float* x, bool by_dim, int64_t layer, BlockId block, int64_t slot,
                              uint8_t* pool) const {
  const int64_t hd = shape_.head_dim;
  if (!by_dim) {
    for (int64_t h = 0; h < shape_.n_kv_heads; ++h)
      kernels::StoreKv(x + h * hd, hd, shape_.type, pool + HeadOffset(layer, h, block) + SlotOffset(false, 0, slot));
    return;
  }
  // Each head converted whole, then its elements spread over the dimension rows.
  thread_local std::vector<uint8_t> head;
  head.resize(static_cast<size_t>(head_bytes_));
  const auto e = static_cast<size_t>(elem_bytes_);
  for (int64_t h = 0; h < shape_.n_kv_heads; ++h) {
    kernels::StoreKv(x + h * hd, hd, shape_.type, head.data());
    uint8_t* part = pool + HeadOffset(layer, h, block);
    for (int64_t c = 0; c < hd; ++c) std::memcpy(part + SlotOffset(true, c, slot), head.data() + c * elem_bytes_, e);
  }
}

void PagedKvCache::StoreKv(SeqId seq, int64_t layer, int64_t position, const float* k, const float* v) {
  const int64_t slot = position % shape_.block_tokens;
  const BlockId block = BlockOf(seq, layer, position);
  StoreHeads(k, keys_by_dim_, layer, block, slot, k_pool_.data());
  StoreHeads(v, values_by_dim_, layer, block, slot, v_pool_.data());
}

void PagedKvCache::LoadKv(bool value, SeqId seq, int64_t layer, int64_t position, float* out) const {
  const int64_t hd = shape_.head_dim, slot = position % shape_.block_tokens;
  const BlockId block = BlockOf(seq, layer, position);
  const uint8_t* pool = (value ? v_pool_ : k_pool_).data();
  std::vector<uint8_t> head(static_cast<size_t>(head_bytes_));
  const bool by_dim = value ? values_by_dim_ : keys_by_dim_;
  for (int64_t h = 0; h < shape_.n_kv_heads; ++h) {
    const uint8_t* part = pool + HeadOffset(layer, h, block);
    if (!by_dim) {
      std::memcpy(head.data(), part + SlotOffset(false, 0, slot), head.size());
    } else {
      const auto e = static_cast<size_t>(elem_bytes_);
      for (int64_t c = 0; c < hd; ++c) std::memcpy(head.data() + c * elem_bytes_, part + SlotOffset(true, c, slot), e);
    }
    DequantizeRow(shape_.type, head.data(), out + h * hd, hd);
  }
}

void PagedKvCache::HeadViews(SeqId seq, int64_t layer, int64_t kv_head, std::vector<const uint8_t*>& k_blocks,
                             std::vector<const uint8_t*>& v_blocks, kernels::KvHeadView& k,
                             kernels::KvHeadView& v) const {
  const Sequence& s = SeqOrDie(seq);
  k_blocks.clear();
  v_blocks.clear();
  for (BlockId b : s.blocks) {
    k_blocks.push_back(k_pool_.data() + HeadOffset(layer, kv_head, b));
    v_blocks.push_back(v_pool_.data() + HeadOffset(layer, kv_head, b));
  }
  struct Side {
    kernels::KvHeadView* view;
    const std::vector<const uint8_t*>* blocks;
    bool by_dim;
  };
  for (const Side& side : {Side{&k, &k_blocks, keys_by_dim_}, Side{&v, &v_blocks, values_by_dim_}}) {
    kernels::KvHeadView& view = *side.view;
    view.type = shape_.type;
    view.blocks = side.blocks->data();
    view.block_tokens = shape_.block_tokens;
    view.token_stride_bytes = side.by_dim ? elem_bytes_ : head_bytes_;
    view.dim_stride_bytes = side.by_dim ? dim_stride_bytes_ : 0;
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
  a.blocks_cached = static_cast<int64_t>(evictable_.size());
  a.prefix_hit_blocks = prefix_hit_blocks_;
  a.prefix_hit_tokens = prefix_hit_tokens_;
  a.prefix_lookup_blocks = prefix_lookup_blocks_;
  return a;
}

int64_t PagedKvCache::SequenceBlocks(SeqId seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0 : static_cast<int64_t>(it->second.blocks.size());
}

std::vector<KvBlockRun> PagedKvCache::BlockMap() const {
  std::vector<int64_t> owner(static_cast<size_t>(n_blocks_), KvBlockRun::kFree);
  for (const auto& [last_use, block] : evictable_) owner[static_cast<size_t>(block)] = KvBlockRun::kCached;
  for (const auto& [id, s] : seqs_)
    for (BlockId b : s.blocks)
      owner[static_cast<size_t>(b)] = blocks_[static_cast<size_t>(b)].ref_count > 1 ? KvBlockRun::kShared : id;
  std::vector<KvBlockRun> runs;
  for (int64_t o : owner) {
    if (runs.empty() || runs.back().owner != o) runs.push_back({o, 0});
    ++runs.back().count;
  }
  return runs;
}

}  // namespace ridge
