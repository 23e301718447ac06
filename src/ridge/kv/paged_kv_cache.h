#pragma once
// The paged KV cache: one pool of fixed-size blocks per layer (K and V), and a
// block table per sequence mapping its positions to blocks. Every byte is
// accounted for: the pool is allocated once, up front, from a budget, and
// blocks move between the free list and sequences.
//
// A pool holds each (layer, KV head) apart: [n_layers, n_kv_heads, n_blocks,
// one head's part of a block], so that a head's blocks, which attention reads
// one head at a time, are one stretch of memory wherever the block ids are
// consecutive (a sequence's usually are). Interleaving the heads inside each
// block made every head's pass read 1 line in n_kv_heads: decode at depth
// 4096 ran 8-10 % slower a step (docs/benchmarks.md, 2026-12-06, twelfth).
// One head's part of a block:
//   K: [head_dim, block_tokens] for F32, F16 and BF16 ("by dimension": one
//      vector load reads a dimension of consecutive positions, so
//      attention's q·k needs no sum across a vector's lanes);
//      [block_tokens, head_dim] ("token-major") for Q8_0, whose scales
//      belong to 32 elements of one position
//   V: by dimension as K where kernels::ValuesByDimension says the kernel
//      target in use when the cache is made reads it faster (each converted
//      value vector then serves every query row with one FMA), else
//      token-major
// so position p of a sequence lives in block table[p / block_tokens], slot
// p % block_tokens.
//
// Prefix caching: a full block is keyed by a hash of its tokens and of every
// token before it. A new sequence whose prompt starts with cached blocks
// shares them (reference counts) instead of recomputing them; only full blocks
// are ever shared, so writes never touch a shared block. A block nobody
// references but whose key is known stays cached until the pool needs it
// (least recently used first).
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ridge/base/huge_page_buffer.h"
#include "ridge/gguf/ggml_type.h"
#include "ridge/kernels/ops.h"

namespace ridge {

using SeqId = int64_t;
using BlockId = int32_t;

struct KvCacheShape {
  int64_t n_layers = 0;
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
  GgmlType type = GgmlType::kF16;  // F32, F16, BF16 or Q8_0
  int64_t block_tokens = 16;
};

struct KvAccounting {
  int64_t blocks_total = 0;
  int64_t blocks_used = 0;
  int64_t blocks_free = 0;
  int64_t tokens_stored = 0;
  int64_t token_slots_allocated = 0;  // blocks_used × block_tokens
  int64_t bytes_total = 0;            // the whole pool, K and V, every layer
  int64_t bytes_used = 0;             // blocks in use
  double bytes_per_token = 0;         // the reference formula, for this element type
  double utilization = 0;             // tokens_stored ÷ token_slots_allocated (1 when empty)
  int64_t sequences = 0;
  int64_t blocks_cached = 0;          // unreferenced blocks kept for prefix reuse (counted in blocks_free)
  int64_t prefix_hit_blocks = 0;      // blocks reused by AttachPrefix since creation
  int64_t prefix_hit_tokens = 0;
  int64_t prefix_lookup_blocks = 0;   // full prompt blocks AttachPrefix looked up
};

// A run of consecutive blocks (by block id) in the same state, for maps of the
// pool: owner >= 0 is the one sequence holding them; the negative codes below.
struct KvBlockRun {
  static constexpr int64_t kFree = -1;    // on the free list, holding nothing
  static constexpr int64_t kCached = -2;  // unreferenced, kept for prefix reuse (reclaimable)
  static constexpr int64_t kShared = -3;  // held by several sequences (a shared prompt prefix)
  int64_t owner = kFree;
  int64_t count = 0;
};

class PagedKvCache {
 public:
  // Allocates n_blocks blocks for every layer. Throws ridge::Error for an
  // unsupported type, a head_dim the type cannot store, or n_blocks < 1.
  PagedKvCache(const KvCacheShape& shape, int64_t n_blocks);

  // The number of blocks a budget of `bytes` holds (at least 0).
  static int64_t BlocksForBudget(const KvCacheShape& shape, int64_t bytes);
  // Bytes of one block across all layers, K and V.
  static int64_t BlockBytes(const KvCacheShape& shape);

