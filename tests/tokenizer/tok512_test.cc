// The tiny model's tokenizer (tok512.bin) after `ridge convert`'s import:
// encoding matches llama2.c's own algorithm run on the original file, and the
// golden prompts decode back as the reference prints them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/llama2c_import.h"
#include "ridge/tokenizer/streaming_detokenizer.h"
#include "ridge/tokenizer/tokenizer.h"
#include "test_paths.h"

namespace ridge {
namespace {

using Ids = std::vector<int32_t>;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// llama2.c's tokenizer file and its encode(), written from the description in
// ../shared/models/README.md (pieces with plain spaces; ids 3..258 are bytes).
struct Llama2cTokenizer {
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::map<std::string, int32_t> ids;

  explicit Llama2cTokenizer(const std::string& path) {
    const std::string data = ReadFile(path);
    size_t pos = 4;  // max_token_length
    while (pos + 8 <= data.size()) {
      float score;
      int32_t length;
      std::memcpy(&score, data.data() + pos, 4);
      std::memcpy(&length, data.data() + pos + 4, 4);
      pos += 8;
      pieces.push_back(data.substr(pos, static_cast<size_t>(length)));
      scores.push_back(score);
      pos += static_cast<size_t>(length);
    }
    for (size_t i = 0; i < pieces.size(); ++i) ids.emplace(pieces[i], static_cast<int32_t>(i));
  }

  int32_t Lookup(const std::string& s) const {
    const auto it = ids.find(s);
    return it == ids.end() ? -1 : it->second;
  }

  Ids Encode(const std::string& text, bool bos) const {
    Ids tokens;
    if (bos) tokens.push_back(1);
    if (!text.empty()) tokens.push_back(Lookup(" "));
    for (size_t i = 0; i < text.size();) {
      size_t n = 1;
      while (i + n < text.size() && (static_cast<uint8_t>(text[i + n]) & 0xC0) == 0x80 && n < 4) ++n;
      const int32_t id = Lookup(text.substr(i, n));
      if (id >= 0) {
        tokens.push_back(id);
      } else {
        for (size_t j = 0; j < n; ++j) tokens.push_back(static_cast<uint8_t>(text[i + j]) + 3);
      }
      i += n;
    }
    while (true) {
      float best_score = -1e10f;
      int32_t best_id = -1;
      size_t best_index = 0;
      for (size_t i = 0; i + 1 < tokens.size(); ++i) {
        const int32_t id = Lookup(pieces[tokens[i]] + pieces[tokens[i + 1]]);
        if (id >= 0 && scores[id] > best_score) {
          best_score = scores[id];
          best_id = id;
          best_index = i;
        }
      }
      if (best_id < 0) break;
      tokens[best_index] = best_id;
      tokens.erase(tokens.begin() + static_cast<std::ptrdiff_t>(best_index) + 1);
    }
    return tokens;
  }
};

class Tok512 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const std::string models = testing::SharedDir() + "/models";
    const Llama2cCheckpoint checkpoint = Llama2cCheckpoint::Open(models + "/stories260K.bin");
    const Llama2cVocab vocab = ReadLlama2cTokenizer(models + "/tok512.bin", checkpoint.header.vocab_size);
    const GgufWriter writer = BuildLlama2cGguf(checkpoint, vocab, Llama2cConvertOptions{});
    const std::string path = testing::ScratchDir("tok512") + "/stories260K.gguf";
    writer.Write(path);
    const GgufFile file = GgufFile::Open(path);
    tokenizer_ = new Tokenizer(Tokenizer::FromGguf(file));
    reference_ = new Llama2cTokenizer(models + "/tok512.bin");
  }
  static void TearDownTestSuite() {
    delete tokenizer_;
    delete reference_;
  }
  static Tokenizer* tokenizer_;
  static Llama2cTokenizer* reference_;
};
Tokenizer* Tok512::tokenizer_ = nullptr;
Llama2cTokenizer* Tok512::reference_ = nullptr;

TEST_F(Tok512, MetadataAfterConversion) {
  const Tokenizer& tok = *tokenizer_;
  EXPECT_EQ(tok.n_vocab(), 512);
  EXPECT_EQ(tok.model(), TokenizerModel::kSentencePiece);
  EXPECT_EQ(tok.bos_id(), 1);
  EXPECT_EQ(tok.eos_id(), 2);
  EXPECT_TRUE(tok.add_bos());
  EXPECT_TRUE(tok.add_space_prefix());
  EXPECT_TRUE(tok.IsEndOfGeneration(2));
  EXPECT_EQ(tok.TokenBytes(3 + '\n'), "\n");
  ASSERT_EQ(reference_->pieces.size(), 512u);
}

TEST_F(Tok512, GoldenPromptsEncodeAsLlama2cAndDecodeAsItPrints) {
  const Tokenizer& tok = *tokenizer_;
  const auto golden = nlohmann::json::parse(ReadFile(testing::SharedDir() + "/models/stories260K.greedy.json"));
  ASSERT_GE(golden["cases"].size(), 4u);
  for (const auto& c : golden["cases"]) {
    const std::string prompt = c["prompt"];
    const Ids ids = tok.Encode(prompt, tok.add_bos());
    EXPECT_EQ(ids, reference_->Encode(prompt, true)) << "prompt '" << prompt << "'";
    EXPECT_EQ(ids.front(), 1);
    EXPECT_EQ(tok.Decode(ids), prompt);
    // What the engine prints while streaming [BOS, prompt...]: the prompt, no leading space.
    StreamingDetokenizer stream(tok);
    std::string printed;
    for (const int32_t id : ids) printed += stream.Push(id);
    printed += stream.Flush();
    EXPECT_EQ(printed, prompt);

    // The whole reference text too: same ids as llama2.c, and back to itself.
    const std::string expected = c["expected"];
    ASSERT_EQ(expected.rfind(prompt, 0), 0u);
    const Ids text_ids = tok.Encode(expected, true);
    EXPECT_EQ(text_ids, reference_->Encode(expected, true)) << "expected text of '" << prompt << "'";
    EXPECT_EQ(tok.Decode(text_ids), expected);
  }
  // By hand from tok512's pieces: the dummy prefix merges into "▁Once", "▁upon", "▁a", "▁time".
  const Ids once = tok.Encode("Once upon a time", true);
  ASSERT_EQ(once.size(), 5u);
  EXPECT_EQ(tok.TokenPiece(once[1]), "\xE2\x96\x81" "Once");
  EXPECT_EQ(tok.TokenPiece(once[2]), "\xE2\x96\x81" "upon");
  EXPECT_EQ(tok.TokenPiece(once[3]), "\xE2\x96\x81" "a");
  EXPECT_EQ(tok.TokenPiece(once[4]), "\xE2\x96\x81" "time");
}

TEST_F(Tok512, OtherTextsMatchLlama2c) {
  const Tokenizer& tok = *tokenizer_;
  for (const std::string text :
       {"Hello, world!", "  two  spaces", "\xC3\xA9t\xC3\xA9 \xF0\x9F\xA6\x99", "line\nbreak\ttab", "x", " ",
        "The quick brown fox jumps over the lazy dog. 1234567890"}) {
    EXPECT_EQ(tok.Encode(text, true), reference_->Encode(text, true)) << "text '" << text << "'";
    EXPECT_EQ(tok.Decode(tok.Encode(text, true)), text);
  }
}

}  // namespace
}  // namespace ridge
