#include "ridge/grammar/gbnf.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/grammar/grammar_builder.h"
#include "ridge/tokenizer/utf8.h"

namespace ridge::grammar {
namespace {

using Alternative = GrammarBuilder::Alternative;

constexpr int kUnbounded = -1;
constexpr int kMaxRepetitionCount = 100000;

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Recursive descent over the text, one rule at a time, straight into the builder.
class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text) {
    for (size_t i = 0; i < text_.size(); ++i)
      if (text_[i] == '\n') line_starts_.push_back(i + 1);
  }

  std::shared_ptr<const Grammar> Parse() {
    SkipSpace(true);
    while (!AtEnd()) {
      ParseRule();
      SkipSpace(true);
    }
    return builder_.Build("root");
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek(size_t ahead = 0) const { return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0'; }

  // Line and column of a byte offset (past the end: of the end). A lookup in
  // the lines' starts: every element records where it came from, and a scan
  // from the start each time made a grammar of one long line (a JSON schema's
  // enum of 10^5 values) quadratic, a minute of a server thread.
  SourcePos PosOf(size_t offset) const {
    offset = std::min(offset, text_.size());
    const auto line = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset) - 1;
    return SourcePos{static_cast<int>(line - line_starts_.begin()) + 1, static_cast<int>(offset - *line) + 1};
  }
  SourcePos Here() const { return PosOf(pos_); }

  std::string Found() const {
    if (AtEnd()) return "the end of the grammar";
    const char c = Peek();
    if (c == '\n') return "a newline";
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F) {
      return fmt::format("byte 0x{:02X}", static_cast<unsigned char>(c));
    }
    return fmt::format("'{}'", c);
  }

