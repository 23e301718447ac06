#pragma once
// The byte-level automaton state of one sequence under a grammar. Bytes go in
// one token at a time; a token may end inside a UTF-8 character, since the
// grammar's terminals are bytes (grammar.h).
//
// Copyable (the grammar is shared, the stacks are copied): a sequence's state
// can be cloned, e.g. to try a token without committing it.
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "ridge/grammar/grammar.h"
#include "ridge/grammar/stacks.h"

namespace ridge::grammar {

class GrammarMatcher {
 public:
  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

  // Consumes `bytes`. False, with the state unchanged, if they leave the
  // language (no sentence of the root rule starts with the bytes so far + these).
  bool AcceptBytes(std::string_view bytes);
  // The bytes so far are a complete sentence of the root rule.
  bool CanEnd() const;

  const Grammar& grammar() const { return *grammar_; }
  const std::shared_ptr<const Grammar>& grammar_ptr() const { return grammar_; }
  const std::vector<Stack>& stacks() const { return stacks_; }

 private:
  std::shared_ptr<const Grammar> grammar_;
  std::vector<Stack> stacks_;  // sorted, distinct; never empty
};

// Whether `text` is a whole sentence of the grammar's root rule.
bool MatchesWhole(const Grammar& grammar, std::string_view text);

}  // namespace ridge::grammar
