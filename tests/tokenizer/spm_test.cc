// SentencePiece-style encoding on hand-made vocabularies (expected ids worked
// out by hand), and against llama2.c's naive algorithm on the real Llama 2 vocabulary.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <unordered_map>

#include "ridge/base/error.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/tokenizer/tokenizer.h"
#include "test_paths.h"
#include "test_vocabs.h"

namespace ridge {
namespace {

using testing::kSp;
using testing::SpmByte;
using testing::SpmVocab;
using Ids = std::vector<int32_t>;

// ids from 259 on
Vocab BasicVocab() {
  return SpmVocab({
      {kSp, -1},        // 259
      {"a", -2},        // 260
      {"b", -2},        // 261
      {"c", -2},        // 262
      {"ab", -5},       // 263
      {"bc", -4},       // 264
      {kSp + "a", -3},  // 265
      {"x", -2},        // 266
      {"y", -2},        // 267
      {"z", -2},        // 268
      {"xy", -6},       // 269
      {"yz", -6},       // 270
  });
}

TEST(Spm, HighestScorePairMergesFirst) {
  const Tokenizer tok = Tokenizer::FromVocab(BasicVocab());
  // "▁abc": "▁a" (-3) beats "bc" (-4) beats "ab" (-5); "ab" is stale once "▁a" formed.
  EXPECT_EQ(tok.Encode("abc", false), (Ids{265, 264}));
  EXPECT_EQ(tok.Decode(Ids{265, 264}), "abc");
}

TEST(Spm, EqualScoresMergeLeftmostFirst) {
  Vocab v = BasicVocab();
  v.add_space_prefix = false;
  const Tokenizer tok = Tokenizer::FromVocab(v);
  EXPECT_EQ(tok.Encode("xyz", false), (Ids{269, 268}));    // xy before yz
  EXPECT_EQ(tok.Encode("zxyz", false), (Ids{268, 269, 268}));
  EXPECT_EQ(tok.Encode("abc", false), (Ids{260, 264}));    // no dummy prefix: bc (-4) before ab (-5)
  EXPECT_EQ(tok.Decode(Ids{259, 260}), " a");              // and no space dropped when decoding
}

TEST(Spm, DummyPrefixSpacesAndBos) {
  const Tokenizer tok = Tokenizer::FromVocab(BasicVocab());
  EXPECT_TRUE(tok.add_space_prefix());
  EXPECT_EQ(tok.Encode("a b", false), (Ids{265, 259, 261}));
  EXPECT_EQ(tok.Encode("a b", true), (Ids{1, 265, 259, 261}));
  EXPECT_EQ(tok.Encode(" a", false), (Ids{259, 265}));
  EXPECT_EQ(tok.Decode(Ids{259, 265}), " a");  // only the dummy prefix's space is dropped
  EXPECT_EQ(tok.Decode(Ids{1, 265, 259, 261}), "a b");
  EXPECT_EQ(tok.Encode("", false), Ids{});
  EXPECT_EQ(tok.Encode("", true), Ids{1});
  EXPECT_EQ(tok.Encode("a", true, false, /*add_eos=*/true), (Ids{1, 265, 2}));
  EXPECT_EQ(tok.Decode(Ids{}), "");
}

TEST(Spm, ByteFallbackForUnknownCharactersAndInvalidUtf8) {
  const Tokenizer tok = Tokenizer::FromVocab(BasicVocab());
  EXPECT_EQ(tok.Encode("\xC3\xA9", false), (Ids{259, SpmByte(0xC3), SpmByte(0xA9)}));  // é
  EXPECT_EQ(tok.Decode(Ids{259, SpmByte(0xC3), SpmByte(0xA9)}), "\xC3\xA9");
  // Invalid UTF-8: each ill-formed byte falls back on its own and round-trips;
  // the valid characters around it still merge.
  const std::string bad = "ab\xFF\xC3(bc";
  const Ids ids = tok.Encode(bad, false);
  EXPECT_EQ(ids, (Ids{265, 261, SpmByte(0xFF), SpmByte(0xC3), SpmByte('('), 264}));
  EXPECT_EQ(tok.Decode(ids), bad);
}

TEST(Spm, WithoutByteTokensFallsBackToUnknown) {
  Vocab v;
  v.model = TokenizerModel::kSentencePiece;
  v.tokens = {"<unk>", kSp, "a"};
  v.types = {TokenType::kUnknown, TokenType::kNormal, TokenType::kNormal};
  v.unk_id = 0;
  v.add_space_prefix = true;
  const Tokenizer tok = Tokenizer::FromVocab(v);
  EXPECT_EQ(tok.Encode("a\xC3\xA9", false), (Ids{1, 2, 0, 0}));
  EXPECT_EQ(tok.Decode(Ids{0}), "\xE2\x96\x85");  // llama.cpp shows <unk> as ▅
  v.unk_id = -1;
  const Tokenizer no_unk = Tokenizer::FromVocab(v);
  EXPECT_THROW(no_unk.Encode("\xC3\xA9", false), Error);
}

TEST(Spm, UnusedTokensAreMergedThroughButNeverEmitted) {
  Vocab v = SpmVocab({{"a", -3}, {"b", -3}, {"c", -3}, {"d", -3}, {"ab", -1}, {"abc", -1.5}, {"abcd", -2}});
  v.add_space_prefix = false;
  v.types[259 + 5] = TokenType::kUnused;  // "abc"
  const Tokenizer tok = Tokenizer::FromVocab(v);
  EXPECT_EQ(tok.Encode("abcd", false), (Ids{259 + 6}));        // ab → abc (unused) → abcd
  EXPECT_EQ(tok.Encode("abc", false), (Ids{259 + 4, 259 + 2}));  // abc resegmented into ab + c
}

TEST(Spm, ControlTokenTextIsLiteralUnlessParsingSpecials) {
  Vocab v = BasicVocab();
  v.tokens.push_back("<");  // 271: so that "<", "/", "s", ">" are not all bytes
  v.scores.push_back(-2);
  v.types.push_back(TokenType::kNormal);
  v.tokens.push_back("</s");  // 272: a normal token that is a prefix of a control token's text
  v.scores.push_back(-1);
  v.types.push_back(TokenType::kNormal);
  const Tokenizer tok = Tokenizer::FromVocab(v);
  const Ids literal = tok.Encode("a</s>b", false);
  EXPECT_EQ(std::count(literal.begin(), literal.end(), 2), 0);
  EXPECT_EQ(tok.Decode(literal), "a</s>b");
  // Split out, and the dummy prefix starts again after the special token (llama.cpp).
  EXPECT_EQ(tok.Encode("a</s>b", false, /*parse_special=*/true), (Ids{265, 2, 259, 261}));
  EXPECT_EQ(tok.Encode("</s></s>", false, true), (Ids{2, 2}));
  EXPECT_EQ(tok.Encode("<s>a", false, true), (Ids{1, 265}));
  // Decoding: control tokens print nothing; the space after BOS is dropped.
  EXPECT_EQ(tok.Decode(Ids{265, 2, 259, 261}), "a b");
  EXPECT_EQ(tok.Decode(Ids{265, 1, 265}), "aa");
}

TEST(Spm, UserDefinedTextIsAlwaysSplitOutMarkupOnlyWhenParsingSpecials) {
  Vocab v = BasicVocab();
  v.tokens.push_back("<t>");  // 271: written like markup, so a special token in all but type (phi-3's </s>)
  v.tokens.push_back("zz");   // 272: an added word (GPT-NeoX's runs of spaces): always text
  v.scores.insert(v.scores.end(), {0, 0});
  v.types.insert(v.types.end(), {TokenType::kUserDefined, TokenType::kUserDefined});
  const Tokenizer tok = Tokenizer::FromVocab(v);
  const Ids literal = tok.Encode("a<t>b", false);
  EXPECT_EQ(std::count(literal.begin(), literal.end(), 271), 0);
  EXPECT_EQ(tok.Decode(literal), "a<t>b");
  EXPECT_EQ(tok.Encode("a<t>b", false, /*parse_special=*/true), (Ids{265, 271, 259, 261}));
  EXPECT_EQ(tok.Decode(Ids{265, 271, 259, 261}), "a<t> b");
  for (const bool parse_special : {false, true}) {
    EXPECT_EQ(tok.Encode("azzb", false, parse_special), (Ids{265, 272, 259, 261}));
  }
}

// Words encode alone unless a token joins a character to a following "▁";
// then merges cross word starts as before.
TEST(Spm, TokensSpanningWordStartsStillMerge) {
  Vocab v = BasicVocab();
  v.tokens.push_back("a" + kSp);  // 271: a character joined to the next word's "▁"
  v.scores.push_back(10);
  v.types.push_back(TokenType::kNormal);
  const Tokenizer joined = Tokenizer::FromVocab(v);
  EXPECT_EQ(joined.Encode("a b", false), (Ids{259, 271, 261}));  // ▁, a▁, b: the pair across the word start wins
  const Tokenizer apart = Tokenizer::FromVocab(BasicVocab());
  EXPECT_EQ(apart.Encode("a b", false), (Ids{265, 259, 261}));  // ▁a, ▁, b
}

TEST(Spm, PiecesBytesAndTypes) {
  const Tokenizer tok = Tokenizer::FromVocab(BasicVocab());
  EXPECT_EQ(tok.TokenPiece(265), kSp + "a");
  EXPECT_EQ(tok.TokenBytes(265), " a");
  EXPECT_EQ(tok.TokenPiece(SpmByte(0x0A)), "<0x0A>");
  EXPECT_EQ(tok.TokenBytes(SpmByte(0x0A)), "\n");
  EXPECT_EQ(tok.TokenBytes(1), "");
  EXPECT_EQ(tok.token_type(1), TokenType::kControl);
  EXPECT_EQ(tok.FindToken("</s>"), 2);
  EXPECT_EQ(tok.FindToken("nope"), -1);
  EXPECT_TRUE(tok.IsEndOfGeneration(2));
  EXPECT_FALSE(tok.IsEndOfGeneration(1));
  EXPECT_FALSE(tok.IsEndOfGeneration(265));
  EXPECT_TRUE(tok.IsControl(1));
  EXPECT_EQ(tok.n_vocab(), 271);
}

// llama2.c's encoder, as the models README describes it: dummy prefix, UTF-8
// characters (unknown ones as byte tokens), then repeatedly merge the adjacent
// pair with the best-scoring merged text, leftmost on ties. Quadratic; fine for tests.
using TextIds = std::unordered_map<std::string, int32_t>;

TextIds NormalTokenIds(const Vocab& v) {
  TextIds ids;
  for (int32_t i = 0; i < v.n_vocab(); ++i) {
    if (v.types[i] == TokenType::kNormal) ids[v.tokens[i]] = i;
  }
  return ids;
}

Ids NaiveSpmEncode(const Vocab& v, const TextIds& ids, const std::string& text) {
  std::string s;
  if (!text.empty()) s = kSp;
  for (const char c : text) s += c == ' ' ? kSp : std::string(1, c);
  std::vector<std::string> pieces;
  for (size_t i = 0; i < s.size();) {
    size_t n = 1;
    while (i + n < s.size() && (static_cast<uint8_t>(s[i + n]) & 0xC0) == 0x80 && n < 4) ++n;
    pieces.push_back(s.substr(i, n));
    i += n;
  }
  while (true) {
    float best = -1e30f;
    int best_i = -1;
    for (size_t i = 0; i + 1 < pieces.size(); ++i) {
      const auto it = ids.find(pieces[i] + pieces[i + 1]);
      if (it != ids.end() && v.scores[it->second] > best) {
        best = v.scores[it->second];
        best_i = static_cast<int>(i);
      }
    }
    if (best_i < 0) break;
    pieces[best_i] += pieces[best_i + 1];
    pieces.erase(pieces.begin() + best_i + 1);
  }
  Ids out;
  for (const std::string& p : pieces) {
    const auto it = ids.find(p);
    if (it != ids.end()) {
      out.push_back(it->second);
    } else {
      for (const char c : p) out.push_back(SpmByte(static_cast<uint8_t>(c)));  // Llama 2: <0x00> is id 3
    }
  }
  return out;
}

TEST(Spm, MatchesNaiveAlgorithmOnLlama2VocabularyForRandomText) {
  const GgufFile file = GgufFile::Open(testing::SharedDir() + "/vocab/ggml-vocab-llama-spm.gguf");
  const Tokenizer tok = Tokenizer::FromGguf(file);
  ASSERT_EQ(tok.FindToken("<0x00>"), 3);
  const std::vector<std::string> alphabet = {"a", "e", "t", "h", "n", "s", "o", "i", "r", "l", " ", " ", "  ", ".", ",",
                                             "'", "!", "\n", "1", "9", "T", "Q", "\xC3\xA9", "\xE6\x97\xA5",
                                             "\xF0\x9F\xA6\x99", "\t", "ing", "the", "ation"};
  const TextIds ids = NormalTokenIds(tok.vocab());
  std::mt19937 rng(42);
  for (int trial = 0; trial < 300; ++trial) {
    std::string text;
    const int n = static_cast<int>(rng() % 30);
    for (int i = 0; i < n; ++i) text += alphabet[rng() % alphabet.size()];
    EXPECT_EQ(tok.Encode(text, false), NaiveSpmEncode(tok.vocab(), ids, text)) << "text '" << text << "'";
    EXPECT_EQ(tok.Decode(tok.Encode(text, true)), text);
  }
}

}  // namespace
}  // namespace ridge
