// The llama.cpp conformance files in ../shared/vocab: every input encodes
// (no BOS, no special-token parsing) to exactly the expected ids and decodes
// back to itself, also through the streaming detokenizer.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ridge/gguf/gguf_file.h"
#include "ridge/tokenizer/streaming_detokenizer.h"
#include "ridge/tokenizer/tokenizer.h"
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

// X.gguf.inp: texts separated by "\n__ggml_vocab_test__\n" (also after the
// last); X.gguf.out: one line of space-separated ids per text.
std::vector<Case> ReadCases(const std::string& gguf_path) {
  const std::string inp = ReadFile(gguf_path + ".inp");
  const std::string out = ReadFile(gguf_path + ".out");
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::vector<Case> cases;
  size_t pos = 0;
  while (pos < inp.size()) {
    const size_t end = inp.find(separator, pos);
    if (end == std::string::npos) {
      ADD_FAILURE() << gguf_path << ".inp: text after the last separator";
      break;
    }
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

class Conformance : public ::testing::TestWithParam<const char*> {};

TEST_P(Conformance, EveryCaseEncodesExactlyAndRoundTrips) {
  const std::string path = testing::SharedDir() + "/vocab/" + GetParam();
  const GgufFile file = GgufFile::Open(path);
  const Tokenizer tokenizer = Tokenizer::FromGguf(file);
  EXPECT_EQ(tokenizer.n_merges_skipped(), 0);
  const std::vector<Case> cases = ReadCases(path);
  ASSERT_EQ(cases.size(), 46u);
  int n_failed = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const std::vector<int32_t> ids = tokenizer.Encode(c.text, /*add_bos=*/false, /*parse_special=*/false);
    EXPECT_EQ(ids, c.ids) << "case " << i << ": '" << Printable(c.text) << "'";
    n_failed += ids != c.ids;
    // None of these texts holds a control token's text, so parsing specials changes nothing.
    EXPECT_EQ(tokenizer.Encode(c.text, false, /*parse_special=*/true), c.ids) << "case " << i;
    EXPECT_EQ(tokenizer.Decode(c.ids), c.text) << "case " << i;

    StreamingDetokenizer stream(tokenizer);
    std::string streamed;
    for (const int32_t id : c.ids) streamed += stream.Push(id);
    streamed += stream.Flush();
    EXPECT_EQ(streamed, c.text) << "case " << i << " (streaming)";

    // With BOS in front: same text tokens, and decoding drops the BOS and the dummy-prefix space.
    if (tokenizer.bos_id() >= 0) {
      std::vector<int32_t> with_bos = tokenizer.Encode(c.text, /*add_bos=*/true);
      ASSERT_FALSE(with_bos.empty());
      EXPECT_EQ(with_bos.front(), tokenizer.bos_id());
      EXPECT_EQ(std::vector<int32_t>(with_bos.begin() + 1, with_bos.end()), c.ids) << "case " << i;
      EXPECT_EQ(tokenizer.Decode(with_bos), c.text) << "case " << i << " (with BOS)";
    }
  }
  EXPECT_EQ(n_failed, 0);
}

INSTANTIATE_TEST_SUITE_P(SharedVocab, Conformance,
                         ::testing::Values("ggml-vocab-llama-spm.gguf", "ggml-vocab-llama-bpe.gguf",
                                           "ggml-vocab-gpt-2.gguf"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           name = name.substr(11, name.size() - 11 - 5);  // between "ggml-vocab-" and ".gguf"
                           for (char& c : name) if (c == '-') c = '_';
                           return name;
                         });

}  // namespace
}  // namespace ridge