  const KvCacheShape& shape() const { return shape_; }
  int64_t n_blocks() const { return n_blocks_; }
  // Blocks that Reserve can hand out: never used, or cached but unreferenced.
  int64_t free_blocks() const { return static_cast<int64_t>(free_list_.size() + evictable_.size()); }
  // Blocks needed to hold n_tokens positions.
  int64_t BlocksFor(int64_t n_tokens) const { return (n_tokens + shape_.block_tokens - 1) / shape_.block_tokens; }

  // Makes room for positions [0, n_tokens) of `seq`, creating the sequence if
  // new. Returns false, changing nothing, if the free blocks do not suffice.
  bool Reserve(SeqId seq, int64_t n_tokens);
  // Records that positions [0, n_tokens) of `seq` now hold K and V.
  void SetStoredTokens(SeqId seq, int64_t n_tokens);
  // As SetStoredTokens, and (prefix caching on) registers the blocks this
  // made full under the hash of `tokens` (the sequence's tokens so far, at
  // least n_tokens of them) so later sequences can share them.
  void CommitTokens(SeqId seq, std::span<const int32_t> tokens, int64_t n_tokens);
  // For a new sequence: shares the cached blocks that hold a prefix of
  // `prompt`, leaving at least one prompt token to compute (its logits are
  // needed). Returns the number of positions now stored (a multiple of
  // block_tokens, possibly 0). No-op returning 0 when prefix caching is off.
  int64_t AttachPrefix(SeqId seq, std::span<const int32_t> prompt);
  void set_prefix_caching(bool on) { prefix_caching_ = on; }
  bool prefix_caching() const { return prefix_caching_; }
  // Rolls back positions from n_tokens on (a rejected speculative draft's):
  // blocks past those holding [0, n_tokens) go back to the pool. n_tokens is
  // at least the stored tokens, so no committed (keyed) block is touched.
  void Truncate(SeqId seq, int64_t n_tokens);
  int64_t StoredTokens(SeqId seq) const;
  // Blocks in the sequence's table (shared ones included); 0 for an unknown sequence.
  int64_t SequenceBlocks(SeqId seq) const;
  bool HasSequence(SeqId seq) const { return seqs_.count(seq) != 0; }
  // Drops `seq`'s references to its blocks: each block nobody else holds goes
  // back to the pool (or to the prefix cache if it has a key). No-op for
  // unknown sequences.
  void Free(SeqId seq);
  // Empty when every block is in exactly one place (free list, cache, or held
  // by the sequences whose number is its reference count) and the hash index
  // agrees; otherwise a description of the first inconsistency. For tests.
  std::string CheckInvariants() const;
  // Reference count of a block (for tests).
  int32_t RefCount(BlockId block) const { return blocks_[static_cast<size_t>(block)].ref_count; }

  // Stores K and V of (seq, layer, position), k and v: [n_kv_heads, head_dim]
  // floats, converted to the cache's type (kernels::StoreKv's bits).
  void StoreKv(SeqId seq, int64_t layer, int64_t position, const float* k, const float* v);
  // K (value false) or V of (seq, layer, position) back as [n_kv_heads, head_dim] floats.
  void LoadKv(bool value, SeqId seq, int64_t layer, int64_t position, float* out) const;
  // Whether K / V blocks are laid out by dimension (see the top of this file).
  bool keys_by_dim() const { return keys_by_dim_; }
  bool values_by_dim() const { return values_by_dim_; }
  // Views of one KV head of (seq, layer) for attention. `block_ptrs` receives the
  // block base pointers and must outlive the views.
  void HeadViews(SeqId seq, int64_t layer, int64_t kv_head, std::vector<const uint8_t*>& k_blocks,
                 std::vector<const uint8_t*>& v_blocks, kernels::KvHeadView& k, kernels::KvHeadView& v) const;

  // Tensor parallelism (model/tensor_parallel.h): every rank's cache has the
  // same number of blocks, each holding that rank's KV heads, and rank 0's
  // allocator alone decides which block holds what. Rank 0 sends each step's
  // tables (BlockTable); a follower borrows them for the step (BorrowTable,
  // then ClearBorrowedTables), so its own free list and prefix index are never
  // used and it holds no sequence between steps.
  // The blocks of `seq` in table order (empty for an unknown sequence).
  std::span<const BlockId> BlockTable(SeqId seq) const;
  // Makes `blocks` the table of `seq` until ClearBorrowedTables. The cache
  // must hold no sequence of its own; throws ridge::Error for a block id
  // outside the pool.
  void BorrowTable(SeqId seq, std::span<const BlockId> blocks);
  void ClearBorrowedTables();

