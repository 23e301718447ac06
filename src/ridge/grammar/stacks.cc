#include "ridge/grammar/stacks.h"

#include <algorithm>

#include "ridge/base/error.h"

namespace ridge::grammar {

void ExpandStack(const Grammar& grammar, Stack stack, std::vector<Stack>* out) {
  if (stack.empty() || grammar.elements[stack.back()].kind == Element::Kind::kBytes) {
    out->push_back(std::move(stack));
    return;
  }
  const int32_t position = stack.back();
  const Element& ref = grammar.elements[position];
  RIDGE_CHECK(ref.kind == Element::Kind::kRule);
  stack.pop_back();
  if (!grammar.IsEnd(position + 1)) stack.push_back(position + 1);
  const std::vector<int32_t>& alternatives = grammar.rule_alternatives[ref.id];
  for (size_t i = 0; i < alternatives.size(); ++i) {
    // The last alternative may take the stack itself instead of a copy.
    Stack next = i + 1 == alternatives.size() ? std::move(stack) : stack;
    if (!grammar.IsEnd(alternatives[i])) next.push_back(alternatives[i]);
    ExpandStack(grammar, std::move(next), out);
  }
}

std::vector<Stack> InitialStacks(const Grammar& grammar) {
  std::vector<Stack> stacks;
  for (int32_t start : grammar.rule_alternatives[grammar.root]) {
    Stack stack;
    if (!grammar.IsEnd(start)) stack.push_back(start);
    ExpandStack(grammar, std::move(stack), &stacks);
  }
  Deduplicate(&stacks);
  return stacks;
}

void AdvanceStacks(const Grammar& grammar, const std::vector<Stack>& stacks, uint8_t byte, std::vector<Stack>* out) {
  out->clear();
  for (const Stack& stack : stacks) {
    if (stack.empty() || !grammar.Bytes(stack.back()).Has(byte)) continue;
    Stack next = stack;
    const int32_t position = next.back();
    next.pop_back();
    if (!grammar.IsEnd(position + 1)) next.push_back(position + 1);
    ExpandStack(grammar, std::move(next), out);
  }
  Deduplicate(out);
}

void Deduplicate(std::vector<Stack>* stacks) {
  if (stacks->size() < 2) return;
  std::sort(stacks->begin(), stacks->end());
  stacks->erase(std::unique(stacks->begin(), stacks->end()), stacks->end());
}

}  // namespace ridge::grammar
