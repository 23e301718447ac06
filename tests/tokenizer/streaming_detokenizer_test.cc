// The streaming detokenizer emits only whole, valid UTF-8 and, concatenated,
// equals Decode (sanitized) for any id sequence.
#include <gtest/gtest.h>

#include <random>

#include "ridge/gguf/gguf_file.h"
#include "ridge/tokenizer/streaming_detokenizer.h"
#include "ridge/tokenizer/utf8.h"
#include "test_paths.h"
#include "test_vocabs.h"

namespace ridge {
namespace {

using testing::kSp;
using testing::SpmByte;
using Ids = std::vector<int32_t>;

const std::string kFffd(utf8::kReplacement);

Tokenizer SmallSpm() { return Tokenizer::FromVocab(testing::SpmVocab({{kSp, -1}, {"a", -2}, {kSp + "a", -3}})); }
constexpr int32_t kSpace = 259, kA = 260, kSpaceA = 261;

TEST(StreamingDetokenizer, HoldsACharacterSplitOverByteTokens) {
  const Tokenizer tok = SmallSpm();
  const Ids ids = tok.Encode("\xE2\x82\xAC", false);  // € = E2 82 AC, not in the vocabulary
  ASSERT_EQ(ids, (Ids{kSpace, SpmByte(0xE2), SpmByte(0x82), SpmByte(0xAC)}));
  StreamingDetokenizer stream(tok);
  EXPECT_EQ(stream.Push(ids[0]), "");  // the dummy prefix's space is dropped
  EXPECT_EQ(stream.Push(ids[1]), "");
  EXPECT_EQ(stream.n_pending_bytes(), 1u);
  EXPECT_EQ(stream.Push(ids[2]), "");
  EXPECT_EQ(stream.n_pending_bytes(), 2u);
  EXPECT_EQ(stream.Push(ids[3]), "\xE2\x82\xAC");
  EXPECT_EQ(stream.n_pending_bytes(), 0u);
  EXPECT_EQ(stream.Push(kA), "a");
  EXPECT_EQ(stream.Flush(), "");
}

TEST(StreamingDetokenizer, InvalidBytesBecomeReplacementCharacters) {
  const Tokenizer tok = SmallSpm();
  StreamingDetokenizer stream(tok);
  EXPECT_EQ(stream.Push(SpmByte(0xFF)), kFffd);  // can never start a character: replaced at once
  EXPECT_EQ(stream.Push(SpmByte(0xE2)), "");
  EXPECT_EQ(stream.Push(kA), kFffd + "a");        // E2 cut short by "a"
  EXPECT_EQ(stream.Push(SpmByte(0xC0)), kFffd);  // overlong lead
  EXPECT_EQ(stream.Push(SpmByte(0xF0)), "");
  EXPECT_EQ(stream.Push(SpmByte(0x9F)), "");
  EXPECT_EQ(stream.Flush(), kFffd);  // one U+FFFD for the incomplete F0 9F
  EXPECT_EQ(stream.n_pending_bytes(), 0u);
  EXPECT_EQ(stream.Flush(), "");
}

TEST(StreamingDetokenizer, LeadingSpaceRule) {
  const Tokenizer tok = SmallSpm();
  StreamingDetokenizer start(tok);
  EXPECT_EQ(start.Push(kSpaceA), "a");
  EXPECT_EQ(start.Push(kSpaceA), " a");
  StreamingDetokenizer continuation(tok, /*at_sequence_start=*/false);
  EXPECT_EQ(continuation.Push(kSpaceA), " a");
  EXPECT_EQ(continuation.Push(tok.bos_id()), "");
  EXPECT_EQ(continuation.Push(kSpaceA), "a");  // after BOS, as llama2.c prints
  StreamingDetokenizer bytes_first(tok);
  EXPECT_EQ(bytes_first.Push(SpmByte(' ')), " ");  // byte tokens keep their space (llama2.c)
}

TEST(StreamingDetokenizer, MultiTokenEmojiInByteLevelBpe) {
  const GgufFile file = GgufFile::Open(testing::SharedDir() + "/vocab/ggml-vocab-gpt-2.gguf");
  const Tokenizer tok = Tokenizer::FromGguf(file);
  const std::string text = " \xF0\x9F\xA6\x99\xF0\x9F\xA6\x99!";  // " 🦙🦙!"
  const Ids ids = tok.Encode(text, false);
  ASSERT_GT(ids.size(), 3u);
  StreamingDetokenizer stream(tok);
  std::string streamed;
  for (const int32_t id : ids) {
    const std::string piece = stream.Push(id);
    EXPECT_TRUE(utf8::IsValid(piece));
    // Only whole llamas (or the space / "!") ever come out.
    EXPECT_TRUE(piece.empty() || piece == " " || piece == "!" || piece.find("\xF0\x9F\xA6\x99") != std::string::npos)
        << piece;
    streamed += piece;
  }
  streamed += stream.Flush();
  EXPECT_EQ(streamed, text);
}

class StreamingVsDecode : public ::testing::TestWithParam<const char*> {};

TEST_P(StreamingVsDecode, RandomIdsGiveSanitizedDecode) {
  const GgufFile file = GgufFile::Open(testing::SharedDir() + "/vocab/" + GetParam());
  const Tokenizer tok = Tokenizer::FromGguf(file);
  std::mt19937 rng(3);
  for (int trial = 0; trial < 500; ++trial) {
    Ids ids;
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      // Half of the ids from the first 512 (byte tokens and short pieces), the rest anywhere.
      const int32_t limit = rng() % 2 ? 512 : tok.n_vocab();
      ids.push_back(static_cast<int32_t>(rng() % static_cast<uint32_t>(limit)));
    }
    StreamingDetokenizer stream(tok);
    std::string streamed;
    for (const int32_t id : ids) {
      const std::string piece = stream.Push(id);
      ASSERT_TRUE(utf8::IsValid(piece));
      streamed += piece;
    }
    streamed += stream.Flush();
    std::string decoded = tok.Decode(ids);
    std::string expected;
    utf8::DrainValid(&decoded, /*final=*/true, &expected);
    EXPECT_EQ(streamed, expected);
  }
}

INSTANTIATE_TEST_SUITE_P(SharedVocab, StreamingVsDecode,
                         ::testing::Values("ggml-vocab-llama-spm.gguf", "ggml-vocab-gpt-2.gguf"));

}  // namespace
}  // namespace ridge
