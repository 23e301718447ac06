// Byte-level BPE on hand-made vocabularies, and against a naive string-based
// BPE (one merge at a time: lowest rank, leftmost) on the real GPT-2 and
// Llama 3 vocabularies.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "ridge/base/error.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/tokenizer/pretokenizer.h"
#include "ridge/tokenizer/tokenizer.h"
#include "ridge/tokenizer/tokenizer_state.h"
#include "test_paths.h"
#include "test_vocabs.h"

namespace ridge {
namespace {

using testing::BpeVocab;
using tokenizer_detail::ByteToUnicode;
using Ids = std::vector<int32_t>;

TEST(Bpe, ByteToUnicodeIsGpt2sTable) {
  EXPECT_EQ(ByteToUnicode()['A'], "A");
  EXPECT_EQ(ByteToUnicode()[' '], "\xC4\xA0");   // Ġ U+0120
  EXPECT_EQ(ByteToUnicode()['\n'], "\xC4\x8A");  // Ċ U+010A
  EXPECT_EQ(ByteToUnicode()[0], "\xC4\x80");     // Ā U+0100
  EXPECT_EQ(ByteToUnicode()[0xAD], "\xC5\x83");  // the last unprintable byte: U+0143
  EXPECT_EQ(ByteToUnicode()[0xFF], "\xC3\xBF");  // ÿ
  for (int b = 0; b < 256; ++b) {
    const std::string& s = ByteToUnicode()[b];
    const uint32_t cp = s.size() == 1 ? static_cast<uint8_t>(s[0])
                                      : ((static_cast<uint8_t>(s[0]) & 0x1Fu) << 6) | (static_cast<uint8_t>(s[1]) & 0x3Fu);
    EXPECT_EQ(tokenizer_detail::UnicodeToByte(cp), b);
  }
}

TEST(Bpe, LowerRankMergesFirst) {
  // ids: 256 "ab", 257 "bc"
  const Tokenizer bc_first = Tokenizer::FromVocab(BpeVocab({"ab", "bc"}, {"b c", "a b"}));
  EXPECT_EQ(bc_first.Encode("abc", false), (Ids{'a', 257}));
  const Tokenizer ab_first = Tokenizer::FromVocab(BpeVocab({"ab", "bc"}, {"a b", "b c"}));
  EXPECT_EQ(ab_first.Encode("abc", false), (Ids{256, 'c'}));
  EXPECT_EQ(ab_first.Decode(Ids{256, 'c'}), "abc");
}

TEST(Bpe, MergesChainAndSpacesAreMappedBytes) {
  const std::string G = ByteToUnicode()[' '];  // Ġ
  // 256 he, 257 ll, 258 hell, 259 hello, 260 Ġh, 261 Ġhello
  const Tokenizer tok = Tokenizer::FromVocab(
      BpeVocab({"he", "ll", "hell", "hello", G + "h", G + "hello"},
               {"h e", "l l", "he ll", "hell o", G + " h", G + "h e", G + " hello"}));
  EXPECT_EQ(tok.Encode("hello", false), (Ids{259}));
  EXPECT_EQ(tok.Encode("hellx", false), (Ids{258, 'x'}));
  // " hello": h e, l l, he ll, hell o, then Ġ hello (rank 6); Ġ h (rank 4) went stale on the way.
  EXPECT_EQ(tok.Encode(" hello", false), (Ids{261}));
  EXPECT_EQ(tok.Encode(" hex", false), (Ids{' ', 256, 'x'}));  // h e (rank 0) before Ġ h (rank 4)
  EXPECT_EQ(tok.Encode(" hx", false), (Ids{260, 'x'}));
  EXPECT_EQ(tok.Decode(tok.Encode(" hello hell", false)), " hello hell");
  EXPECT_EQ(tok.TokenPiece(260), G + "h");
  EXPECT_EQ(tok.TokenBytes(260), " h");
  EXPECT_EQ(tok.n_merges_skipped(), 1);  // "Ġh e": "Ġhe" is no token
  EXPECT_FALSE(tok.add_space_prefix());
  EXPECT_EQ(tok.Decode(Ids{' ', 'a'}), " a");  // byte-level BPE drops no space
}

TEST(Bpe, Llama3KeepsWholeWordTokensWithoutMerges) {
  // "hello" is a token but no merges lead to it.
  const Tokenizer gpt2 = Tokenizer::FromVocab(BpeVocab({"hello"}, {}, "gpt-2"));
  EXPECT_EQ(gpt2.Encode("hello", false), (Ids{'h', 'e', 'l', 'l', 'o'}));
  const Tokenizer llama3 = Tokenizer::FromVocab(BpeVocab({"hello"}, {}, "llama-bpe"));
  EXPECT_EQ(llama3.Encode("hello", false), (Ids{256}));
}

TEST(Bpe, InvalidUtf8RoundTripsThroughByteTokens) {
  const Tokenizer tok = Tokenizer::FromVocab(BpeVocab({"ab"}, {"a b"}));
  const std::string bad = "ab\xFF\xC3(ab \xE2\x82";
  const Ids ids = tok.Encode(bad, false);
  EXPECT_EQ(tok.Decode(ids), bad);
  EXPECT_EQ(ids.front(), 256);
  EXPECT_EQ(ids[1], 0xFF);
}

TEST(Bpe, SpecialTokens) {
  const Tokenizer tok = Tokenizer::FromVocab(BpeVocab({}, {}));
  const int32_t eot = tok.n_vocab() - 1;
  EXPECT_EQ(tok.FindToken("<|endoftext|>"), eot);
  const Ids literal = tok.Encode("a<|endoftext|>", false);
  EXPECT_EQ(literal.size(), 14u);
  EXPECT_EQ(tok.Decode(literal), "a<|endoftext|>");
  EXPECT_EQ(tok.Encode("a<|endoftext|>b", false, true), (Ids{'a', eot, 'b'}));
  EXPECT_EQ(tok.Decode(Ids{'a', eot, 'b'}), "ab");  // control tokens print nothing
  EXPECT_TRUE(tok.IsEndOfGeneration(eot));
}

TEST(Bpe, MalformedMergeAndUnknownPreTokenizerAreErrors) {
  EXPECT_THROW(Tokenizer::FromVocab(BpeVocab({}, {"ab"})), Error);
  EXPECT_THROW(Tokenizer::FromVocab(BpeVocab({}, {"a "})), Error);
  try {
    Tokenizer::FromVocab(BpeVocab({}, {}, "no-such-family"));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.pre = 'no-such-family'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("deepseek-llm"), std::string::npos) << e.what();
  }
}

// One merge at a time over strings: the lowest-ranked adjacent pair, leftmost.
Ids NaiveBpeWord(const Tokenizer& tok, const std::map<std::pair<std::string, std::string>, int>& ranks,
                 std::string_view word) {
  std::vector<std::string> parts;
  for (const char c : word) parts.push_back(ByteToUnicode()[static_cast<uint8_t>(c)]);
  while (parts.size() > 1) {
    int best = -1;
    size_t best_i = 0;
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
      const auto it = ranks.find({parts[i], parts[i + 1]});
      if (it != ranks.end() && (best < 0 || it->second < best)) {
        best = it->second;
        best_i = i;
      }
    }
    if (best < 0) break;
    parts[best_i] += parts[best_i + 1];
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(best_i) + 1);
  }
  Ids out;
  for (const std::string& p : parts) out.push_back(tok.FindToken(p));
  return out;
}

