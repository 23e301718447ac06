#include "ridge/grammar/gbnf_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "ridge/base/error.h"

namespace ridge::grammar {
namespace {

// One code point inside "..." (in_class false) or [...] (in_class true).
std::string EscapeCodePoint(uint32_t cp, bool in_class) {
  if (cp >= 0x20 && cp < 0x7F) {
    const char c = static_cast<char>(cp);
    // GBNF knows the escapes \\ \" \[ \]; '^' and '-' inside a class go as hex.
    if (c == '\\' || (!in_class && c == '"') || (in_class && (c == ']' || c == '[')))
      return std::string("\\") + c;
    if (in_class && (c == '^' || c == '-')) return fmt::format("\\x{:02X}", cp);
    return std::string(1, c);
  }
  if (cp < 0x80) return fmt::format("\\x{:02X}", cp);
  if (cp <= 0xFFFF) return fmt::format("\\u{:04X}", cp);
  return fmt::format("\\U{:08X}", cp);
}

// Decodes one UTF-8 sequence at s[*i]; a byte that does not start a valid
// sequence decodes as itself.
uint32_t NextCodePoint(std::string_view s, size_t* i) {
  const auto b = static_cast<unsigned char>(s[*i]);
  int len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
  if (len <= 1 || *i + len > s.size()) {
    ++*i;
    return b;
  }
  uint32_t cp = b & (0x7F >> len);
  for (int k = 1; k < len; ++k) {
    const auto c = static_cast<unsigned char>(s[*i + k]);
    if ((c & 0xC0) != 0x80) {
      ++*i;
      return b;
    }
    cp = (cp << 6) | (c & 0x3F);
  }
  *i += len;
  return cp;
}

std::string ClassBody(const CodePointSet& set) {
  std::string body;
  for (auto [lo, hi] : set.ranges()) {
    body += EscapeCodePoint(lo, true);
    if (hi > lo) {
      if (hi > lo + 1) body += '-';
      body += EscapeCodePoint(hi, true);
    }
  }
  return body;
}

bool IsNameChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-'; }

}  // namespace

CodePointSet CodePointSet::Range(uint32_t lo, uint32_t hi) {
  CodePointSet s;
  s.Add(lo, hi);
  return s;
}

void CodePointSet::Add(uint32_t lo, uint32_t hi) {
  RIDGE_CHECK(lo <= hi && hi <= kMaxCodePoint);
  ranges_.emplace_back(lo, hi);
  std::sort(ranges_.begin(), ranges_.end());
  std::vector<std::pair<uint32_t, uint32_t>> merged;
  for (auto r : ranges_) {
    if (!merged.empty() && r.first <= merged.back().second + 1)
      merged.back().second = std::max(merged.back().second, r.second);
    else
      merged.push_back(r);
  }
  ranges_ = std::move(merged);
}

void CodePointSet::Add(const CodePointSet& other) {
  for (auto [lo, hi] : other.ranges_) Add(lo, hi);
}

CodePointSet CodePointSet::Complement() const {
  CodePointSet out;
  uint32_t next = 0;
  for (auto [lo, hi] : ranges_) {
    if (lo > next) out.ranges_.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= kMaxCodePoint) out.ranges_.emplace_back(next, kMaxCodePoint);
  return out;
}

CodePointSet CodePointSet::Intersect(const CodePointSet& other) const {
  CodePointSet out;
  for (auto [a_lo, a_hi] : ranges_)
    for (auto [b_lo, b_hi] : other.ranges_) {
      const uint32_t lo = std::max(a_lo, b_lo), hi = std::min(a_hi, b_hi);
      if (lo <= hi) out.ranges_.emplace_back(lo, hi);
    }
  std::sort(out.ranges_.begin(), out.ranges_.end());
  return out;
}

bool CodePointSet::Contains(uint32_t cp) const {
  return std::any_of(ranges_.begin(), ranges_.end(), [cp](auto r) { return r.first <= cp && cp <= r.second; });
}

std::string GbnfLiteral(std::string_view utf8) {
  std::string out = "\"";
  for (size_t i = 0; i < utf8.size();) out += EscapeCodePoint(NextCodePoint(utf8, &i), false);
  return out + "\"";
}

std::string GbnfCharClass(const CodePointSet& set) {
  RIDGE_CHECK(!set.empty());
  // A negated class never matches surrogates (they are not characters), and
  // GBNF refuses to name them: leave them out of both forms.
  const CodePointSet surrogates = CodePointSet::Range(0xD800, 0xDFFF);
  std::string positive = ClassBody(set.Minus(surrogates));
  CodePointSet complement = set.Complement().Minus(surrogates);
  if (!complement.empty()) {
    std::string negative = ClassBody(complement);
    if (negative.size() < positive.size()) return "[^" + negative + "]";
  }
  return "[" + positive + "]";
}

std::string GbnfGroup(const std::string& e) {
  // One atom: a rule name, one literal or one class (no spaces or bars outside them).
  bool atom = !e.empty();
  char quote = 0;
  int depth = 0;
  for (size_t i = 0; i < e.size() && atom; ++i) {
    const char c = e[i];
    if (quote) {
      if (c == '\\') ++i;
      else if ((quote == '"' && c == '"') || (quote == '[' && c == ']')) quote = 0;
      continue;
    }
    if (c == '"' || c == '[') {
      quote = c;
      atom = i == 0;
    } else if (c == '(') {
      atom = depth > 0 || i == 0;
      ++depth;
    } else if (c == ')') {
      --depth;
      atom = depth > 0 || i + 1 == e.size();
    } else if (depth == 0 && !IsNameChar(c)) {
      atom = false;
    }
  }
  return atom ? e : "(" + e + ")";
}

std::string GbnfRepeat(const std::string& item, int64_t min_count, int64_t max_count, const std::string& sep) {
  RIDGE_CHECK(min_count >= 0 && (max_count < 0 || max_count >= min_count));
  const std::string atom = GbnfGroup(item);
  const std::string sep_item = sep.empty() ? atom : GbnfGroup(sep + " " + atom);
  if (max_count == 0) return "\"\"";
  std::string out;
  // The first item has no separator before it; every later one has.
  auto next = [&](int64_t k) -> const std::string& { return k == 0 ? atom : sep_item; };
  int64_t k = 0;
  for (; k < min_count; ++k) out += (out.empty() ? "" : " ") + next(k);
  if (max_count < 0) {
    if (k == 0) return sep.empty() ? atom + "*" : GbnfGroup(atom + " " + sep_item + "*") + "?";
    return out + " " + sep_item + "*";
  }
  // Optional tail: (x (x (x)?)?)?
  std::string tail;
  for (int64_t j = max_count - 1; j >= k; --j)
    tail = tail.empty() ? GbnfGroup(next(j)) + "?" : "(" + next(j) + " " + tail + ")?";
  if (out.empty()) return tail;
  return tail.empty() ? out : out + " " + tail;
}

std::string GbnfRules::FreshName(std::string_view hint) {
  std::string base;
  for (char c : hint) base += IsNameChar(c) ? c : '-';
  if (base.empty()) base = "r";
  // The next free suffix of this base, from where the last call left off (a
  // scan from 2 each time made a converter that names thousands of rules
  // quadratic).
  std::string name = base;
  int64_t& k = next_suffix_[base];
  if (k < 2) k = 2;
  while (bodies_.count(name)) name = fmt::format("{}-{}", base, k++);
  bodies_[name];  // reserve it
  order_.push_back(name);
  return name;
}

void GbnfRules::Define(const std::string& name, std::string expression) {
  auto [it, inserted] = bodies_.try_emplace(name);
  if (inserted) order_.push_back(name);
  it->second = std::move(expression);
}

std::string GbnfRules::Text() const {
  std::string out;
  auto line = [&](const std::string& name) { out += name + " ::= " + bodies_.at(name) + "\n"; };
  if (bodies_.count("root")) line("root");
  for (const auto& name : order_)
    if (name != "root") line(name);
  return out;
}

}  // namespace ridge::grammar
