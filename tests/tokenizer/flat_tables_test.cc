#include <gtest/gtest.h>

#include "ridge/tokenizer/flat_tables.h"

namespace ridge::tokenizer_detail {
namespace {

TEST(TokenIndex, FindsKeptTextsAndLaterDuplicatesWin) {
  const std::vector<std::string> tokens = {"a", "b", "", "a", "skip"};
  TokenIndex index;
  index.Build(&tokens, {true, true, true, true, false});
  EXPECT_EQ(index.Find("a"), 3);
  EXPECT_EQ(index.Find("b"), 1);
  EXPECT_EQ(index.Find(""), 2);
  EXPECT_EQ(index.Find("skip"), -1);
  EXPECT_EQ(index.Find("zz"), -1);
  EXPECT_EQ(index.size(), 3u);
  TokenIndex empty;
  EXPECT_EQ(empty.Find("a"), -1);
}

TEST(TokenIndex, ManyTexts) {
  std::vector<std::string> tokens;
  for (int i = 0; i < 100000; ++i) tokens.push_back("t" + std::to_string(i));
  TokenIndex index;
  index.Build(&tokens, std::vector<bool>(tokens.size(), true));
  for (int i = 0; i < 100000; i += 7) EXPECT_EQ(index.Find("t" + std::to_string(i)), i);
  EXPECT_EQ(index.Find("t100000"), -1);
}

TEST(MergeTable, GrowsAndKeepsTheFirstRank) {
  MergeTable table;
  EXPECT_EQ(table.Find(1, 2), nullptr);
  for (int32_t i = 0; i < 50000; ++i) table.Insert(i, i + 1, {i, 1000000 + i});
  table.Insert(5, 6, {99, 0});  // a later duplicate pair does not replace the first
  EXPECT_EQ(table.size(), 50000u);
  for (int32_t i = 0; i < 50000; i += 3) {
    const BpeMerge* m = table.Find(i, i + 1);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->rank, i);
    EXPECT_EQ(m->merged_id, 1000000 + i);
    EXPECT_EQ(table.Find(i + 1, i), nullptr);
  }
  EXPECT_EQ(table.Find(-1, 0), nullptr);
}

}  // namespace
}  // namespace ridge::tokenizer_detail
