#include "ridge/grammar/matcher.h"

#include "ridge/base/error.h"

namespace ridge::grammar {

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar) : grammar_(std::move(grammar)) {
  RIDGE_CHECK(grammar_ != nullptr);
  stacks_ = InitialStacks(*grammar_);
}

bool GrammarMatcher::AcceptBytes(std::string_view bytes) {
  if (bytes.empty()) return true;
  std::vector<Stack> current;
  std::vector<Stack> next;
  const std::vector<Stack>* from = &stacks_;
  for (char c : bytes) {
    AdvanceStacks(*grammar_, *from, static_cast<uint8_t>(c), &next);
    if (next.empty()) return false;
    current.swap(next);
    from = &current;
  }
  stacks_ = std::move(current);
  return true;
}

bool GrammarMatcher::CanEnd() const {
  // Sorted: the empty stack, if present, comes first.
  return stacks_.front().empty();
}

bool MatchesWhole(const Grammar& grammar, std::string_view text) {
  // The matcher wants shared ownership; this borrowed grammar outlives it.
  GrammarMatcher matcher(std::shared_ptr<const Grammar>(&grammar, [](const Grammar*) {}));
  return matcher.AcceptBytes(text) && matcher.CanEnd();
}

}  // namespace ridge::grammar
