// The depth-first token trie: nodes, shared prefixes, duplicate byte strings
// and subtree ranges.
#include <gtest/gtest.h>

#include <algorithm>

#include "ridge/grammar/token_trie.h"

namespace ridge::grammar {
namespace {

std::vector<int32_t> Sorted(std::span<const int32_t> s) {
  std::vector<int32_t> v(s.begin(), s.end());
  std::sort(v.begin(), v.end());
  return v;
}

TEST(TokenTrieTest, DepthFirstWithSubtreeRanges) {
  // "a"=0, "ab"=1, "abc"=2, "b"=3, "ab" again=4, ""=5 (ignored)
  const TokenTrie trie({{"a", 0}, {"ab", 1}, {"abc", 2}, {"b", 3}, {"ab", 4}, {"", 5}});
  const auto& n = trie.nodes();
  ASSERT_EQ(n.size(), 5u);  // root, a, ab, abc, b
  EXPECT_EQ(n[1].byte, 'a');
  EXPECT_EQ(n[1].depth, 1);
  EXPECT_EQ(n[1].subtree_end, 4);
  EXPECT_EQ(n[2].byte, 'b');
  EXPECT_EQ(n[2].depth, 2);
  EXPECT_EQ(n[3].byte, 'c');
  EXPECT_EQ(n[3].subtree_end, 4);
  EXPECT_EQ(n[4].byte, 'b');
  EXPECT_EQ(n[4].depth, 1);
  EXPECT_EQ(n[0].subtree_end, 5);
  EXPECT_EQ(Sorted(trie.TokensAt(1)), (std::vector<int32_t>{0}));
  EXPECT_EQ(Sorted(trie.TokensAt(2)), (std::vector<int32_t>{1, 4}));
  EXPECT_EQ(Sorted(trie.TokensBelow(1)), (std::vector<int32_t>{1, 2, 4}));
  EXPECT_EQ(Sorted(trie.TokensBelow(0)), (std::vector<int32_t>{0, 1, 2, 3, 4}));
  EXPECT_TRUE(trie.TokensBelow(3).empty());
  EXPECT_EQ(trie.max_depth(), 3);
}

TEST(TokenTrieTest, BytesAboveSevenBitsSortAsUnsigned) {
  // 0xC3 must come after 'z' in the walk, as in byte order (the trie is
  // consistent either way, but each subtree must stay contiguous).
  const TokenTrie trie({{"\xC3\xA9", 0}, {"z", 1}, {"\xC3", 2}, {"a", 3}});
  for (const auto& node : trie.nodes()) EXPECT_LE(node.subtree_end, static_cast<int32_t>(trie.nodes().size()));
  EXPECT_EQ(trie.TokensBelow(0).size(), 4u);
  EXPECT_TRUE(trie.empty() == false);
  EXPECT_TRUE(TokenTrie({{"", 1}}).empty());
}

}  // namespace
}  // namespace ridge::grammar
