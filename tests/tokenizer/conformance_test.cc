// The llama.cpp conformance files in ../shared/vocab: every input encodes
// (no BOS, no special-token parsing) to exactly the expected ids and decodes
// back to itself, also through the streaming detokenizer, whose every piece is
// whole UTF-8 characters. WordPiece loses case,
// accents and spacing by design; there, decoding gives text that encodes back
// to the same ids, less the [UNK]s (which decode to nothing).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ridge/gguf/gguf_file.h"
#include "ridge/tokenizer/streaming_detokenizer.h"
#include "ridge/tokenizer/tokenizer.h"
#include "ridge/tokenizer/utf8.h"
#include "test_paths.h"

namespace ridge {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

// X.gguf.inp: texts separated by "\n__ggml_vocab_test__\n" (usually also
// after the last; gemma-4's file ends with a text); X.gguf.out: one line of
// space-separated ids per text.
std::vector<Case> ReadCases(const std::string& gguf_path) {
  const std::string inp = ReadFile(gguf_path + ".inp");
  const std::string out = ReadFile(gguf_path + ".out");
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<Case> cases;
  size_t pos = 0;
  while (pos < inp.size()) {
    size_t end = inp.find(separator, pos);
    if (end == std::string::npos) end = inp.size();
    cases.push_back({inp.substr(pos, end - pos), {}});
    pos = end + separator.size();
  }
  std::istringstream lines(out);
  std::string line;
  size_t i = 0;
  while (std::getline(lines, line)) {
    if (i >= cases.size()) {
      ADD_FAILURE() << gguf_path << ".out has more lines than .inp has texts";
      break;
    }
    std::istringstream ids(line);
    int32_t id = 0;
    while (ids >> id) cases[i].ids.push_back(id);
    ++i;
  }
  EXPECT_EQ(i, cases.size()) << gguf_path << ": .out lines vs .inp texts";
  return cases;
}

std::string Printable(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else out += c;
  }
  return out;
}

struct VocabFile {
  const char* name;
  size_t n_cases;
};

class Conformance : public ::testing::TestWithParam<VocabFile> {};

TEST_P(Conformance, EveryCaseEncodesExactlyAndRoundTrips) {
  const std::string path = testing::SharedDir() + "/vocab/" + GetParam().name;
  const GgufFile file = GgufFile::Open(path);
  const Tokenizer tokenizer = Tokenizer::FromGguf(file);
  EXPECT_EQ(tokenizer.n_merges_skipped(), 0);
  const bool lossless = tokenizer.model() != TokenizerModel::kWordPiece;
  const std::vector<Case> cases = ReadCases(path);
  ASSERT_EQ(cases.size(), GetParam().n_cases);
  int n_failed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const std::vector<int32_t> ids = tokenizer.Encode(c.text, /*add_bos=*/false, /*parse_special=*/false);
    EXPECT_EQ(ids, c.ids) << "case " << i << ": '" << Printable(c.text) << "'";
    n_failed += ids != c.ids;
    // None of these texts holds a special token's text, so parsing specials changes nothing.
    EXPECT_EQ(tokenizer.Encode(c.text, false, /*parse_special=*/true), c.ids) << "case " << i;
    const std::string decoded = tokenizer.Decode(c.ids);
    if (lossless) {
      EXPECT_EQ(decoded, c.text) << "case " << i;
    } else {  // [UNK] decodes to nothing
      std::vector<int32_t> known = c.ids;
      std::erase(known, tokenizer.unk_id());
      EXPECT_EQ(tokenizer.Encode(decoded, false), known) << "case " << i << ": decoded '" << Printable(decoded) << "'";
    }

    StreamingDetokenizer stream(tokenizer);
    std::string streamed;
    for (const int32_t id : c.ids) {
      const std::string piece = stream.Push(id);
      EXPECT_TRUE(utf8::IsValid(piece)) << "case " << i << ": a character split after token " << id;
      streamed += piece;
    }
    streamed += stream.Flush();
    EXPECT_EQ(streamed, decoded) << "case " << i << " (streaming)";

    // With BOS in front: same text tokens, and decoding drops the BOS and the dummy-prefix space.
    if (tokenizer.bos_id() >= 0) {
      std::vector<int32_t> with_bos = tokenizer.Encode(c.text, /*add_bos=*/true);
      ASSERT_FALSE(with_bos.empty());
      EXPECT_EQ(with_bos.front(), tokenizer.bos_id());
      EXPECT_EQ(std::vector<int32_t>(with_bos.begin() + 1, with_bos.end()), c.ids) << "case " << i;
      if (lossless) {
        EXPECT_EQ(tokenizer.Decode(with_bos), c.text) << "case " << i << " (with BOS)";
      }
    }
  }
  EXPECT_EQ(n_failed, 0) << n_failed << " of " << cases.size() << " cases differ";
}

