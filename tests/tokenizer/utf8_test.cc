// UTF-8 well-formedness (Unicode table 3-7) and U+FFFD replacement by maximal subparts.
#include <gtest/gtest.h>

#include "ridge/tokenizer/utf8.h"

namespace ridge::utf8 {
namespace {

const std::string kFffd(kReplacement);

std::string Drain(std::string bytes, bool final, std::string* rest = nullptr) {
  std::string out;
  DrainValid(&bytes, final, &out);
  if (rest) *rest = bytes;
  return out;
}

TEST(Utf8, ClassifiesWellFormedSequences) {
  EXPECT_EQ(Classify("a").n_bytes, 1);
  EXPECT_EQ(Classify("\xC3\xA9x").kind, SeqKind::kValid);
  EXPECT_EQ(Classify("\xC3\xA9x").n_bytes, 2);
  EXPECT_EQ(Classify("\xE2\x82\xAC").n_bytes, 3);       // €
  EXPECT_EQ(Classify("\xF0\x9F\xA6\x99").n_bytes, 4);   // 🦙
  EXPECT_EQ(Classify("\xF4\x8F\xBF\xBF").kind, SeqKind::kValid);  // U+10FFFF
  EXPECT_TRUE(IsValid("h\xC3\xA9llo \xE6\x97\xA5 \xF0\x9F\xA6\x99"));
  EXPECT_TRUE(IsValid(""));
}

TEST(Utf8, ClassifiesIllFormedAndIncompleteSequences) {
  auto kind = [](std::string_view s) { return Classify(s).kind; };
  auto n = [](std::string_view s) { return Classify(s).n_bytes; };
  EXPECT_EQ(kind("\x80"), SeqKind::kInvalid);          // lone continuation
  EXPECT_EQ(kind("\xC0\xAF"), SeqKind::kInvalid);      // overlong lead
  EXPECT_EQ(n("\xC0\xAF"), 1);
  EXPECT_EQ(kind("\xE0\x80\x80"), SeqKind::kInvalid);  // overlong 3-byte
  EXPECT_EQ(kind("\xED\xA0\x80"), SeqKind::kInvalid);  // surrogate U+D800
  EXPECT_EQ(kind("\xF4\x90\x80\x80"), SeqKind::kInvalid);  // above U+10FFFF
  EXPECT_EQ(kind("\xF5\x80"), SeqKind::kInvalid);
  EXPECT_EQ(kind("\xE2\x82x"), SeqKind::kInvalid);     // truncated by a non-continuation
  EXPECT_EQ(n("\xE2\x82x"), 2);                         // maximal subpart E2 82
  EXPECT_EQ(kind("\xE2"), SeqKind::kIncomplete);
  EXPECT_EQ(kind("\xF0\x9F\xA6"), SeqKind::kIncomplete);
  EXPECT_EQ(n("\xF0\x9F\xA6"), 3);
  EXPECT_FALSE(IsValid("\xF0\x9F\xA6"));
}

TEST(Utf8, DrainHoldsIncompleteTailAndReplacesInvalid) {
  std::string rest;
  EXPECT_EQ(Drain("ab\xE2\x82", false, &rest), "ab");
  EXPECT_EQ(rest, "\xE2\x82");
  EXPECT_EQ(Drain("ab\xE2\x82", true, &rest), "ab" + kFffd);  // one U+FFFD for the maximal subpart
  EXPECT_EQ(rest, "");
  EXPECT_EQ(Drain("\xC0\x80z", false), kFffd + kFffd + "z");
  EXPECT_EQ(Drain("\xE2\x82x\xE2\x82\xAC", false), kFffd + "x\xE2\x82\xAC");
  EXPECT_EQ(Drain("\xFF", false), kFffd);  // never completable: replaced at once
}

TEST(Utf8, AppendCodepoint) {
  std::string s;
  for (uint32_t cp : {0x41u, 0xE9u, 0x20ACu, 0x1F999u}) AppendCodepoint(cp, &s);
  EXPECT_EQ(s, "A\xC3\xA9\xE2\x82\xAC\xF0\x9F\xA6\x99");
}

}  // namespace
}  // namespace ridge::utf8
