#include "ridge/grammar/grammar_builder.h"

#include <functional>

#include "ridge/base/error.h"

namespace ridge::grammar {
int32_t GrammarBuilder::RuleNamed(std::string_view name, SourcePos mention) {
  if (auto it = rule_ids_.find(name); it != rule_ids_.end()) return it->second;
  const auto id = static_cast<int32_t>(rules_.size());
  rules_.push_back(Rule{std::string(name), {}, false, false, mention});
  rule_ids_.emplace(std::string(name), id);
  return id;
}

int32_t GrammarBuilder::NewRule(std::string_view base_name, SourcePos pos) {
  // '/' cannot appear in a GBNF name, so a generated rule never meets a written one.
  const int count = ++name_counts_[std::string(base_name)];
  const auto id = static_cast<int32_t>(rules_.size());
  rules_.push_back(Rule{fmt::format("{}/{}", base_name, count), {}, false, true, pos});
  return id;
}

void GrammarBuilder::Define(int32_t rule, std::vector<Alternative> alternatives, SourcePos pos) {
  Rule& r = rules_.at(rule);
  if (r.defined) FailAt(pos, "rule '{}' is defined twice (first at line {} col {})", r.name, r.pos.line, r.pos.col);
  for (const Alternative& alt : alternatives) n_elements_ += static_cast<int64_t>(alt.size()) + 1;
  if (n_elements_ > kMaxElements) {
    FailAt(pos, "grammar too large: over {} elements once repetitions are expanded", kMaxElements);
  }
  r.alternatives = std::move(alternatives);
  r.defined = true;
  r.pos = pos;
}

Element GrammarBuilder::Bytes(const ByteSet& set) {
  RIDGE_CHECK(!set.Empty());
  auto [it, inserted] = byte_set_ids_.emplace(set, static_cast<int32_t>(byte_sets_.size()));
  if (inserted) byte_sets_.push_back(set);
  return Element{Element::Kind::kBytes, it->second};
}

Element GrammarBuilder::CodePoints(const std::vector<CodePointRange>& ranges, SourcePos pos) {
  RIDGE_CHECK(!ranges.empty());
  if (ranges.back().last < 0x80) {
    ByteSet set;
    for (const CodePointRange& r : ranges) set.AddRange(static_cast<uint8_t>(r.first), static_cast<uint8_t>(r.last));
    return Bytes(set);
  }
  std::vector<std::pair<uint32_t, uint32_t>> key;
  for (const CodePointRange& r : ranges) key.emplace_back(r.first, r.last);
  if (auto it = class_rules_.find(key); it != class_rules_.end()) return Element{Element::Kind::kRule, it->second};

  ByteSet one_byte;  // every single-byte encoding in one alternative
  std::vector<Alternative> alternatives;
  for (const CodePointRange& r : ranges) {
    for (const Utf8Sequence& seq : Utf8Sequences(r.first, r.last)) {
      if (seq.n_bytes == 1) {
        one_byte.AddRange(seq.first[0], seq.last[0]);
        continue;
      }
      Alternative alt;
      for (int i = 0; i < seq.n_bytes; ++i) {
        ByteSet set;
        set.AddRange(seq.first[i], seq.last[i]);
        alt.push_back(Bytes(set));
      }
      alternatives.push_back(std::move(alt));
    }
  }
  if (one_byte.Empty() && alternatives.empty()) {
    FailAt(pos, "character class matches no character (surrogates U+D800-DFFF have no UTF-8 encoding)");
  }
  if (!one_byte.Empty()) alternatives.insert(alternatives.begin(), Alternative{Bytes(one_byte)});
  const int32_t rule = NewRule("char", pos);
  Define(rule, std::move(alternatives), pos);
  class_rules_.emplace(std::move(key), rule);
  return Element{Element::Kind::kRule, rule};
}

void GrammarBuilder::CheckDefined() const {
  for (const Rule& r : rules_) {
    if (!r.defined) FailAt(r.pos, "rule '{}' is used but never defined", r.name);
  }
}

std::vector<bool> GrammarBuilder::NullableRules() const {
  std::vector<bool> nullable(rules_.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < rules_.size(); ++i) {
      if (nullable[i]) continue;
      for (const Alternative& alt : rules_[i].alternatives) {
        bool all = true;
        for (const Element& e : alt) all = all && e.kind == Element::Kind::kRule && nullable[e.id];
        if (all) {
          nullable[i] = true;
          changed = true;
          break;
        }
      }
    }
  }
  return nullable;
}

