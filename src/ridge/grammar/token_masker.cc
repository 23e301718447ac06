#include "ridge/grammar/token_masker.h"

#include <fmt/format.h>

#include "ridge/base/error.h"

namespace ridge::grammar {

TokenMasker::TokenMasker(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const GrammarVocabulary> vocabulary)
    : grammar_(std::move(grammar)), vocabulary_(std::move(vocabulary)) {
  RIDGE_CHECK(grammar_ != nullptr && vocabulary_ != nullptr);
}

int32_t TokenMasker::AnchorIndex(const Stack& stack) const {
  for (size_t i = stack.size(); i-- > 0;) {
    if (!grammar_->rule_generated[grammar_->position_rule[stack[i]]]) return static_cast<int32_t>(i);
  }
  return 0;
}

template <typename OnReached>
void TokenMasker::Walk(const TokenTrie& trie, int32_t root, const std::vector<Stack>& start, OnReached on_reached) {
  const std::vector<TokenTrie::Node>& nodes = trie.nodes();
  const int32_t base_depth = nodes[root].depth;
  if (walk_states_.size() < static_cast<size_t>(trie.max_depth() + 1)) walk_states_.resize(trie.max_depth() + 1);
  const int32_t end = nodes[root].subtree_end;
  for (int32_t i = root + 1; i < end;) {
    const TokenTrie::Node& node = nodes[i];
    const int32_t depth = node.depth - base_depth;
    const std::vector<Stack>& parent = depth == 1 ? start : walk_states_[depth - 1];
    std::vector<Stack>& here = walk_states_[depth];
    const int64_t elements = AdvanceStacks(*grammar_, parent, node.byte, &here);
    ++stats_.nodes_walked;
    // A step per parent stack, and one per 8 elements of the stacks made
    // (copies of deep stacks, not their count, bound a walk of a deeply
    // nested grammar).
    steps_left_ -= static_cast<int64_t>(parent.size()) + elements / 8;
    if (steps_left_ < 0) {
      FailTooAmbiguous(fmt::format("{} parses of it are alive at once, and the tokens that may follow take more "
                                   "than {} automaton steps to find",
                                   parses_alive_, kMaxStepsPerMask));
    }
    if (here.empty()) {
      i = node.subtree_end;  // no token with this prefix can be accepted
      continue;
    }
    on_reached(i, here);
    ++i;
  }
}

const TokenMasker::Entry& TokenMasker::EntryFor(const std::vector<Stack>& keys) {
  if (auto it = cache_.find(keys); it != cache_.end()) return *it->second;

  const TokenTrie& trie = vocabulary_->trie();
  const int32_t n_vocab = vocabulary_->n_vocab();
  TokenBitmask accepted;
  accepted.Reset(n_vocab);
  std::vector<int32_t> finished_at;  // nodes where some key stack was finished
  Walk(trie, 0, keys, [&](int32_t node, const std::vector<Stack>& state) {
    for (int32_t t : trie.TokensAt(node)) accepted.Set(t);
    if (state.front().empty()) finished_at.push_back(node);  // sorted: an empty stack comes first
  });

  auto entry = std::make_unique<Entry>();
  std::vector<std::pair<std::string, int32_t>> remainders;
  for (int32_t node : finished_at) {
    const auto depth = static_cast<size_t>(trie.nodes()[node].depth);
    for (int32_t t : trie.TokensBelow(node)) {
      if (!accepted.Test(t)) remainders.emplace_back(std::string(vocabulary_->TokenBytes(t).substr(depth)), t);
    }
  }
  entry->remainders = TokenTrie(std::move(remainders));
  const int64_t n_accepted = accepted.Count();
  if (n_accepted * 32 < n_vocab) {  // 4 bytes per listed token against n_vocab / 8 for the bitmask
    for (int32_t t = 0; t < n_vocab; ++t) {
      if (accepted.Test(t)) entry->accepted_list.push_back(t);
    }
  } else {
    entry->accepted_bits = std::move(accepted.words);
  }
  stats_.cache_entries += 1;
  stats_.cache_bytes += static_cast<int64_t>(entry->accepted_list.size() * sizeof(int32_t) +
                                             entry->accepted_bits.size() * sizeof(uint64_t) +
                                             entry->remainders.nodes().size() * sizeof(TokenTrie::Node));
  return *cache_.emplace(keys, std::move(entry)).first->second;
}

void TokenMasker::FillMask(const GrammarMatcher& matcher, bool first_token, TokenBitmask* mask) {
  RIDGE_CHECK(&matcher.grammar() == grammar_.get());
  steps_left_ = kMaxStepsPerMask;
  parses_alive_ = matcher.stacks().size();
  mask->Reset(vocabulary_->n_vocab());
  if (first_token && vocabulary_->strips_first_space()) {
    FillFirstTokenMask(matcher, mask);
  } else {
    // Stacks grouped by what lies below their key: one cache entry and one
    // remainder walk per group (usually a single group).
    std::map<Stack, std::vector<Stack>> keys_by_below;
    for (const Stack& stack : matcher.stacks()) {
      if (stack.empty()) continue;  // the root is complete: only end-of-generation follows it
      const auto anchor = static_cast<std::ptrdiff_t>(AnchorIndex(stack));
      keys_by_below[Stack(stack.begin(), stack.begin() + anchor)].emplace_back(stack.begin() + anchor, stack.end());
    }
    for (auto& [below, keys] : keys_by_below) {
      Deduplicate(&keys);
      const Entry& entry = EntryFor(keys);
      for (int32_t t : entry.accepted_list) mask->Set(t);
      for (size_t w = 0; w < entry.accepted_bits.size(); ++w) mask->words[w] |= entry.accepted_bits[w];
      if (below.empty() || entry.remainders.empty()) continue;
      std::vector<Stack> start;
      ExpandStack(*grammar_, below, &start);
      Deduplicate(&start);
      Walk(entry.remainders, 0, start, [&](int32_t node, const std::vector<Stack>&) {
        for (int32_t t : entry.remainders.TokensAt(node)) mask->Set(t);
      });
    }
  }
  if (matcher.CanEnd()) {
    for (int32_t t : vocabulary_->end_tokens()) mask->Set(t);
  }
}

void TokenMasker::FillFirstTokenMask(const GrammarMatcher& matcher, TokenBitmask* mask) {
  const GrammarVocabulary& vocab = *vocabulary_;
  const TokenTrie& trie = vocab.trie();
  auto strips = [&](int32_t t) { return vocab.FirstTokenBytes(t).size() < vocab.TokenBytes(t).size(); };
  // Every token as it is, but for those that will lose their leading space...
  Walk(trie, 0, matcher.stacks(), [&](int32_t node, const std::vector<Stack>&) {
    for (int32_t t : trie.TokensAt(node)) {
      if (!strips(t)) mask->Set(t);
    }
  });
  // ...which are walked from below the space, as if it were not there.
  const std::vector<TokenTrie::Node>& nodes = trie.nodes();
  for (int32_t child = 1; child < static_cast<int32_t>(nodes.size()); child = nodes[child].subtree_end) {
    if (nodes[child].byte != ' ') continue;
    for (int32_t t : trie.TokensAt(child)) {
      if (strips(t)) mask->Set(t);  // " " alone adds no text: the grammar stays where it is
    }
    Walk(trie, child, matcher.stacks(), [&](int32_t node, const std::vector<Stack>&) {
      for (int32_t t : trie.TokensAt(node)) {
        if (strips(t)) mask->Set(t);
      }
    });
  }
}

bool TokenMasker::AcceptToken(GrammarMatcher* matcher, int32_t token, bool first_token) const {
  if (token < 0 || token >= vocabulary_->n_vocab()) return false;
  if (vocabulary_->IsEndOfGeneration(token)) return matcher->CanEnd();
  if (vocabulary_->TokenBytes(token).empty()) return false;  // adds no text: never allowed
  return matcher->AcceptBytes(first_token ? vocabulary_->FirstTokenBytes(token) : vocabulary_->TokenBytes(token));
}

}  // namespace ridge::grammar