  // Spaces, tabs, '\r', comments; newlines too when `newlines`.
  void SkipSpace(bool newlines) {
    while (!AtEnd()) {
      const char c = Peek();
      if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++pos_;
      } else if (c == '#') {
        while (!AtEnd() && Peek() != '\n') ++pos_;
      } else {
        return;
      }
    }
  }

  // After a sequence ended at a newline outside parentheses: does the next
  // non-blank line start with '|' (a continued list of alternatives)?
  bool ContinuesOnNextLine() {
    const size_t saved = pos_;
    SkipSpace(true);
    if (Peek() == '|') return true;
    pos_ = saved;
    return false;
  }

  std::string_view ParseName() {
    const size_t start = pos_;
    while (!AtEnd() && IsNameChar(Peek())) ++pos_;
    if (pos_ == start) FailAt(Here(), "expected a rule name, found {}", Found());
    return text_.substr(start, pos_ - start);
  }

  void ParseRule() {
    const SourcePos rule_pos = Here();
    const std::string_view name = ParseName();
    SkipSpace(false);
    if (text_.substr(pos_, 3) != "::=") FailAt(Here(), "expected '::=' after rule name '{}', found {}", name, Found());
    pos_ += 3;
    SkipSpace(true);
    const int32_t rule = builder_.RuleNamed(name, rule_pos);
    std::vector<Alternative> alternatives = ParseAlternatives(name, false);
    if (!AtEnd() && Peek() != '\n') FailAt(Here(), "expected a newline or the end of rule '{}', found {}", name, Found());
    builder_.Define(rule, std::move(alternatives), rule_pos);
  }

  std::vector<Alternative> ParseAlternatives(std::string_view rule_name, bool nested) {
    std::vector<Alternative> alternatives;
    alternatives.push_back(ParseSequence(rule_name, nested));
    while (Peek() == '|' || (!nested && Peek() == '\n' && ContinuesOnNextLine())) {
      ++pos_;
      SkipSpace(true);
      alternatives.push_back(ParseSequence(rule_name, nested));
    }
    return alternatives;
  }

  Alternative ParseSequence(std::string_view rule_name, bool nested) {
    Alternative seq;
    size_t last_start = std::string_view::npos;  // where the element a postfix applies to begins in `seq`
    for (;;) {
      const size_t start = pos_;
      const char c = Peek();
      if (AtEnd()) break;
      if (c == '"') {
        last_start = seq.size();
        ParseLiteral(&seq);
      } else if (c == '[') {
        last_start = seq.size();
        seq.push_back(ParseClass());
      } else if (c == '.') {
        ++pos_;
        last_start = seq.size();
        seq.push_back(builder_.CodePoints({{0, kMaxCodePoint}}, PosOf(start)));
      } else if (c == '(') {
        ++pos_;
        SkipSpace(true);
        std::vector<Alternative> group = ParseAlternatives(rule_name, true);
        if (Peek() != ')') FailAt(Here(), "expected ')' to close the group at line {} col {}, found {}",
                                  PosOf(start).line, PosOf(start).col, Found());
        ++pos_;
        last_start = seq.size();
        if (group.size() == 1) {
          seq.insert(seq.end(), group[0].begin(), group[0].end());
        } else {
          const int32_t rule = builder_.NewRule(rule_name, PosOf(start));
          builder_.Define(rule, std::move(group), PosOf(start));
          seq.push_back(Element{Element::Kind::kRule, rule});
        }
      } else if (IsNameChar(c)) {
        const std::string_view name = ParseName();
        const size_t after_name = pos_;
        SkipSpace(false);
        if (text_.substr(pos_, 3) == "::=") {
          FailAt(PosOf(start), "rule '{}' starts on the line of the previous rule: put it on its own line", name);
        }
        pos_ = after_name;
        last_start = seq.size();
        seq.push_back(Element{Element::Kind::kRule, builder_.RuleNamed(name, PosOf(start))});
      } else if (c == '*' || c == '+' || c == '?') {
        ++pos_;
        const int min = c == '+' ? 1 : 0;
        const int max = c == '?' ? 1 : kUnbounded;
        ApplyRepetition(rule_name, &seq, last_start, min, max, PosOf(start));
      } else if (c == '{') {
        ParseBraces(rule_name, &seq, last_start);
      } else if (c == '<') {
        FailAt(Here(), "token references (<[id]>, <|name|>) are not supported: write the text instead");
      } else {
        break;
      }
      SkipSpace(nested);
    }
    return seq;
  }

  // `"..."`: one kBytes element per byte of its UTF-8 text.
  void ParseLiteral(Alternative* seq) {
    const SourcePos start = Here();
    ++pos_;
    std::string bytes;
    for (;;) {
      if (AtEnd()) FailAt(start, "unterminated string literal");
      const char c = Peek();
      if (c == '"') break;
      if (c == '\\') {
        utf8::AppendCodepoint(ParseEscape(), &bytes);
      } else {
        bytes.push_back(c);
        ++pos_;
      }
    }
    ++pos_;
    for (char b : bytes) {
      ByteSet set;
      set.AddRange(static_cast<uint8_t>(b), static_cast<uint8_t>(b));
      seq->push_back(builder_.Bytes(set));
    }
  }

  uint32_t ParseEscape() {
    const SourcePos start = Here();
    ++pos_;  // the backslash
    if (AtEnd()) FailAt(start, "unterminated escape");
    const char c = Peek();
    ++pos_;
    switch (c) {
      case 'n': return '\n';
      case 'r': return '\r';
      case 't': return '\t';
      case '\\': case '"': case '[': case ']': case '-': case '^': return static_cast<uint8_t>(c);
      case 'x': return ParseHex(2, start);
      case 'u': return ParseHex(4, start);
      case 'U': return ParseHex(8, start);
      default: break;
    }
    FailAt(start, "unknown escape '\\{}' (known: \\n \\r \\t \\\\ \\\" \\[ \\] \\xHH \\uHHHH \\UHHHHHHHH)", c);
  }

  uint32_t ParseHex(int n_digits, SourcePos escape_pos) {
    uint64_t value = 0;
    for (int i = 0; i < n_digits; ++i) {
      const int digit = HexValue(Peek());
      if (AtEnd() || digit < 0) FailAt(escape_pos, "escape needs {} hex digits", n_digits);
      value = value * 16 + static_cast<uint64_t>(digit);
      ++pos_;
    }
    if (value > kMaxCodePoint || (value >= 0xD800 && value <= 0xDFFF)) {
      FailAt(escape_pos, "U+{:X} is not a Unicode scalar value (above U+10FFFF or a surrogate)", value);
    }
    return static_cast<uint32_t>(value);
  }

  // One character of a class: an escape or a UTF-8 encoded code point.
  uint32_t ParseClassChar() {
    if (Peek() == '\\') return ParseEscape();
    const utf8::SeqInfo info = utf8::Classify(text_.substr(pos_));
    if (info.kind != utf8::SeqKind::kValid) FailAt(Here(), "invalid UTF-8 in a character class");
    const auto* b = reinterpret_cast<const unsigned char*>(text_.data() + pos_);
    uint32_t cp = info.n_bytes == 1 ? b[0] : b[0] & (0x7F >> info.n_bytes);
    for (int i = 1; i < info.n_bytes; ++i) cp = (cp << 6) | (b[i] & 0x3F);
    pos_ += static_cast<size_t>(info.n_bytes);
    return cp;
  }

  Element ParseClass() {
    const SourcePos start = Here();
    ++pos_;
    const bool negate = Peek() == '^';
    if (negate) ++pos_;
    std::vector<CodePointRange> ranges;
    for (;;) {
      if (AtEnd()) FailAt(start, "unterminated character class");
      if (Peek() == ']') break;
      const SourcePos item_pos = Here();
      const uint32_t first = ParseClassChar();
      uint32_t last = first;
      if (Peek() == '-' && Peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        last = ParseClassChar();
        if (last < first) FailAt(item_pos, "character range U+{:04X}-U+{:04X} is reversed", first, last);
      }
      ranges.push_back({first, last});
    }
    ++pos_;
    if (ranges.empty() && !negate) FailAt(start, "empty character class");
    ranges = NormalizeRanges(std::move(ranges), negate);
    if (ranges.empty()) FailAt(start, "character class matches no character");
    return builder_.CodePoints(ranges, start);
  }

  int ParseCount() {
    const SourcePos start = Here();
    int64_t value = 0;
    if (Peek() < '0' || Peek() > '9') FailAt(start, "expected a number, found {}", Found());
    while (!AtEnd() && Peek() >= '0' && Peek() <= '9') {
      value = value * 10 + (Peek() - '0');
      if (value > kMaxRepetitionCount) FailAt(start, "repetition count over {}", kMaxRepetitionCount);
      ++pos_;
    }
    return static_cast<int>(value);
  }

  // {m}, {m,}, {m,n}, {,n}
  void ParseBraces(std::string_view rule_name, Alternative* seq, size_t last_start) {
    const SourcePos start = Here();
    ++pos_;
    SkipSpace(false);
    int min = 0;
    int max = kUnbounded;
    if (Peek() != ',') min = ParseCount();
    SkipSpace(false);
    if (Peek() == ',') {
      ++pos_;
      SkipSpace(false);
      if (Peek() != '}') max = ParseCount();
    } else {
      max = min;
    }
    SkipSpace(false);
    if (Peek() != '}') FailAt(Here(), "expected '}}' to close the repetition, found {}", Found());
    ++pos_;
    if (max != kUnbounded && max < min) FailAt(start, "repetition {{{},{}}} has its maximum below its minimum", min, max);
    ApplyRepetition(rule_name, seq, last_start, min, max, start);
  }

  // Replaces the element(s) from `last_start` with their repetition, as
  // llama.cpp expands it: S{m,} = S..S (m times) R with R ::= S R | "";
  // S{m,n} = S..S then n-m nested optionals R_k ::= S R_(k-1) | "".
  void ApplyRepetition(std::string_view rule_name, Alternative* seq, size_t last_start, int min, int max,
                       SourcePos pos) {
    if (last_start == std::string_view::npos) FailAt(pos, "a repetition must follow an element");
    const Alternative item(seq->begin() + static_cast<std::ptrdiff_t>(last_start), seq->end());
    seq->resize(last_start);
    if (item.empty()) return;  // ""* is ""
    const int64_t copies = static_cast<int64_t>(max == kUnbounded ? min : max) + 1;
    if (builder_.n_elements() + static_cast<int64_t>(seq->size()) + copies * static_cast<int64_t>(item.size() + 1) >
        kMaxElements) {
      FailAt(pos, "grammar too large: over {} elements once repetitions are expanded", kMaxElements);
    }
    for (int i = 0; i < min; ++i) seq->insert(seq->end(), item.begin(), item.end());
    if (max == kUnbounded) {
      const int32_t rule = builder_.NewRule(rule_name, pos);
      Alternative again = item;
      again.push_back(Element{Element::Kind::kRule, rule});
      builder_.Define(rule, {std::move(again), {}}, pos);
      seq->push_back(Element{Element::Kind::kRule, rule});
      return;
    }
    int32_t tail = -1;
    for (int k = 0; k < max - min; ++k) {
      const int32_t rule = builder_.NewRule(rule_name, pos);
      Alternative alt = item;
      if (tail >= 0) alt.push_back(Element{Element::Kind::kRule, tail});
      builder_.Define(rule, {std::move(alt), {}}, pos);
      tail = rule;
    }
    if (tail >= 0) seq->push_back(Element{Element::Kind::kRule, tail});
  }

  std::string_view text_;
  std::vector<size_t> line_starts_{0};  // offset of each line's first byte
  size_t pos_ = 0;
  GrammarBuilder builder_;
};

}  // namespace

std::shared_ptr<const Grammar> ParseGbnf(std::string_view text) { return GbnfParser(text).Parse(); }

}  // namespace ridge::grammar
