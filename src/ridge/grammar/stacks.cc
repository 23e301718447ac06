#include "ridge/grammar/stacks.h"

#include <algorithm>
#include <string_view>

#include <fmt/format.h>

#include "ridge/base/error.h"

namespace ridge::grammar {

void FailTooAmbiguous(std::string_view what) {
  Fail("the grammar is too ambiguous to constrain generation: {} (a pattern or schema with many overlapping "
       "alternatives, or nested repetitions?)",
       what);
}

namespace {

// The expansions of one AdvanceStacks or InitialStacks, with their budget.
struct Expansion {
  const Grammar& grammar;
  std::vector<Stack>* out;
  int64_t elements_left = kMaxExpansionElements;
  int64_t elements_out = 0;  // of the stacks pushed to out, duplicates included

  void Expand(Stack stack) {
    if (stack.empty() || grammar.elements[stack.back()].kind == Element::Kind::kBytes) {
      if (out->size() >= kMaxStacks)
        FailTooAmbiguous(fmt::format("more than {} parses of it are alive at once", kMaxStacks));
      elements_out += static_cast<int64_t>(stack.size());
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
      elements_left -= static_cast<int64_t>(stack.size()) + 1;
      if (elements_left < 0) {
        FailTooAmbiguous(fmt::format("its parses alive at once take more than {} stack elements to list",
                                     kMaxExpansionElements));
      }
      Stack next = i + 1 == alternatives.size() ? std::move(stack) : stack;
      if (!grammar.IsEnd(alternatives[i])) next.push_back(alternatives[i]);
      Expand(std::move(next));
    }
  }
};

}  // namespace

void ExpandStack(const Grammar& grammar, Stack stack, std::vector<Stack>* out) {
  Expansion{grammar, out}.Expand(std::move(stack));
}

std::vector<Stack> InitialStacks(const Grammar& grammar) {
  std::vector<Stack> stacks;
  Expansion expansion{grammar, &stacks};
  for (int32_t start : grammar.rule_alternatives[grammar.root]) {
    Stack stack;
    if (!grammar.IsEnd(start)) stack.push_back(start);
    expansion.Expand(std::move(stack));
  }
  Deduplicate(&stacks);
  return stacks;
}

int64_t AdvanceStacks(const Grammar& grammar, const std::vector<Stack>& stacks, uint8_t byte, std::vector<Stack>* out) {
  out->clear();
  Expansion expansion{grammar, out};
  for (const Stack& stack : stacks) {
    if (stack.empty() || !grammar.Bytes(stack.back()).Has(byte)) continue;
    Stack next = stack;
    const int32_t position = next.back();
    next.pop_back();
    if (!grammar.IsEnd(position + 1)) next.push_back(position + 1);
    expansion.Expand(std::move(next));
  }
  Deduplicate(out);
  return expansion.elements_out;
}

void Deduplicate(std::vector<Stack>* stacks) {
  if (stacks->size() < 2) return;
  std::sort(stacks->begin(), stacks->end());
  stacks->erase(std::unique(stacks->begin(), stacks->end()), stacks->end());
}

}  // namespace ridge::grammar
