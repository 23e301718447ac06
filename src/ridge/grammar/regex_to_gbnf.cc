#include "ridge/grammar/regex_to_gbnf.h"

#include <fmt/format.h>

#include <optional>
#include <vector>

#include "ridge/base/error.h"

namespace ridge::grammar {
namespace {

constexpr uint32_t kEnd = 0xFFFFFFFF;  // past the last code point of the pattern

CodePointSet Digits() { return CodePointSet::Range('0', '9'); }

CodePointSet WordChars() {
  CodePointSet s = CodePointSet::Range('a', 'z');
  s.Add('A', 'Z');
  s.Add('0', '9');
  s.Add('_', '_');
  return s;
}

// ECMAScript's WhiteSpace and LineTerminator.
CodePointSet Spaces() {
  CodePointSet s = CodePointSet::Range('\t', '\r');
  for (uint32_t cp : {0x20u, 0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u, 0xFEFFu}) s.Add(cp, cp);
  s.Add(0x2000, 0x200A);
  return s;
}

CodePointSet LineTerminators() {
  CodePointSet s = CodePointSet::Of('\n');
  s.Add('\r', '\r');
  s.Add(0x2028, 0x2029);
  return s;
}

// Surrogates are not characters UTF-8 can carry: no set ever contains them.
CodePointSet Encodable(const CodePointSet& s) { return s.Minus(CodePointSet::Range(0xD800, 0xDFFF)); }

// The JSON escape Python's json.dumps writes for a character JSON must escape.
std::string JsonEscape(uint32_t cp) {
  switch (cp) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: return fmt::format("\\u{:04x}", cp);
  }
}

std::string Utf8(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

const std::string kEmpty = "\"\"";

// A piece of regex as GBNF. For a piece that may match the empty string,
// `non_empty` matches the same strings but the empty one (nullopt: it
// matches only the empty string); a piece that may not is its own non-empty
// part, and keeps no copy of it. GBNF refuses x* when x can match the empty
// string (left recursion, for its parser), so a repetition of such a piece
// is written over its non-empty part: (x)* = (x')*.
struct Fragment {
  std::string text;
  bool nullable = false;
  std::optional<std::string> non_empty;  // only for a nullable piece

  static Fragment Char(std::string text) { return {std::move(text), false, std::nullopt}; }
  static Fragment Empty() { return {kEmpty, true, std::nullopt}; }
  bool MatchesOnlyEmpty() const { return nullable && !non_empty; }
  const std::string& NonEmpty() const { return nullable ? *non_empty : text; }  // not MatchesOnlyEmpty()
};

// a b, appended to a in place (a pattern of n pieces is built in O(n)).
std::string Concat(std::string a, const std::string& b) {
  if (a == kEmpty) return b;
  if (b == kEmpty) return a;
  a += ' ';
  a += b;
  return a;
}

std::string JoinAlternatives(const std::vector<std::string>& alternatives) {
  if (alternatives.size() == 1) return alternatives[0];
  std::string out;
  for (const auto& a : alternatives) out += (out.empty() ? "" : " | ") + a;
  return "(" + out + ")";
}

Fragment Sequence(Fragment a, const Fragment& b) {
  std::optional<std::string> non_empty;
  if (a.nullable && b.nullable) {  // (ab)' = a' b | b'
    std::vector<std::string> alts;
    if (a.non_empty) alts.push_back(Concat(GbnfGroup(*a.non_empty), b.text));
    if (b.non_empty) alts.push_back(*b.non_empty);
    if (!alts.empty()) non_empty = JoinAlternatives(alts);
  }
  a.text = Concat(std::move(a.text), b.text);
  a.nullable = a.nullable && b.nullable;
  a.non_empty = std::move(non_empty);
  return a;
}

Fragment Alternation(const std::vector<Fragment>& parts) {
  if (parts.size() == 1) return parts[0];
  Fragment out;
  std::vector<std::string> texts, non_empty;
  for (const auto& p : parts) {
    texts.push_back(p.text);
    out.nullable = out.nullable || p.nullable;
    if (!p.MatchesOnlyEmpty()) non_empty.push_back(p.NonEmpty());
  }
  out.text = JoinAlternatives(texts);
  if (out.nullable && !non_empty.empty()) out.non_empty = JoinAlternatives(non_empty);
  return out;
}

class RegexConverter {
 public:
  RegexConverter(std::string_view pattern, const RegexGbnfOptions& options, GbnfRules* rules,
                 std::string_view name_hint)
      : pattern_(pattern), options_(options), rules_(rules), name_hint_(name_hint) {
    for (size_t i = 0; i < pattern.size();) {
      offsets_.push_back(i);
      cps_.push_back(DecodeUtf8(pattern, &i));
    }
    offsets_.push_back(pattern.size());
  }

  std::string Convert() {
    std::vector<std::string> alternatives;
    do {
      alternatives.push_back(TopLevelAlternative());
    } while (Take('|'));
    if (Peek() == ')') Fail("unmatched ')'");
    RIDGE_CHECK(Peek() == kEnd);
    return JoinAlternatives(alternatives);
  }

 private:
  [[noreturn]] void Fail(std::string_view what) const {
    throw Error(fmt::format("{} at offset {} of regex '{}'", what, offsets_[std::min(pos_, cps_.size())], pattern_));
  }

  static uint32_t DecodeUtf8(std::string_view s, size_t* i) {
    const auto b = static_cast<unsigned char>(s[*i]);
    const int len = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xE ? 3 : (b >> 3) == 0x1E ? 4 : 0;
    if (len == 0 || *i + len > s.size()) throw Error(fmt::format("regex '{}' is not valid UTF-8", s));
    uint32_t cp = len == 1 ? b : b & (0x7F >> len);
    for (int k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[*i + k]) & 0x3F);
    *i += len;
    return cp;
  }

  uint32_t Peek(size_t ahead = 0) const { return pos_ + ahead < cps_.size() ? cps_[pos_ + ahead] : kEnd; }
  bool Take(uint32_t cp) {
    if (Peek() != cp) return false;
    ++pos_;
    return true;
  }

  // One alternative of the whole pattern, where ^ and $ may stand at the ends.
  std::string TopLevelAlternative() {
    const bool anchored_start = Take('^');
    const std::string body = Alternative(/*top_level=*/true).text;
    const bool anchored_end = Take('$');
    if (Peek() != '|' && Peek() != kEnd && Peek() != ')') Fail("'$' is supported only at the end of the pattern");
    if (!options_.search) return body;
    const std::string any = AnyRepeated();
    return Concat(Concat(anchored_start ? kEmpty : any, body), anchored_end ? kEmpty : any);
  }

  // Any sequence of characters, for the unanchored ends of a search.
  std::string AnyRepeated() {
    if (any_rule_.empty()) {
      any_rule_ = rules_->FreshName(std::string(name_hint_) + "-any");
      rules_->Define(any_rule_, GbnfGroup(SetExpression(CodePointSet::All())) + "*");
    }
    return any_rule_;
  }

  // f, or a failure where its text passes kMaxRegexGbnfBytes: a piece that
  // may match nothing is written twice (as itself and as its non-empty part),
  // so text can double with each nested quantifier or nullable neighbour.
  Fragment Bounded(Fragment f) const {
    const size_t bytes = f.text.size() + (f.non_empty ? f.non_empty->size() : 0);
    if (static_cast<int64_t>(bytes) > kMaxRegexGbnfBytes)
      Fail(fmt::format("the pattern's grammar would pass {} bytes", kMaxRegexGbnfBytes));
    return f;
  }

  // A fresh rule of this body, by name.
  std::string Named(std::string body, std::string_view what) {
    const std::string name = rules_->FreshName(std::string(name_hint_) + "-" + std::string(what));
    rules_->Define(name, std::move(body));
    return name;
  }

  Fragment Disjunction() {
    std::vector<Fragment> alternatives;
    do {
      alternatives.push_back(Alternative(false));
    } while (Take('|'));
    return Bounded(Alternation(alternatives));
  }

  Fragment Alternative(bool top_level) {
    Fragment out = Fragment::Empty();
    while (Peek() != kEnd && Peek() != '|' && Peek() != ')') {
      if (Peek() == '$' && top_level && (Peek(1) == kEnd || Peek(1) == '|')) break;
      if (Peek() == '^' || Peek() == '$') Fail(fmt::format("anchor '{}' is supported only at the ends of the pattern",
                                                           static_cast<char>(Peek())));
      Fragment piece = Quantified(Atom());
      // A run of pieces that may match nothing writes the run so far into its
      // non-empty part at every step: name that part once it is long.
      if (piece.nullable && out.nullable && out.non_empty && out.non_empty->size() > 24)
        out.non_empty = Named(std::move(*out.non_empty), "seq");
      out = Bounded(Sequence(std::move(out), piece));
    }
    return out;
  }

  Fragment Quantified(Fragment atom) {
    int64_t min = 1, max = 1;
    const size_t start = pos_;
    if (Take('*')) {
      min = 0, max = -1;
    } else if (Take('+')) {
      min = 1, max = -1;
    } else if (Take('?')) {
      min = 0, max = 1;
    } else if (Peek() == '{') {
      if (!Braces(&min, &max)) return atom;  // a literal '{' (Annex B), read as the next atom
    } else {
      return atom;
    }
    Take('?');  // lazy: same language
    if (Peek() == '*' || Peek() == '+' || Peek() == '?' || (Peek() == '{' && LooksLikeBraces()))
      Fail("nothing to repeat (a quantifier follows a quantifier)");
    if (max >= 0 && max < min) {
      pos_ = start;
      Fail("numbers out of order in {} quantifier");
    }
    if (min > kMaxRegexRepeat || max > kMaxRegexRepeat) {
      pos_ = start;
      Fail(fmt::format("repetition count above {} is not supported", kMaxRegexRepeat));
    }
    if (max == 0 || atom.MatchesOnlyEmpty()) return Fragment::Empty();
    // A piece that may match nothing repeats as its non-empty part, any number
    // of times up to max (its m required copies may each be empty).
    std::string item = atom.NonEmpty();
    if (atom.nullable) min = 0;
    // Repetitions copy the item (a bounded one max times, and the text and
    // its non-empty part each hold it): give a long item a rule of its own, or
    // nested quantifiers, "((a)*)*", double the text at every level.
    if (item.size() > 24) item = Named(std::move(item), "item");
    Fragment out{GbnfRepeat(item, min, max), min == 0, std::nullopt};
    if (min == 0) out.non_empty = GbnfRepeat(item, 1, max);
    return Bounded(out);
  }

  bool LooksLikeBraces() {
    const size_t saved = pos_;
    int64_t a = 0, b = 0;
    const bool ok = Braces(&a, &b);
    pos_ = saved;
    return ok;
  }

  // {m} {m,} {m,n}; false (position unchanged) when the text is not one.
  bool Braces(int64_t* min, int64_t* max) {
    const size_t saved = pos_;
    Take('{');
    auto number = [&](int64_t* out) {
      if (Peek() < '0' || Peek() > '9') return false;
      *out = 0;
      while (Peek() >= '0' && Peek() <= '9') *out = std::min<int64_t>(*out * 10 + (cps_[pos_++] - '0'), 1 << 30);
      return true;
    };
    if (!number(min)) {
      pos_ = saved;
      return false;
    }
    *max = *min;
    if (Take(',')) {
      if (!number(max)) *max = -1;
    }
    if (!Take('}')) {
      pos_ = saved;
      return false;
    }
    return true;
  }

  Fragment Atom() {
    const uint32_t c = Peek();
    switch (c) {
      case '.':
        ++pos_;
        return Fragment::Char(SetExpression(LineTerminators().Complement()));
      case '[': return Fragment::Char(SetExpression(ClassSet()));
      case '(': return Group();
      case '\\': {
        ++pos_;
        return EscapeAtom();
      }
      case '*':
      case '+':
      case '?': Fail("nothing to repeat");
      case '{':
        if (LooksLikeBraces()) Fail("nothing to repeat");
        ++pos_;
        return Fragment::Char(LiteralExpression(c));
      default: ++pos_; return Fragment::Char(LiteralExpression(c));
    }
  }

  Fragment Group() {
    const size_t start = pos_;  // errors point at the '('
    Take('(');
    if (Take('?')) {
      if (Take(':')) {
      } else if (Peek() == '=' || Peek() == '!') {
        pos_ = start;
        Fail("lookahead is not supported");
      } else if (Peek() == '<' && (Peek(1) == '=' || Peek(1) == '!')) {
        pos_ = start;
        Fail("lookbehind is not supported");
      } else if (Take('<')) {
        while (Peek() != '>' && Peek() != kEnd) ++pos_;
        if (!Take('>')) Fail("unterminated group name");
      } else {
        pos_ = start;
        Fail("this group syntax (inline flags?) is not supported");
      }
    }
    Fragment inner = Disjunction();
    if (!Take(')')) Fail("missing ')'");
    inner.text = GbnfGroup(inner.text);
    if (inner.non_empty) inner.non_empty = GbnfGroup(*inner.non_empty);
    return inner;
  }

  Fragment EscapeAtom() {
    const uint32_t c = Peek();
    if (c == kEnd) Fail("'\\' at the end of the pattern");
    const bool backreference = (c >= '1' && c <= '9') || (c == 'k' && Peek(1) == '<');
    if (backreference || c == 'b' || c == 'B') --pos_;  // point at the '\'
    if (backreference) Fail("backreferences are not supported");
    if (c == 'b' || c == 'B') Fail(fmt::format("word boundary '\\{}' is not supported", static_cast<char>(c)));
    if (std::optional<CodePointSet> set = ClassEscape()) return Fragment::Char(SetExpression(*set));
    return Fragment::Char(LiteralExpression(CharacterEscape()));
  }

  // \d \D \w \W \s \S (position after the '\'); nullopt for anything else.
  std::optional<CodePointSet> ClassEscape() {
    const uint32_t c = Peek();
    CodePointSet set;
    switch (c) {
      case 'd': case 'D': set = Digits(); break;
      case 'w': case 'W': set = WordChars(); break;
      case 's': case 'S': set = Spaces(); break;
      case 'p': case 'P': Fail("Unicode property escapes are not supported");
      default: return std::nullopt;
    }
    ++pos_;
    return (c == 'D' || c == 'W' || c == 'S') ? set.Complement() : set;
  }

  // One escaped character (position after the '\').
  uint32_t CharacterEscape() {
    const uint32_t c = cps_[pos_++];
    switch (c) {
      case 't': return '\t';
      case 'n': return '\n';
      case 'r': return '\r';
      case 'v': return '\v';
      case 'f': return '\f';
      case '0':
        if (Peek() >= '0' && Peek() <= '9') Fail("octal escapes are not supported");
        return 0;
      case 'c':
        if ((Peek() | 0x20) >= 'a' && (Peek() | 0x20) <= 'z') return cps_[pos_++] % 32;
        Fail("'\\c' must be followed by a letter");
      case 'x': return Hex(2);
      case 'u':
        if (Take('{')) {
          uint32_t cp = 0;
          int digits = 0;
          while (Peek() != '}' && Peek() != kEnd) {
            cp = cp * 16 + HexDigit();
            if (++digits > 6 || cp > CodePointSet::kMaxCodePoint) Fail("code point out of range");
          }
          if (!Take('}') || digits == 0) Fail("bad \\u{...} escape");
          return cp;
        }
        return Hex(4);
      default: return c;  // identity escape: \. \* \/ \\ ...
    }
  }

  uint32_t HexDigit() {
    const uint32_t c = Peek();
    if (c >= '0' && c <= '9') return ++pos_, c - '0';
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') return ++pos_, (c | 0x20) - 'a' + 10;
    Fail("expected a hexadecimal digit");
  }

  uint32_t Hex(int digits) {
    uint32_t cp = 0;
    for (int k = 0; k < digits; ++k) cp = cp * 16 + HexDigit();
    return cp;
  }

  // [...]: position at '['.
  CodePointSet ClassSet() {
    Take('[');
    const bool negated = Take('^');
    CodePointSet set;
    while (Peek() != ']') {
      if (Peek() == kEnd) Fail("missing ']'");
      std::optional<CodePointSet> atom_set;
      uint32_t lo = ClassAtom(&atom_set);
      if (!atom_set && Peek() == '-' && Peek(1) != ']' && Peek(1) != kEnd) {
        ++pos_;
        std::optional<CodePointSet> hi_set;
        const uint32_t hi = ClassAtom(&hi_set);
        if (hi_set) Fail("a class escape cannot end a range");
        if (hi < lo) Fail("range out of order in character class");
        set.Add(lo, hi);
      } else if (atom_set) {
        set.Add(*atom_set);
      } else {
        set.Add(lo, lo);
      }
    }
    Take(']');
    if (negated) set = set.Complement();
    if (Encodable(set).empty()) Fail("this character class matches nothing");
    return set;
  }

  // One class member: a character (returned) or a class escape (*set).
  uint32_t ClassAtom(std::optional<CodePointSet>* set) {
    if (!Take('\\')) return cps_[pos_++];
    if (Peek() == kEnd) Fail("'\\' at the end of the pattern");
    if (Take('b')) return '\b';  // backspace inside a class
    if (Peek() == '-') return cps_[pos_++];
    *set = ClassEscape();
    if (*set) return 0;
    if (Peek() >= '1' && Peek() <= '9') Fail("backreferences are not supported");
    return CharacterEscape();
  }

  std::string LiteralExpression(uint32_t cp) {
    if (options_.json_string_content && (cp < 0x20 || cp == '"' || cp == '\\')) return GbnfLiteral(JsonEscape(cp));
    if (cp >= 0xD800 && cp <= 0xDFFF) Fail("a lone surrogate cannot be matched");
    return GbnfLiteral(Utf8(cp));
  }

  // One character of `set`, written as JSON needs it when json_string_content.
  std::string SetExpression(const CodePointSet& raw) {
    const CodePointSet set = Encodable(raw);
    if (!options_.json_string_content) return GbnfCharClass(set);
    CodePointSet must_escape = CodePointSet::Range(0, 0x1F);
    must_escape.Add('"', '"');
    must_escape.Add('\\', '\\');
    std::vector<std::string> alternatives;
    const CodePointSet plain = set.Minus(must_escape);
    if (!plain.empty()) alternatives.push_back(GbnfCharClass(plain));
    const CodePointSet escaped = set.Intersect(must_escape);
    for (auto [lo, hi] : escaped.ranges())
      for (uint32_t cp = lo; cp <= hi; ++cp) alternatives.push_back(GbnfLiteral(JsonEscape(cp)));
    return JoinAlternatives(alternatives);
  }

  std::string_view pattern_;
  RegexGbnfOptions options_;
  GbnfRules* rules_;
  std::string_view name_hint_;
  std::vector<uint32_t> cps_;
  std::vector<size_t> offsets_;  // byte offset of each code point, and the end
  size_t pos_ = 0;
  std::string any_rule_;
};

}  // namespace

std::string RegexToGbnfExpression(std::string_view pattern, const RegexGbnfOptions& options, GbnfRules* rules,
                                  std::string_view name_hint) {
  return RegexConverter(pattern, options, rules, name_hint).Convert();
}

std::string RegexToGbnf(std::string_view pattern) {
  GbnfRules rules;
  rules.Define("root", "");
  rules.Define("root", RegexToGbnfExpression(pattern, RegexGbnfOptions{}, &rules, "re"));
  return rules.Text();
}

}  // namespace ridge::grammar