  KvAccounting Accounting() const;
  // Every block's state, in block id order, run-length encoded. O(n_blocks).
  std::vector<KvBlockRun> BlockMap() const;

 private:
  struct Sequence {
    std::vector<BlockId> blocks;
    std::vector<uint64_t> block_hashes;  // keys of its full blocks, in order
    int64_t stored_tokens = 0;
  };
  struct BlockState {
    int32_t ref_count = 0;
    bool keyed = false;       // in hash_index_ under `hash`
    uint64_t hash = 0;
    uint64_t parent_hash = 0;
    std::vector<int32_t> tokens;  // the block's tokens, to rule out hash collisions
    uint64_t last_use = 0;
  };
  const Sequence& SeqOrDie(SeqId seq) const;
  // Bytes from a pool's start to the part of block `block` that holds head
  // `head` of `layer` (the same in the K and the V pool).
  int64_t HeadOffset(int64_t layer, int64_t head, BlockId block) const {
    return ((layer * shape_.n_kv_heads + head) * n_blocks_ + block) * head_block_bytes_;
  }
  // The block holding (seq, layer, position); checks all three.
  BlockId BlockOf(SeqId seq, int64_t layer, int64_t position) const;
  // Bytes from a head's part of a block to its slot (token-major) or to
  // element c of its slot (by dimension).
  int64_t SlotOffset(bool by_dim, int64_t c, int64_t slot) const {
    return by_dim ? c * dim_stride_bytes_ + slot * elem_bytes_ : slot * head_bytes_;
  }
  // Stores the n_kv_heads heads of x ([n_kv_heads, head_dim] floats) at `slot`
  // of block `block` of `layer` in `pool`, laid out by dimension or not.
  void StoreHeads(const float* x, bool by_dim, int64_t layer, BlockId block, int64_t slot, uint8_t* pool) const;
  BlockId TakeBlock();
  void Release(BlockId block);
  std::optional<BlockId> FindCached(uint64_t hash, uint64_t parent_hash, std::span<const int32_t> tokens) const;

  KvCacheShape shape_;
  int64_t n_blocks_ = 0;
  int64_t head_bytes_ = 0;
  int64_t block_bytes_per_layer_ = 0;  // K or V: n_kv_heads × head_block_bytes_
  bool keys_by_dim_ = false;
  bool values_by_dim_ = false;
  int64_t elem_bytes_ = 0;        // by dimension: bytes of one element
  int64_t dim_stride_bytes_ = 0;  // by dimension: one dimension's row, block_tokens elements
  int64_t head_block_bytes_ = 0;  // one head's part of a block: block_tokens × head_bytes
  // [n_layers, n_kv_heads, n_blocks, one head's part of a block] each, in 2 MiB
  // pages (attention streams them every step, like the weights), faulted in
  // when the cache is made: the budget is really there, and no request stalls
  // on a page fault later. (In this VM first touch runs at ~0.5 GB/s: a
  // 2 GiB pool takes ~5 s of `ridge serve`'s start-up, as memset did.)
  HugePageBuffer k_pool_;
  HugePageBuffer v_pool_;
  std::vector<BlockId> free_list_;
  std::set<std::pair<uint64_t, BlockId>> evictable_;  // (last use, block): keyed, unreferenced
  std::vector<BlockState> blocks_;
  std::unordered_map<uint64_t, BlockId> hash_index_;
  std::map<SeqId, Sequence> seqs_;
  bool borrowed_ = false;  // seqs_ holds borrowed tables (no reference counts)
  bool prefix_caching_ = true;
  uint64_t tick_ = 0;
  int64_t prefix_hit_blocks_ = 0;
  int64_t prefix_hit_tokens_ = 0;
  int64_t prefix_lookup_blocks_ = 0;
};

// The key of a full block: its tokens chained to the key of the block before (0 for the first).
uint64_t BlockHash(uint64_t parent_hash, std::span<const int32_t> tokens);

// Bytes per element of a KV type as the reference formula counts it
// (f32 4, f16/bf16 2, q8_0 34/32 including its block scales).
double KvBytesPerElement(GgmlType type);

}  // namespace ridge
