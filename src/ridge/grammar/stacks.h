#pragma once
// The pushdown automaton's moves over a Grammar, as llama.cpp's grammar
// engine makes them: a state is a set of stacks (the grammar may be
// ambiguous, so several parses can be alive at once); a stack lists element
// positions, outermost first, each the next element to match in its
// alternative. After expansion the top of every stack is a kBytes element,
// and an empty stack means the whole root rule has been matched.
//
// A rule reference is expanded in place: its frame is replaced by "what
// follows it" (dropped when nothing does, so right recursion and repetition
// do not grow the stack) plus the first element of each alternative.
#include <cstdint>
#include <string_view>
#include <vector>

#include "ridge/grammar/grammar.h"

namespace ridge::grammar {

using Stack = std::vector<int32_t>;

// Stacks one state may hold (counted before duplicates are removed). An
// ambiguous grammar keeps many parses alive at once: a regex of 800 nested
// stars, "((…(a)*…)*)*", had 320,000 after one byte, 2.6 GB of stacks and a
// minute of the engine's thread. JSON schemas keep a few per enum or anyOf
// value: an anyOf of 20,000 objects ~60,000, near the bound.
inline constexpr size_t kMaxStacks = size_t{1} << 16;
// And the stack elements one expansion (of a stack, or all of one byte's)
// may copy on its way: deep nesting copies a stack at every level it passes
// (32 M int32, 128 MB, ~0.1 s).
inline constexpr int64_t kMaxExpansionElements = int64_t{1} << 25;

// Throws the ridge::Error of a grammar too ambiguous to follow within these
// bounds (or TokenMasker's), `what` saying which.
[[noreturn]] void FailTooAmbiguous(std::string_view what);

// Appends the expansions of `stack` (its top may be a rule, an alternative's
// end is never on a stack) to `out`. Fails (ridge::Error) past kMaxStacks in
// `out`, which then holds that many, or past kMaxExpansionElements.
void ExpandStack(const Grammar& grammar, Stack stack, std::vector<Stack>* out);

// The stacks at the start of the root rule.
std::vector<Stack> InitialStacks(const Grammar& grammar);

// The stacks after `byte`, sorted and without duplicates (empty: the byte is
// rejected from every stack). Returns the elements of the stacks it made,
// duplicates included (the work done). Fails as ExpandStack does.
int64_t AdvanceStacks(const Grammar& grammar, const std::vector<Stack>& stacks, uint8_t byte, std::vector<Stack>* out);

// Sorts and removes duplicates.
void Deduplicate(std::vector<Stack>* stacks);

}  // namespace ridge::grammar
