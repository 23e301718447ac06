// Gemma 4's tokenizer (tokenizer.ggml.model = gemma4) on a hand-made
// vocabulary: BPE by merge rank over UTF-8 characters with spaces as "▁",
// runs of line breaks as whole tokens, and <0xNN> byte fallback.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/tokenizer/streaming_detokenizer.h"
#include "ridge/tokenizer/tokenizer.h"
#include "test_vocabs.h"

namespace ridge {
namespace {

using Ids = std::vector<int32_t>;
using testing::kSp;

// 0 <pad>, 1 <eos>, 2 <bos>, 3 <unk>, 4..259 <0x00>..<0xFF>, then text tokens.
constexpr int32_t kByte0 = 4;
constexpr int32_t kA = 260, kB = 261, kSpace = 262, kNewline = 263, kTwoNewlines = 264, kAB = 265, kSpaceA = 266;

Vocab Gemma4Vocab() {
  Vocab v;
  v.model = TokenizerModel::kSentencePieceBpe;
  v.pre = "gemma4";
  auto add = [&v](std::string text, TokenType type) {
    v.tokens.push_back(std::move(text));
    v.types.push_back(type);
  };
  add("<pad>", TokenType::kControl);
  add("<eos>", TokenType::kControl);
  add("<bos>", TokenType::kControl);
  add("<unk>", TokenType::kUnknown);
  for (int b = 0; b < 256; ++b) {
    char text[8];
    std::snprintf(text, sizeof(text), "<0x%02X>", b);
    add(text, TokenType::kByte);
  }
  for (const std::string& text : {std::string("a"), std::string("b"), kSp, std::string("\n"), std::string("\n\n"),
                                  std::string("ab"), kSp + "a"}) {
    add(text, TokenType::kNormal);
  }
  v.scores.assign(v.tokens.size(), 0.0f);
  v.merges = {kSp + " a", "a b", "\n \n"};
  v.bos_id = 2;
  v.eos_id = 1;
  v.unk_id = 3;
  v.add_bos = true;
  return v;
}

TEST(Gemma4Bpe, MergesByRankOverCharactersWithSpacesAsLowBlocks) {
  const Tokenizer tok = Tokenizer::FromVocab(Gemma4Vocab());
  EXPECT_EQ(tok.n_merges_skipped(), 0);
  // "ab ab" is "ab▁ab": "▁ a" (rank 0) goes first, so the second "ab" stays apart.
  EXPECT_EQ(tok.Encode("ab ab", false), (Ids{kAB, kSpaceA, kB}));
  EXPECT_EQ(tok.Decode(Ids{kAB, kSpaceA, kB}), "ab ab");
  EXPECT_EQ(tok.Encode("", true), (Ids{2}));
}

TEST(Gemma4Bpe, LineBreakRunsAndByteFallback) {
  const Tokenizer tok = Tokenizer::FromVocab(Gemma4Vocab());
  EXPECT_EQ(tok.Encode("a\n\nb", false), (Ids{kA, kTwoNewlines, kB}));
  EXPECT_EQ(tok.Encode("\n\n\n", false), (Ids{kTwoNewlines, kNewline}));  // no "\n\n\n" token: merges decide
  // "é" has no token: its UTF-8 bytes as <0xC3><0xA9>; invalid bytes likewise.
  const std::string text = "a\xC3\xA9\xFF";
  const Ids ids = tok.Encode(text, false);
  EXPECT_EQ(ids, (Ids{kA, kByte0 + 0xC3, kByte0 + 0xA9, kByte0 + 0xFF}));
  EXPECT_EQ(tok.Decode(ids), text);
  StreamingDetokenizer stream(tok);
  EXPECT_EQ(stream.Push(kByte0 + 0xC3), "");  // half a character is held back
  EXPECT_EQ(stream.Push(kByte0 + 0xA9), "\xC3\xA9");
}

TEST(Gemma4Bpe, ByteTokensMustBeSpelledAsBytes) {
  Vocab v = Gemma4Vocab();
  v.tokens[kByte0 + 7] = "<0xZZ>";
  EXPECT_THROW(Tokenizer::FromVocab(v), Error);
}

}  // namespace
}  // namespace ridge