class BpeVsNaive : public ::testing::TestWithParam<const char*> {};

TEST_P(BpeVsNaive, RandomTextsGiveTheSameIds) {
  const GgufFile file = GgufFile::Open(testing::SharedDir() + "/vocab/" + GetParam());
  const Tokenizer tok = Tokenizer::FromGguf(file);
  std::map<std::pair<std::string, std::string>, int> ranks;
  const std::vector<std::string>& merges = tok.vocab().merges;
  for (size_t i = 0; i < merges.size(); ++i) {
    const size_t space = merges[i].find(' ', 1);
    ranks.emplace(std::make_pair(merges[i].substr(0, space), merges[i].substr(space + 1)), static_cast<int>(i));
  }
  const auto pre = tokenizer_detail::Pretokenizer::Create(tok.pre());
  const std::vector<std::string> alphabet = {"a", "e", "t", "h", "n", "s", "o", "i", "r", "l", " ", "  ", ".", ",",
                                             "'", "!", "\n", "1", "9", "T", "Q", "\xC3\xA9", "\xE6\x97\xA5",
                                             "\xF0\x9F\xA6\x99", "\t", "ing", "the", "ation", "\xFF"};
  std::mt19937 rng(7);
  const bool whole_words = tok.pre() == "llama-bpe";
  for (int trial = 0; trial < 300; ++trial) {
    std::string text;
    const int n = static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) text += alphabet[rng() % alphabet.size()];
    std::vector<std::string_view> words;
    pre->Split(text, &words);
    Ids expected;
    for (const std::string_view w : words) {
      std::string mapped;
      for (const char c : w) mapped += ByteToUnicode()[static_cast<uint8_t>(c)];
      if (whole_words && tok.FindToken(mapped) >= 0) {
        expected.push_back(tok.FindToken(mapped));
        continue;
      }
      const Ids word_ids = NaiveBpeWord(tok, ranks, w);
      expected.insert(expected.end(), word_ids.begin(), word_ids.end());
    }
    EXPECT_EQ(tok.Encode(text, false), expected) << "text '" << text << "'";
    EXPECT_EQ(tok.Decode(tok.Encode(text, false)), text);
  }
}

INSTANTIATE_TEST_SUITE_P(SharedVocab, BpeVsNaive,
                         ::testing::Values("ggml-vocab-gpt-2.gguf", "ggml-vocab-llama-bpe.gguf"));

}  // namespace
}  // namespace ridge
