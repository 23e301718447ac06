#pragma once
// A trie over token byte strings laid out in depth-first order, so that a walk
// is a loop over an array and a rejected prefix skips its whole subtree by
// jumping to `subtree_end`.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ridge::grammar {

class TokenTrie {
 public:
  struct Node {
    uint8_t byte = 0;         // the last byte of this node's prefix (none for the root)
    int32_t depth = 0;        // prefix length; the root is 0
    int32_t subtree_end = 0;  // index one past this node's last descendant
    int32_t tokens_begin = 0; // this node's own tokens: token_ids[tokens_begin, tokens_end)
    int32_t tokens_end = 0;
  };

  TokenTrie() = default;
  // `entries` are (bytes, token); several tokens may share the same bytes and
  // a token may appear under several byte strings. Empty strings are ignored.
  explicit TokenTrie(std::vector<std::pair<std::string, int32_t>> entries);

  const std::vector<Node>& nodes() const { return nodes_; }
  // Tokens whose bytes end at node `i`.
  std::span<const int32_t> TokensAt(int32_t i) const {
    return {token_ids_.data() + nodes_[i].tokens_begin, token_ids_.data() + nodes_[i].tokens_end};
  }
  // Tokens strictly below node `i` (longer than its prefix).
  std::span<const int32_t> TokensBelow(int32_t i) const;
  int32_t max_depth() const { return max_depth_; }
  bool empty() const { return nodes_.size() <= 1; }

 private:
  std::vector<Node> nodes_;         // nodes_[0] is the root (empty prefix)
  std::vector<int32_t> token_ids_;  // grouped by node, in node order
  int32_t max_depth_ = 0;
};

}  // namespace ridge::grammar
