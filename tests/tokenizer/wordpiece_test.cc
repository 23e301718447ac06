// WordPiece (BERT) on a hand-made vocabulary: normalization, splitting and
// longest-piece matching, and what happens to text it cannot cover.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/tokenizer/tokenizer.h"
#include "test_vocabs.h"

namespace ridge {
namespace {

using Ids = std::vector<int32_t>;
using testing::kSp;

// 0 [PAD], 1 [UNK], 2 [CLS], 3 [SEP], then word starts "▁x" and bare continuations.
Vocab WordPieceVocab(bool with_unk = true) {
  Vocab v;
  v.model = TokenizerModel::kWordPiece;
  v.tokens = {"[PAD]", "[UNK]", "[CLS]", "[SEP]",           // 0..3
              kSp + "un", "aff", "able", kSp + "cafe",      // 4..7
              kSp + ",", kSp + "!", kSp + "\xE4\xBD\xA0",   // 8..10: ▁, ▁! ▁你
              kSp + "\xE5\xA5\xBD", kSp + "hello", "s"};    // 11..13: ▁好 ▁hello s
  v.types.assign(v.tokens.size(), TokenType::kNormal);
  for (int id = 0; id < 4; ++id) v.types[id] = TokenType::kControl;
  v.scores.assign(v.tokens.size(), 0.0f);
  v.unk_id = with_unk ? 1 : -1;
  v.bos_id = 2;
  v.eos_id = 3;
  v.add_bos = v.add_eos = true;
  v.lowercase = v.strip_accents = true;
  return v;
}

TEST(WordPiece, LongestPiecesFirstWithWordStarts) {
  const Tokenizer tok = Tokenizer::FromVocab(WordPieceVocab());
  EXPECT_EQ(tok.Encode("unaffable", false), (Ids{4, 5, 6}));
  EXPECT_EQ(tok.Encode("unaffable hellos", true, false, true), (Ids{2, 4, 5, 6, 12, 13, 3}));
  EXPECT_EQ(tok.Decode(Ids{4, 5, 6, 12, 13}), " unaffable hellos");
}

TEST(WordPiece, NormalizesCaseAccentsWhitespaceAndControls) {
  const Tokenizer tok = Tokenizer::FromVocab(WordPieceVocab());
  // Upper case and an accent (precomposed, and e + combining acute) fold away;
  // tabs and line breaks separate words; control characters vanish.
  EXPECT_EQ(tok.Encode("CAF\xC3\x89\tCafe\xCC\x81\n\x01Hello", false), (Ids{7, 7, 12}));
  // CJK ideographs are words of their own even without spaces.
  EXPECT_EQ(tok.Encode("\xE4\xBD\xA0\xE5\xA5\xBD", false), (Ids{10, 11}));
  // Punctuation is split off, one character at a time.
  EXPECT_EQ(tok.Encode("hello,!", false), (Ids{12, 8, 9}));
}

TEST(WordPiece, UncoverableOrOverlongWordsAreOneUnknown) {
  const Tokenizer tok = Tokenizer::FromVocab(WordPieceVocab());
  EXPECT_EQ(tok.Encode("hellox cafe", false), (Ids{1, 7}));  // "x" has no piece: the whole word is [UNK]
  EXPECT_EQ(tok.Encode("un" + std::string(100, 's') + " cafe", false), (Ids{1, 7}));  // > 100 characters
  // Invalid UTF-8 reads as U+FFFD, which the normalizer drops, as it drops NUL.
  EXPECT_EQ(tok.Encode(std::string("cafe\xFF\xC0 hello\0", 12), false), (Ids{7, 12}));
  const Tokenizer no_unk = Tokenizer::FromVocab(WordPieceVocab(/*with_unk=*/false));
  EXPECT_THROW(no_unk.Encode("xyz", false), Error);
}

TEST(WordPiece, CaseAndAccentsKeptWhenTheVocabularySays) {
  Vocab v = WordPieceVocab();
  v.lowercase = v.strip_accents = false;
  const Tokenizer tok = Tokenizer::FromVocab(v);
  EXPECT_EQ(tok.Encode("cafe Cafe", false), (Ids{7, 1}));
}

}  // namespace
}  // namespace ridge
