// Accept/reject tables: each grammar with sentences it must accept whole,
// strings it must reject, and prefixes it must accept without being able to end.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grammars.h"
#include "ridge/grammar/gbnf.h"
#include "ridge/grammar/matcher.h"

namespace ridge::grammar {
namespace {

struct Table {
  std::string_view gbnf;
  std::vector<std::string> accept;  // whole sentences
  std::vector<std::string> reject;  // not sentences
};

void ExpectTable(const Table& table) {
  auto grammar = ParseGbnf(table.gbnf);
  for (const std::string& s : table.accept) EXPECT_TRUE(MatchesWhole(*grammar, s)) << "should accept: " << s;
  for (const std::string& s : table.reject) EXPECT_FALSE(MatchesWhole(*grammar, s)) << "should reject: " << s;
}

TEST(MatcherTest, Json) {
  ExpectTable({testing::kJsonGbnf,
               {"{}", "{ }", R"({"a": 1})", R"({"a":[1, 2.5, -3e10, true, false, null, "x"]})",
                R"({"nested": {"deeper": {"deepest": [[[]]]}}})", R"({"esc": "a\"b\\c\nd\u00e9"})",
                "{\"unicode\": \"h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80\"}", "{\n  \"a\": 1\n}"},
               {"", "[]", "{", R"({"a"})", R"({"a": })", R"({"a": 01x})", R"({"a": "\q"})", "{\"ctl\": \"\x01\"}",
                R"({"a": 1,})", R"({a: 1})", "{\"bad utf8\": \"\xC3\"}", "{\"surrogate\": \"\xED\xA0\x80\"}",
                R"({"a": 1}})", R"({"a": tru})"}});
}

TEST(MatcherTest, Arithmetic) {
  ExpectTable({testing::kArithmeticGbnf,
               {"1", "1+2", "1+2*3", "(1+2)*3", "((((7))))", "-(-3)", "10/5-2*(3+4)"},
               {"", "+", "1+", "(1+2", "1+2)", "1++2", "a", "1 + 2"}});
}

TEST(MatcherTest, List) {
  ExpectTable({testing::kListGbnf, {"- a\n", "- milk\n- eggs\n- \xE2\x9C\x93 done\n"}, {"", "- \n", "- a", "* a\n"}});
}

TEST(MatcherTest, RepetitionBounds) {
  ExpectTable({"root ::= \"a\"{3}", {"aaa"}, {"", "aa", "aaaa"}});
  ExpectTable({"root ::= \"a\"{2,}", {"aa", "aaa", std::string(100, 'a')}, {"", "a"}});
  ExpectTable({"root ::= \"ab\"{1,3}", {"ab", "abab", "ababab"}, {"", "a", "aba", "abababab"}});
  ExpectTable({"root ::= [0-9]{,2} \"x\"", {"x", "1x", "12x"}, {"123x", "1"}});
  ExpectTable({"root ::= (\"a\" | \"bc\"){0,2}", {"", "a", "bc", "abc", "bca", "aa", "bcbc"}, {"aaa", "b", "abcbc"}});
  ExpectTable({"root ::= \"x\"? \"y\"* \"z\"+", {"z", "xz", "xyyzz", "yz"}, {"", "x", "xy", "zx"}});
  ExpectTable({"root ::= \"abc\"*", {"", "abc", "abcabc"}, {"ab", "abca"}});  // applies to the whole literal
}

