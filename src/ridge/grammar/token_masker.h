#pragma once
// The tokens a grammar allows next, for one (grammar, vocabulary) pair.
//
// A token is allowed when the automaton accepts all of its bytes from some
// stack of the current state. Checking each of 32k-128k tokens each step would
// cost milliseconds, so (xgrammar's adaptive token mask cache, llguidance's
// trie walk):
//   - tokens are walked as a trie of their bytes, and a prefix the automaton
//     rejects prunes every token that starts with it;
//   - each stack is split at its innermost frame of a named rule: `key` (that
//     frame and the generated ones above it: groups, repetitions, character
//     classes) and `below` (the enclosing rules). Whether a token is accepted
//     without leaving the key depends on the key alone, so a walk from the key
//     is cached: the tokens it accepts, and for tokens that finish the key's
//     rule part-way, the bytes left over ("remainders", in a small trie of
//     their own). Per step, the cached accepted set is OR-ed into the mask and
//     only the remainders are walked from `below`.
// JSON's string body, for example, is one cache entry wherever strings occur;
// per step, only tokens that close the string ("\",", "\"}") are checked.
//
// Not thread-safe: the cache grows as states are met. One engine thread owns it.
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "ridge/grammar/grammar.h"
#include "ridge/grammar/grammar_vocabulary.h"
#include "ridge/grammar/matcher.h"
#include "ridge/grammar/token_mask.h"

namespace ridge::grammar {

struct TokenMaskerStats {
  int64_t cache_entries = 0;
  int64_t cache_bytes = 0;      // accepted sets and remainder tries
  int64_t nodes_walked = 0;     // trie nodes visited, cache fills and per-step remainder walks together
};

class TokenMasker {
 public:
  TokenMasker(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const GrammarVocabulary> vocabulary);

  // Automaton steps (one stack advanced by one byte, or 8 elements of the
  // stacks that makes) a FillMask may take. An ambiguous grammar keeps many
  // parses alive at once (a JSON schema pattern "a|a|…" of 1,000
  // alternatives: 44,000 stacks), each advanced along every trie path it
  // survives: one mask took ~1 s of the engine's thread, which every other
  // request waited for, and the same grammar with a 128k-token vocabulary far
  // longer. ~50 ns a step: the budget is under a second of one core, where a
  // 20,000-value enum takes ~5 M steps a mask and a JSON schema's masks ~1 M
  // at their first (uncached) walk.
  static constexpr int64_t kMaxStepsPerMask = int64_t{16} << 20;

  // `mask` := the tokens that may follow the matcher's bytes: tokens whose
  // bytes the grammar accepts, and the end-of-generation tokens where it may
  // end. `first_token`: the token will start a text (see
  // GrammarVocabulary::FirstTokenBytes); that one step walks the whole trie
  // uncached. Fails (ridge::Error, the mask and the cache as they were or
  // partly filled, the matcher untouched) past kMaxStepsPerMask or the
  // bounds of stacks.h.
  void FillMask(const GrammarMatcher& matcher, bool first_token, TokenBitmask* mask);

  // Advances `matcher` by `token`'s bytes; false, unchanged, when the token is
  // not allowed (an end-of-generation token is allowed, with no bytes, when
  // the grammar may end).
  bool AcceptToken(GrammarMatcher* matcher, int32_t token, bool first_token) const;

  const Grammar& grammar() const { return *grammar_; }
  const GrammarVocabulary& vocabulary() const { return *vocabulary_; }
  const std::shared_ptr<const Grammar>& grammar_ptr() const { return grammar_; }
  const TokenMaskerStats& stats() const { return stats_; }

 private:
  struct Entry {
    // Tokens accepted within the key: a sorted list when few, else a bitmask.
    std::vector<int32_t> accepted_list;
    std::vector<uint64_t> accepted_bits;
    // Bytes left once the key is finished, each with its tokens.
    TokenTrie remainders;
  };

  int32_t AnchorIndex(const Stack& stack) const;
  const Entry& EntryFor(const std::vector<Stack>& keys);
  // Marks the tokens of `trie` under node `root` (relative depths) that the
  // automaton accepts from `start`; `on_open` is told of every node reached
  // with a state holding the empty stack (the start's stacks all finished).
  template <typename OnReached>
  void Walk(const TokenTrie& trie, int32_t root, const std::vector<Stack>& start, OnReached on_reached);
  void FillFirstTokenMask(const GrammarMatcher& matcher, TokenBitmask* mask);

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const GrammarVocabulary> vocabulary_;
  std::map<std::vector<Stack>, std::unique_ptr<Entry>> cache_;
  std::vector<std::vector<Stack>> walk_states_;  // [depth] reused between walks
  int64_t steps_left_ = 0;                       // of this FillMask's kMaxStepsPerMask
  size_t parses_alive_ = 0;                      // the matcher's stacks, for the error
  TokenMaskerStats stats_;
};

}  // namespace ridge::grammar
