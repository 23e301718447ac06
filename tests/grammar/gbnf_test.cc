// The GBNF parser: what it builds (checked through the matcher) and the
// errors it reports, each with the line and column of the problem.
#include <gtest/gtest.h>

#include <string>

#include "grammars.h"
#include "ridge/base/error.h"
#include "ridge/grammar/gbnf.h"
#include "ridge/grammar/matcher.h"

namespace ridge::grammar {
namespace {

std::string ParseError(std::string_view gbnf) {
  try {
    ParseGbnf(gbnf);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(GbnfTest, ParsesTheSharedGrammars) {
  for (std::string_view gbnf : {testing::kJsonGbnf, testing::kArithmeticGbnf, testing::kListGbnf}) {
    EXPECT_NO_THROW(ParseGbnf(gbnf)) << gbnf;
  }
}

TEST(GbnfTest, ErrorsNameLineAndColumn) {
  struct Case {
    std::string_view gbnf;
    std::string expected;  // the whole message
  };
  const Case cases[] = {
      {"root ::= \"a\" b\n", "grammar line 1 col 14: rule 'b' is used but never defined"},
      {"start ::= \"a\"\n", "grammar line 1 col 1: no rule named 'root' (the start symbol)"},
      {"root ::= \"a\nb\n", "grammar line 1 col 10: unterminated string literal"},
      {"root ::= x\nx ::= [a-z\n", "grammar line 2 col 7: unterminated character class"},
      {"root ::= x\nx ::= x \"a\" | \"b\"\n",
       "grammar line 2 col 1: rule 'x' is left-recursive (x -> x, consuming no input): not supported; rewrite it with "
       "repetition (a repetition of something that may match the empty string is left-recursive too)"},
      {"root ::= (\"a\" | \"b\"\n", "grammar line 2 col 1: expected ')' to close the group at line 1 col 10, found the end of the grammar"},
      {"root ::= \"a\" )\n", "grammar line 1 col 14: expected a newline or the end of rule 'root', found ')'"},
      {"root = \"a\"\n", "grammar line 1 col 6: expected '::=' after rule name 'root', found '='"},
      {"root ::= \"\\q\"\n", "grammar line 1 col 11: unknown escape '\\q' (known: \\n \\r \\t \\\\ \\\" \\[ \\] \\xHH \\uHHHH \\UHHHHHHHH)"},
      {"root ::= \"\\x4\"\n", "grammar line 1 col 11: escape needs 2 hex digits"},
      {"root ::= \"\\uD800\"\n", "grammar line 1 col 11: U+D800 is not a Unicode scalar value (above U+10FFFF or a surrogate)"},
      {"root ::= [z-a]\n", "grammar line 1 col 11: character range U+007A-U+0061 is reversed"},
      {"root ::= []\n", "grammar line 1 col 10: empty character class"},
      {"root ::= [^\\x00-\\U0010FFFF]\n", "grammar line 1 col 10: character class matches no character"},
      {"root ::= * \"a\"\n", "grammar line 1 col 10: a repetition must follow an element"},
      {"root ::= \"a\"{3,2}\n", "grammar line 1 col 13: repetition {3,2} has its maximum below its minimum"},
      {"root ::= \"a\"{x}\n", "grammar line 1 col 14: expected a number, found 'x'"},
      {"root ::= \"a\"{2\n", "grammar line 1 col 15: expected '}' to close the repetition, found a newline"},
      {"root ::= \"a\"{1000000}\n", "grammar line 1 col 14: repetition count over 100000"},
      {"root ::= (((\"ab\"{1000}){1000}){1000})\n",
       "grammar line 1 col 31: grammar too large: over 4194304 elements once repetitions are expanded"},
      {"root ::= x\nx ::= \"a\" x\n", "grammar line 2 col 1: rule 'x' can never finish: each of its alternatives recurses without end"},
      {"root ::= \"a\"\nroot ::= \"b\"\n", "grammar line 2 col 1: rule 'root' is defined twice (first at line 1 col 1)"},
      {"root ::= \"a\" x ::= \"b\"\n", "grammar line 1 col 14: rule 'x' starts on the line of the previous rule: put it on its own line"},
      {"root ::= <[123]>\n", "grammar line 1 col 10: token references (<[id]>, <|name|>) are not supported: write the text instead"},
      {"root ::= [\xC3]\n", "grammar line 1 col 11: invalid UTF-8 in a character class"},
      {"root ::= (\"a\"?)*\n", "(left recursion)"},
  };
  for (const Case& c : cases) {
    const std::string error = ParseError(c.gbnf);
    if (c.expected == "(left recursion)") {
      EXPECT_NE(error.find("is left-recursive"), std::string::npos) << c.gbnf << "\n" << error;
    } else {
      EXPECT_EQ(error, c.expected) << c.gbnf;
    }
  }
}

TEST(GbnfTest, LeftRecursionThroughNullableRules) {
  // a reaches itself after `opt`, which may match nothing.
  const std::string error = ParseError("root ::= a\na ::= opt a \"x\" | \"y\"\nopt ::= \"z\"?\n");
  EXPECT_NE(error.find("grammar line 2 col 1: rule 'a' is left-recursive (a -> a"), std::string::npos) << error;
}

TEST(GbnfTest, NamesMayHoldDashesDigitsAndUnderscores) {
  auto grammar = ParseGbnf("root ::= json-value_2\njson-value_2 ::= \"x\"\n");
  EXPECT_TRUE(MatchesWhole(*grammar, "x"));
}

TEST(GbnfTest, EmptyAlternativesAndLiterals) {
  auto grammar = ParseGbnf("root ::= \"\" | \"a\" \"\"* | ( )\n");
  EXPECT_TRUE(MatchesWhole(*grammar, ""));
  EXPECT_TRUE(MatchesWhole(*grammar, "a"));
  EXPECT_FALSE(MatchesWhole(*grammar, "aa"));
}

TEST(GbnfTest, RangeAcrossTheSurrogatesSkipsThem) {
  auto grammar = ParseGbnf("root ::= [\\uD7FF-\\uE000]\n");
  EXPECT_TRUE(MatchesWhole(*grammar, "\xED\x9F\xBF"));
  EXPECT_TRUE(MatchesWhole(*grammar, "\xEE\x80\x80"));
  EXPECT_FALSE(MatchesWhole(*grammar, "\xED\xA0\x80"));
}

TEST(GbnfTest, CrLfLineEnds) {
  auto grammar = ParseGbnf("root ::= a \"!\"\r\na ::= [a-c]+\r\n");
  EXPECT_TRUE(MatchesWhole(*grammar, "abc!"));
  EXPECT_FALSE(MatchesWhole(*grammar, "abc"));
}

// A JSON schema's enum becomes one line of alternatives. The parser records
// every element's line and column; found by a scan from the start each time,
// 10^5 alternatives took a minute (the server's 4 MiB body holds ~4 × that).
TEST(GbnfTest, ManyAlternativesOnOneLine) {
  constexpr int kAlternatives = 100000;
  std::string gbnf = "root ::= \"w0\"";
  for (int i = 1; i < kAlternatives; ++i) gbnf += " | \"w" + std::to_string(i) + "\"";
  const std::string line = gbnf;
  gbnf += "\n";
  auto grammar = ParseGbnf(gbnf);
  // (Matching it would keep 10^5 parses alive, past kMaxStacks.)
  EXPECT_EQ(grammar->rule_alternatives[grammar->root].size(), static_cast<size_t>(kAlternatives));
  // The position of an error at the end of such a line, after a line before it.
  EXPECT_EQ(ParseError("x ::= \"x\"\n" + line + " | y\n"),
            "grammar line 2 col " + std::to_string(line.size() + 4) + ": rule 'y' is used but never defined");
}

TEST(GbnfTest, IdenticalClassesShareOneRule) {
  const auto one = ParseGbnf("root ::= [^\"] [^\"]\n");
  const auto two = ParseGbnf("root ::= [^\"]\n");
  EXPECT_EQ(one->rule_names.size(), two->rule_names.size());
}

}  // namespace
}  // namespace ridge::grammar
