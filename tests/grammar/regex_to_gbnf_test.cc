// The regex front end: a table of patterns, a differential test against
// std::regex (ECMAScript, an independent implementation) on random strings,
// and the constructs it refuses.
#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/grammar/gbnf.h"
#include "ridge/grammar/matcher.h"
#include "ridge/grammar/regex_to_gbnf.h"

namespace ridge::grammar {
namespace {

TEST(RegexToGbnfTest, Table) {
  struct Case {
    std::string regex;
    std::vector<std::string> accept, reject;
  };
  const std::vector<Case> cases = {
      {"abc", {"abc"}, {"", "ab", "abcd", "xabc"}},
      {"^a.c$", {"abc", "a-c", "a\xC3\xA9" "c"}, {"a\nc", "ac", "abbc"}},
      {"[a-c]+x?", {"a", "cab", "bx"}, {"", "x", "d", "ax x"}},
      {"[^a-c]", {"d", "\xE4\xB8\xAD", "\n"}, {"a", "b", "dd"}},
      {"\\d{3}-\\d{2,4}", {"123-45", "000-9999"}, {"12-45", "123-4", "123-45678", "abc-12"}},
      {"\\w+@\\w+\\.(com|org)", {"a_1@b.com", "x@y.org"}, {"a@b.net", "@b.com", "a b@c.com"}},
      {"(?:ab|cd){2}", {"abab", "abcd", "cdcd"}, {"ab", "ababab", "abc"}},
      {"a{2,}", {"aa", "aaaaaa"}, {"", "a"}},
      {"a{0}b", {"b"}, {"ab"}},
      {"[\\s\\S]", {" ", "\t", "x"}, {"", "xy"}},
      {"\\S\\s\\D\\W", {"a b.", "x\tz-"}, {"a b_", "a b1", "  x."}},
      {"[\\d.-]+", {"1.5-2", "-"}, {"a", ""}},
      {"\\u00e9\\x41\\t", {"\xC3\xA9" "A\t"}, {"eA\t"}},
      {"a|b|", {"a", "b", ""}, {"ab"}},
      {"x*?y+?", {"y", "xxyy"}, {"x"}},
      {"a{,2}", {"a{,2}"}, {"a", "aa"}},  // not a quantifier: literal text (Annex B)
      {"\\.\\*\\/\\\\", {".*/\\"}, {"a*/\\"}},
  };
  for (const auto& c : cases) {
    auto grammar = ParseGbnf(RegexToGbnf(c.regex));
    for (const auto& s : c.accept) EXPECT_TRUE(MatchesWhole(*grammar, s)) << c.regex << " should match " << s;
    for (const auto& s : c.reject) EXPECT_FALSE(MatchesWhole(*grammar, s)) << c.regex << " should not match " << s;
  }
}

// Random ASCII strings over a small alphabet: the grammar and std::regex
// (ECMAScript) agree on every one.
TEST(RegexToGbnfTest, AgreesWithStdRegex) {
  const std::vector<std::string> patterns = {
      "a*b", "(ab|a)*c?", "[abc]{1,3}d*", "^(a|b)+$", "a?b?c?", "(a(b(c)?)?)+", "[^ab]+", "\\d+(\\.\\d+)?",
      "(?:a|bc){2,3}", "a.c", "[a-c\\d]{0,2}x", ".*a.*", "(\\w\\s?)+", "(a|)+b", "[-a]+", "[a-]{2}",
      // repetitions of pieces that can match nothing (written over their non-empty part)
      "(a?)*b", "(a*b*)*c", "(|a)+", "(a?b?){2}c", "((a|)(b|))*",
  };
  const std::string alphabet = "abcx1. _\n";
  std::mt19937 rng(14);
  for (const auto& pattern : patterns) {
    auto grammar = ParseGbnf(RegexToGbnf(pattern));
    const std::regex re(pattern, std::regex::ECMAScript);
    int matched = 0;
    for (int i = 0; i < 1500; ++i) {
      std::string s;
      const int len = static_cast<int>(rng() % 6);
      for (int k = 0; k < len; ++k) s += alphabet[rng() % alphabet.size()];
      const bool expected = std::regex_match(s, re);
      matched += expected;
      EXPECT_EQ(MatchesWhole(*grammar, s), expected) << "pattern " << pattern << " on '" << s << "'";
    }
    EXPECT_GT(matched, 0) << pattern << ": the random strings never matched, the test proves little";
  }
}

TEST(RegexToGbnfTest, SearchModeMatchesAnywhere) {
  GbnfRules rules;
  rules.Define("root", RegexToGbnfExpression("b+c", {.search = true}, &rules, "p"));
  auto grammar = ParseGbnf(rules.Text());
  for (const char* s : {"bc", "abbcd", "xxbc", "bcyy"}) EXPECT_TRUE(MatchesWhole(*grammar, s)) << s;
  for (const char* s : {"", "b", "cb", "ac"}) EXPECT_FALSE(MatchesWhole(*grammar, s)) << s;

  GbnfRules anchored;
  anchored.Define("root", RegexToGbnfExpression("^ab|cd$", {.search = true}, &anchored, "p"));
  auto g2 = ParseGbnf(anchored.Text());
  for (const char* s : {"ab", "abx", "xcd", "cd"}) EXPECT_TRUE(MatchesWhole(*g2, s)) << s;
  for (const char* s : {"xab", "cdx"}) EXPECT_FALSE(MatchesWhole(*g2, s)) << s;
}

TEST(RegexToGbnfTest, JsonStringContentUsesEscapes) {
  GbnfRules rules;
  rules.Define("root", RegexToGbnfExpression("^a\"[^x]$", {.json_string_content = true}, &rules, "p"));
  auto grammar = ParseGbnf(rules.Text());
  EXPECT_TRUE(MatchesWhole(*grammar, "a\\\"b"));
  EXPECT_TRUE(MatchesWhole(*grammar, "a\\\"\\n"));      // newline, written \n
  EXPECT_TRUE(MatchesWhole(*grammar, "a\\\"\\u0001"));  // other controls as \u00XX
  EXPECT_TRUE(MatchesWhole(*grammar, "a\\\"\\\\"));     // backslash
  EXPECT_FALSE(MatchesWhole(*grammar, "a\"b"));         // a raw quote would end the JSON string
  EXPECT_FALSE(MatchesWhole(*grammar, "a\\\"\n"));      // a raw newline is not JSON
  EXPECT_FALSE(MatchesWhole(*grammar, "a\\\"x"));
}

std::string Repeated(std::string_view piece, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += piece;
  return out;
}

// A piece that may match nothing is written as itself and as its non-empty
// part, and a repetition holds its item in both: nested quantifiers once
// doubled the text at every level (500 levels never finished, and a server
// thread grew to gigabytes), and a run of optional pieces copied the run at
// every step (20,000 "a?" took 16 s). Both are now linear in the pattern.
TEST(RegexToGbnfTest, NestedAndOptionalPiecesStayLinear) {
  EXPECT_LT(RegexToGbnf(Repeated("(", 500) + "a" + Repeated(")*", 500)).size(), 100u * 500);
  EXPECT_LT(RegexToGbnf(Repeated("(", 500) + "ab" + Repeated(")+", 500)).size(), 100u * 500);
  EXPECT_LT(RegexToGbnf(Repeated("a?", 20000)).size(), 100u * 20000);
  // The same shapes, small enough to match, match what they should.
  const auto nested = ParseGbnf(RegexToGbnf(Repeated("(", 6) + "a" + Repeated(")*", 6)));
  EXPECT_TRUE(MatchesWhole(*nested, "aaaa"));
  EXPECT_TRUE(MatchesWhole(*nested, ""));
  EXPECT_FALSE(MatchesWhole(*nested, "ab"));
  const auto plus = ParseGbnf(RegexToGbnf(Repeated("(", 6) + "ab" + Repeated(")+", 6)));
  EXPECT_TRUE(MatchesWhole(*plus, "ababab"));
  EXPECT_FALSE(MatchesWhole(*plus, "aba"));
  EXPECT_FALSE(MatchesWhole(*plus, ""));
  const auto optional = ParseGbnf(RegexToGbnf(Repeated("a?", 30) + "b"));
  EXPECT_TRUE(MatchesWhole(*optional, Repeated("a", 30) + "b"));
  EXPECT_TRUE(MatchesWhole(*optional, "b"));
  EXPECT_FALSE(MatchesWhole(*optional, Repeated("a", 31) + "b"));
}

// Parses alive at once are bounded (kMaxStacks): "a?" × 2000 could place one
// 'a' in any of its 2000 slots, and the rest of the pattern after each.
TEST(RegexToGbnfTest, TooManyParsesFailWithAClearError) {
  GrammarMatcher matcher(ParseGbnf(RegexToGbnf(Repeated("a?", 2000))));
  const std::vector<Stack> before = matcher.stacks();
  try {
    matcher.AcceptBytes("a");
    ADD_FAILURE() << "accepted, " << matcher.stacks().size() << " parses alive";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("too ambiguous to constrain generation"), std::string::npos) << e.what();
  }
  EXPECT_EQ(matcher.stacks(), before);  // all or nothing, as for a rejected byte
  EXPECT_TRUE(MatchesWhole(*ParseGbnf(RegexToGbnf(Repeated("a?", 100))), Repeated("a", 60)));
}

TEST(RegexToGbnfTest, RefusesWhatItCannotMatch) {
  struct Case {
    std::string regex, message;
  };
  const std::vector<Case> cases = {
      {"(a)\\1", "backreferences are not supported at offset 3"},
      {"(?<n>a)\\k<n>", "backreferences"},
      {"a(?=b)", "lookahead is not supported at offset 1"},
      {"a(?!b)", "lookahead"},
      {"(?<=a)b", "lookbehind"},
      {"(?<!a)b", "lookbehind"},
      {"\\bword", "word boundary '\\b'"},
      {"a^b", "anchor '^'"},
      {"a$b", "'$' is supported only at the end"},
      {"(a", "missing ')'"},
      {"a)", "unmatched ')'"},
      {"[a", "missing ']'"},
      {"*a", "nothing to repeat"},
      {"a**", "nothing to repeat"},
      {"a{3,2}", "numbers out of order"},
      {"[z-a]", "range out of order"},
      {"a{1001}", "repetition count above 1000"},
      {"\\p{L}", "Unicode property escapes"},
      {"(?i)a", "inline flags"},
      {"[^\\s\\S]", "matches nothing"},
      {"\\", "at the end of the pattern"},
  };
  for (const auto& c : cases) {
    try {
      RegexToGbnf(c.regex);
      ADD_FAILURE() << c.regex << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << c.regex << ": " << e.what();
      EXPECT_NE(std::string(e.what()).find("regex '" + c.regex + "'"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace ridge::grammar
