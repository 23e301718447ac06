// The step rank 0 shares with its followers survives encoding, block tables
// included, and words that are not a whole step are refused, not read past.
#include <gtest/gtest.h>

#include <vector>

#include "ridge/base/error.h"
#include "ridge/mpi/mpi_link.h"

namespace ridge {
namespace {

TEST(StepMessage, RoundTripsTheBatchAndTheTablesOfItsSequences) {
  PagedKvCache cache({2, 1, 8, GgmlType::kF16, 4}, 10);
  ASSERT_TRUE(cache.Reserve(7, 9));  // 3 blocks
  ASSERT_TRUE(cache.Reserve(3, 2));  // 1 block
  Batch batch;
  batch.Add(11, 8, 7, true);
  batch.Add(12, 0, 3, false);
  batch.Add(13, 1, 3, true);
  const std::vector<int64_t> words = mpi::EncodeStep(batch, cache);
  const mpi::StepMessage m = mpi::DecodeStep(words);
  EXPECT_EQ(m.batch.tokens, batch.tokens);
  EXPECT_EQ(m.batch.positions, batch.positions);
  EXPECT_EQ(m.batch.seq_ids, batch.seq_ids);
  EXPECT_EQ(m.batch.want_logits, batch.want_logits);
  EXPECT_EQ(m.kv_type, GgmlType::kF16);
  EXPECT_EQ(m.kv_block_tokens, 4);
  EXPECT_EQ(m.kv_blocks, 10);
  ASSERT_EQ(m.tables.size(), 2u);  // one per sequence, in id order
  EXPECT_EQ(m.tables[0].first, 3);
  EXPECT_EQ(m.tables[1].first, 7);
  const auto table7 = cache.BlockTable(7), table3 = cache.BlockTable(3);
  EXPECT_EQ(m.tables[1].second, std::vector<BlockId>(table7.begin(), table7.end()));
  EXPECT_EQ(m.tables[0].second, std::vector<BlockId>(table3.begin(), table3.end()));

  // A follower's cache borrows the tables: the same slots as rank 0's, nothing held afterwards.
  PagedKvCache follower({2, 1, 8, GgmlType::kF16, 4}, 10);
  for (const auto& [seq, blocks] : m.tables) follower.BorrowTable(seq, blocks);
  std::vector<const uint8_t*> k_blocks, v_blocks, own_k_blocks, own_v_blocks;
  kernels::KvHeadView k, v;
  follower.HeadViews(7, 1, 0, k_blocks, v_blocks, k, v);
  cache.HeadViews(7, 1, 0, own_k_blocks, own_v_blocks, k, v);
  ASSERT_EQ(k_blocks.size(), own_k_blocks.size());
  for (size_t i = 0; i < k_blocks.size(); ++i)
    EXPECT_EQ(k_blocks[i] - k_blocks[0], own_k_blocks[i] - own_k_blocks[0]) << "block " << i;
  follower.ClearBorrowedTables();
  EXPECT_EQ(follower.Accounting().sequences, 0);
  EXPECT_EQ(follower.CheckInvariants(), "");
  EXPECT_THROW(follower.BorrowTable(1, std::vector<BlockId>{10}), Error);  // outside the pool
}

TEST(StepMessage, WordsThatAreNotAWholeStepAreRefused) {
  PagedKvCache cache({1, 1, 8, GgmlType::kF16, 4}, 4);
  ASSERT_TRUE(cache.Reserve(0, 5));
  Batch batch;
  batch.Add(1, 4, 0, true);
  const std::vector<int64_t> words = mpi::EncodeStep(batch, cache);
  for (size_t cut = 0; cut < words.size(); ++cut)
    EXPECT_THROW(mpi::DecodeStep(std::span<const int64_t>(words.data(), cut)), Error) << cut;
  std::vector<int64_t> longer = words;
  longer.push_back(0);
  EXPECT_THROW(mpi::DecodeStep(longer), Error);
  std::vector<int64_t> negative = words;
  negative[3] = -1;  // n_tokens
  EXPECT_THROW(mpi::DecodeStep(negative), Error);
}

}  // namespace
}  // namespace ridge