TEST(MatcherTest, Utf8CharacterClasses) {
  ExpectTable({"root ::= [a-zé-ü€]+",
               {"abc", "\xC3\xA9", "\xC3\xBC", "\xE2\x82\xAC", "a\xC3\xA9z\xE2\x82\xAC"},
               {"\xC3\xA8", "\xC3\xBD", "A", "\xC3", "\xE2\x82"}});
  // Negated classes and '.' match one whole code point of any length.
  ExpectTable({"root ::= [^a] [^a]",
               {"bc", "\xC3\xA9\xF0\x9F\x98\x80", "\xF4\x8F\xBF\xBF\x01"},
               {"ab", "b", "\xC3\xA9", "\xED\xA0\x80" "b", "\xC3\x28" "b"}});
  ExpectTable({"root ::= . \"!\"", {"a!", "\xE2\x82\xAC!", "\xF0\x9F\x98\x80!", "\n!"}, {"!", "ab!", "\xFF!", "\xC0\x80!"}});
  // Ranges across every encoded-length boundary.
  ExpectTable({"root ::= [\\x7E-\\U00010001]",
               {"~", "\x7F", "\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xEF\xBF\xBF", "\xF0\x90\x80\x80",
                "\xF0\x90\x80\x81"},
               {"}", "\xF0\x90\x80\x82", "\xED\xA0\x80", "\xE0\x80\x80"}});
  ExpectTable({"root ::= \"\\u00e9\\U0001F600\\x41\"", {"\xC3\xA9\xF0\x9F\x98\x80" "A"}, {"\xE9\xF0\x9F\x98\x80" "A"}});
}

TEST(MatcherTest, NestedRecursion) {
  ExpectTable({"root ::= \"(\" root \")\" | \"\"", {"", "()", "(())", std::string(200, '(') + std::string(200, ')')},
               {"(", ")", "(()", "())", "()()"}});
  // Mutual recursion through optional parts and a rule used before its definition.
  ExpectTable({"root ::= a\na ::= \"[\" b? \"]\"\nb ::= a (\",\" a)*",
               {"[]", "[[]]", "[[],[[]]]", "[[[],[]],[]]"}, {"[", "[,]", "[[]", "[],[]"}});
}

TEST(MatcherTest, ContinuedAlternativesAndComments) {
  ExpectTable({"root ::= \"a\" # first\n  | \"b\"   # second\n\n  | (\n  \"c\"\n  | \"d\" )\n", {"a", "b", "c", "d"},
               {"", "ab", "e"}});
}

TEST(MatcherTest, AmbiguousGrammarKeepsEveryParse) {
  // "a"* "a"? "ab": the parser cannot know where the run of a's ends.
  ExpectTable({"root ::= \"a\"* \"a\"? \"ab\" | \"a\" \"a\" \"c\"", {"ab", "aab", "aaaab", "aac"}, {"aa", "aaac", "b"}});
}

TEST(MatcherTest, AcceptBytesIsAllOrNothing) {
  GrammarMatcher matcher(ParseGbnf(testing::kArithmeticGbnf));
  EXPECT_FALSE(matcher.CanEnd());
  ASSERT_TRUE(matcher.AcceptBytes("(1+"));
  const GrammarMatcher saved = matcher;
  EXPECT_FALSE(matcher.AcceptBytes("2)x"));  // rejected at 'x': nothing of it is consumed
  EXPECT_EQ(matcher.stacks(), saved.stacks());
  EXPECT_TRUE(matcher.AcceptBytes("2"));
  EXPECT_FALSE(matcher.CanEnd());
  GrammarMatcher clone = matcher;  // a clone goes its own way
  ASSERT_TRUE(clone.AcceptBytes(")"));
  EXPECT_TRUE(clone.CanEnd());
  EXPECT_FALSE(matcher.CanEnd());
  EXPECT_TRUE(matcher.AcceptBytes(""));
}

TEST(MatcherTest, TokensMaySplitCharacters) {
  // A 4-byte character fed one byte at a time, then in uneven pieces.
  auto grammar = ParseGbnf("root ::= [\\U0001F600-\\U0001F64F]+");
  GrammarMatcher matcher(grammar);
  for (char b : std::string("\xF0\x9F\x98\x80")) {
    EXPECT_FALSE(matcher.CanEnd());
    ASSERT_TRUE(matcher.AcceptBytes(std::string(1, b)));
  }
  EXPECT_TRUE(matcher.CanEnd());
  EXPECT_TRUE(matcher.AcceptBytes("\xF0\x9F"));
  EXPECT_FALSE(matcher.CanEnd());
  EXPECT_FALSE(matcher.AcceptBytes("\x9A"));  // U+1F680 is out of the range
  EXPECT_TRUE(matcher.AcceptBytes("\x99\x8F\xF0"));
  EXPECT_FALSE(matcher.CanEnd());
}

}  // namespace
}  // namespace ridge::grammar
