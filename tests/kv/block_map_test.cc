// PagedKvCache::BlockMap: every block's state, run-length encoded, as the
// live dashboard draws it.
#include <gtest/gtest.h>

#include <vector>

#include "ridge/kv/paged_kv_cache.h"

namespace ridge {
namespace {

KvCacheShape Shape() {
  KvCacheShape s;
  s.n_layers = 1;
  s.n_kv_heads = 1;
  s.head_dim = 4;
  s.type = GgmlType::kF32;
  s.block_tokens = 2;
  return s;
}

int64_t Count(const std::vector<KvBlockRun>& map, int64_t owner) {
  int64_t n = 0;
  for (const KvBlockRun& r : map) n += r.owner == owner ? r.count : 0;
  return n;
}

TEST(KvBlockMap, OwnersSharedCachedAndFreeAddUpToThePool) {
  PagedKvCache cache(Shape(), 8);
  EXPECT_EQ(cache.BlockMap().size(), 1u);
  EXPECT_EQ(Count(cache.BlockMap(), KvBlockRun::kFree), 8);

  const std::vector<int32_t> prompt = {5, 6, 7, 8, 9};  // two full blocks and one token
  ASSERT_TRUE(cache.Reserve(1, 5));
  cache.CommitTokens(1, prompt, 5);
  EXPECT_EQ(cache.SequenceBlocks(1), 3);
  // A second sequence with the same prompt shares the two full blocks.
  EXPECT_EQ(cache.AttachPrefix(2, prompt), 4);
  ASSERT_TRUE(cache.Reserve(2, 5));
  std::vector<KvBlockRun> map = cache.BlockMap();
  EXPECT_EQ(Count(map, KvBlockRun::kShared), 2);
  EXPECT_EQ(Count(map, 1), 1);
  EXPECT_EQ(Count(map, 2), 1);
  EXPECT_EQ(Count(map, KvBlockRun::kFree), 4);
  int64_t total = 0;
  for (const KvBlockRun& r : map) {
    EXPECT_GT(r.count, 0);
    total += r.count;
  }
  EXPECT_EQ(total, 8);
  for (size_t i = 1; i < map.size(); ++i) EXPECT_NE(map[i].owner, map[i - 1].owner) << "runs are maximal";

  // Both gone: the keyed blocks stay cached for reuse, the rest are free.
  cache.Free(1);
  cache.Free(2);
  map = cache.BlockMap();
  EXPECT_EQ(Count(map, KvBlockRun::kCached), 2);
  EXPECT_EQ(Count(map, KvBlockRun::kFree), 6);
  EXPECT_EQ(cache.SequenceBlocks(1), 0);
  EXPECT_EQ(cache.Accounting().blocks_cached, 2);
}

}  // namespace
}  // namespace ridge