// Special-token texts become those tokens only when parsing specials: control
// tokens (<|eot_id|>) and user-defined ones written as markup (phi-3's </s>);
// plain added text (mpt's runs of spaces) always.
TEST(SharedVocabSpecialTokens, ParsedOnlyWhenAsked) {
  struct Expectation {
    const char* file;
    const char* special_text;
  };
  for (const Expectation& e : {Expectation{"ggml-vocab-phi-3.gguf", "</s>"},
                               Expectation{"ggml-vocab-llama-bpe.gguf", "<|eot_id|>"},
                               Expectation{"ggml-vocab-qwen2.gguf", "<|im_start|>"},
                               Expectation{"ggml-vocab-gemma-4.gguf", "<|tool_call>"}}) {
    const GgufFile file = GgufFile::Open(testing::SharedDir() + "/vocab/" + e.file);
    const Tokenizer tokenizer = Tokenizer::FromGguf(file);
    const int32_t id = tokenizer.FindToken(e.special_text);
    ASSERT_GE(id, 0) << e.file;
    const std::string text = std::string("Hi") + e.special_text + "there";
    const std::vector<int32_t> literal = tokenizer.Encode(text, false, /*parse_special=*/false);
    EXPECT_EQ(std::count(literal.begin(), literal.end(), id), 0) << e.file;
    EXPECT_EQ(tokenizer.Decode(literal), text) << e.file;
    const std::vector<int32_t> parsed = tokenizer.Encode(text, false, /*parse_special=*/true);
    EXPECT_EQ(std::count(parsed.begin(), parsed.end(), id), 1) << e.file;
  }
  const GgufFile mpt_file = GgufFile::Open(testing::SharedDir() + "/vocab/ggml-vocab-mpt.gguf");
  const Tokenizer mpt = Tokenizer::FromGguf(mpt_file);
  const int32_t four_spaces = mpt.FindToken("    ");
  ASSERT_GE(four_spaces, 0);
  EXPECT_EQ(mpt.token_type(four_spaces), TokenType::kUserDefined);
  for (const bool parse_special : {false, true}) {
    const std::vector<int32_t> ids = mpt.Encode("a    b", false, parse_special);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), four_spaces), 1);
  }
}

// Every vocabulary of ../shared/vocab that comes with cases.
INSTANTIATE_TEST_SUITE_P(SharedVocab, Conformance,
                         ::testing::Values(VocabFile{"ggml-vocab-llama-spm.gguf", 46},
                                           VocabFile{"ggml-vocab-phi-3.gguf", 46},
                                           VocabFile{"ggml-vocab-llama-bpe.gguf", 46},
                                           VocabFile{"ggml-vocab-gpt-2.gguf", 46},
                                           VocabFile{"ggml-vocab-qwen2.gguf", 46},
                                           VocabFile{"ggml-vocab-qwen35.gguf", 50},
                                           VocabFile{"ggml-vocab-deepseek-llm.gguf", 46},
                                           VocabFile{"ggml-vocab-deepseek-coder.gguf", 46},
                                           VocabFile{"ggml-vocab-falcon.gguf", 46},
                                           VocabFile{"ggml-vocab-mpt.gguf", 46},
                                           VocabFile{"ggml-vocab-starcoder.gguf", 46},
                                           VocabFile{"ggml-vocab-refact.gguf", 46},
                                           VocabFile{"ggml-vocab-command-r.gguf", 46},
                                           VocabFile{"ggml-vocab-gemma-4.gguf", 46},
                                           VocabFile{"ggml-vocab-bert-bge.gguf", 46}),
                         [](const ::testing::TestParamInfo<VocabFile>& info) {
                           std::string name = info.param.name;
                           name = name.substr(11, name.size() - 11 - 5);  // between "ggml-vocab-" and ".gguf"
                           for (char& c : name) if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace ridge