void GrammarBuilder::CheckProductive() const {
  std::vector<bool> productive(rules_.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < rules_.size(); ++i) {
      if (productive[i]) continue;
      for (const Alternative& alt : rules_[i].alternatives) {
        bool all = true;
        for (const Element& e : alt) all = all && (e.kind != Element::Kind::kRule || productive[e.id]);
        if (all) {
          productive[i] = true;
          changed = true;
          break;
        }
      }
    }
  }
  // Name a rule that recurses into itself if there is one (the cause, rather
  // than the rules that merely use it).
  int32_t culprit = -1;
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (productive[i]) continue;
    if (culprit < 0) culprit = static_cast<int32_t>(i);
    for (const Alternative& alt : rules_[i].alternatives) {
      for (const Element& e : alt) {
        if (e.kind == Element::Kind::kRule && e.id == static_cast<int32_t>(i)) {
          FailAt(rules_[i].pos, "rule '{}' can never finish: each of its alternatives recurses without end",
                 rules_[i].name);
        }
      }
    }
  }
  if (culprit >= 0) {
    FailAt(rules_[culprit].pos, "rule '{}' can never finish: each of its alternatives recurses without end",
           rules_[culprit].name);
  }
}

void GrammarBuilder::CheckLeftRecursion() const {
  const std::vector<bool> nullable = NullableRules();
  // Rules each rule may expand into before consuming a byte.
  std::vector<std::vector<int32_t>> leftmost(rules_.size());
  for (size_t i = 0; i < rules_.size(); ++i) {
    for (const Alternative& alt : rules_[i].alternatives) {
      for (const Element& e : alt) {
        if (e.kind != Element::Kind::kRule) break;
        leftmost[i].push_back(e.id);
        if (!nullable[e.id]) break;
      }
    }
  }
  enum Mark : uint8_t { kUnvisited, kOnPath, kDone };
  std::vector<Mark> marks(rules_.size(), kUnvisited);
  std::vector<int32_t> path;
  std::function<void(int32_t)> visit = [&](int32_t rule) {
    marks[rule] = kOnPath;
    path.push_back(rule);
    for (int32_t next : leftmost[rule]) {
      if (marks[next] == kOnPath) {
        std::string cycle;
        bool in_cycle = false;
        for (int32_t r : path) {
          in_cycle = in_cycle || r == next;
          if (in_cycle) cycle += rules_[r].name + " -> ";
        }
        FailAt(rules_[next].pos,
               "rule '{}' is left-recursive ({}{}, consuming no input): not supported; rewrite it with "
               "repetition (a repetition of something that may match the empty string is left-recursive too)",
               rules_[next].name, cycle, rules_[next].name);
      }
      if (marks[next] == kUnvisited) visit(next);
    }
    path.pop_back();
    marks[rule] = kDone;
  };
  for (size_t i = 0; i < rules_.size(); ++i) {
    if (marks[i] == kUnvisited) visit(static_cast<int32_t>(i));
  }
}

std::shared_ptr<const Grammar> GrammarBuilder::Build(std::string_view root_name) {
  auto root = rule_ids_.find(root_name);
  if (root == rule_ids_.end() || !rules_[root->second].defined) {
    FailAt(SourcePos{}, "no rule named '{}' (the start symbol)", root_name);
  }
  CheckDefined();
  CheckProductive();
  CheckLeftRecursion();

  auto grammar = std::make_shared<Grammar>();
  grammar->root = root->second;
  grammar->byte_sets = byte_sets_;
  grammar->elements.reserve(static_cast<size_t>(n_elements_));
  for (size_t rule = 0; rule < rules_.size(); ++rule) {
    const Rule& r = rules_[rule];
    grammar->rule_names.push_back(r.name);
    grammar->rule_generated.push_back(r.generated ? 1 : 0);
    std::vector<int32_t>& starts = grammar->rule_alternatives.emplace_back();
    for (const Alternative& alt : r.alternatives) {
      starts.push_back(static_cast<int32_t>(grammar->elements.size()));
      grammar->elements.insert(grammar->elements.end(), alt.begin(), alt.end());
      grammar->elements.push_back(Element{});
    }
    grammar->position_rule.resize(grammar->elements.size(), static_cast<int32_t>(rule));
  }
  return grammar;
}

}  // namespace ridge::grammar
