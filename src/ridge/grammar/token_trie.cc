#include "ridge/grammar/token_trie.h"

#include <algorithm>

namespace ridge::grammar {

TokenTrie::TokenTrie(std::vector<std::pair<std::string, int32_t>> entries) {
  std::sort(entries.begin(), entries.end());
  nodes_.push_back(Node{});
  std::vector<int32_t> open = {0};  // open[d] = the node of depth d on the current path
  const std::string* previous = nullptr;
  for (const auto& [bytes, token] : entries) {
    if (bytes.empty()) continue;
    size_t common = 0;
    if (previous != nullptr) {
      while (common < previous->size() && common < bytes.size() && (*previous)[common] == bytes[common]) ++common;
    }
    // Close the nodes of the previous path below the common prefix.
    while (open.size() > common + 1) {
      nodes_[open.back()].subtree_end = static_cast<int32_t>(nodes_.size());
      open.pop_back();
    }
    for (size_t d = common; d < bytes.size(); ++d) {
      Node node;
      node.byte = static_cast<uint8_t>(bytes[d]);
      node.depth = static_cast<int32_t>(d + 1);
      node.tokens_begin = node.tokens_end = static_cast<int32_t>(token_ids_.size());
      open.push_back(static_cast<int32_t>(nodes_.size()));
      nodes_.push_back(node);
    }
    // Sorted input: the node of `bytes` is the newest one, or (same bytes as
    // the previous entry) still the last opened; its tokens stay contiguous.
    Node& last = nodes_[open.back()];
    token_ids_.push_back(token);
    last.tokens_end = static_cast<int32_t>(token_ids_.size());
    max_depth_ = std::max(max_depth_, last.depth);
    previous = &bytes;
  }
  for (int32_t i : open) nodes_[i].subtree_end = static_cast<int32_t>(nodes_.size());
}

std::span<const int32_t> TokenTrie::TokensBelow(int32_t i) const {
  const int32_t begin = nodes_[i].tokens_end;
  const int32_t end = nodes_[i].subtree_end < static_cast<int32_t>(nodes_.size())
                          ? nodes_[nodes_[i].subtree_end].tokens_begin
                          : static_cast<int32_t>(token_ids_.size());
  return {token_ids_.data() + begin, token_ids_.data() + end};
}

}  // namespace ridge::grammar
