// `ridge tokenize` and `ridge detokenize` on the shared Llama 2 vocabulary.
#include <gtest/gtest.h>


#include <cstdio>
#include <string>

#include "cli_runner.h"
#include "test_paths.h"

namespace ridge {
namespace {

using testing::CliResult;
using testing::RunRidge;

std::string SpmVocab() { return "'" + testing::SharedDir() + "/vocab/ggml-vocab-llama-spm.gguf'"; }

TEST(Cli, TokenizeAddsBosAsTheMetadataSays) {
  CliResult r = RunRidge("tokenize -m " + SpmVocab() + " 'Hello world'");
  EXPECT_EQ(r.exit_code, 0) << r.output();
  EXPECT_EQ(r.output(), "1 15043 3186\n");
  r = RunRidge("tokenize -m " + SpmVocab() + " --no-bos 'Hello world'");
  EXPECT_EQ(r.output(), "15043 3186\n");
  r = RunRidge("tokenize -m " + SpmVocab() + " --no-bos ''");
  EXPECT_EQ(r.exit_code, 0) << r.output();
  EXPECT_EQ(r.output(), "\n");
}

TEST(Cli, TokenizePieces) {
  const CliResult r = RunRidge("tokenize -m " + SpmVocab() + " --pieces 'Hello world'");
  EXPECT_EQ(r.exit_code, 0) << r.output();
  EXPECT_EQ(r.output(), "1\t<s>\n15043\t\xE2\x96\x81Hello\n3186\t\xE2\x96\x81world\n");
}

TEST(Cli, TokenizeParsesSpecialTokenTextsUnlessTold) {
  CliResult r = RunRidge("tokenize -m " + SpmVocab() + " --no-bos 'a</s>'");
  EXPECT_EQ(r.exit_code, 0) << r.output();
  EXPECT_EQ(r.output(), "263 2\n");
  r = RunRidge("tokenize -m " + SpmVocab() + " --no-bos --no-parse-special 'a</s>'");
  EXPECT_EQ(r.exit_code, 0) << r.output();
  EXPECT_EQ(r.output(), "263 829 29879 29958\n");  // ▁a, </, s, >
}

TEST(Cli, TokenizeWordPieceAddsClsAndSep) {
  const std::string bert = "'" + testing::SharedDir() + "/vocab/ggml-vocab-bert-bge.gguf'";
  const CliResult r = RunRidge("tokenize -m " + bert + " 'Hello world'");
  EXPECT_EQ(r.exit_code, 0) << r.output();
  EXPECT_EQ(r.output(), "101 7592 2088 102\n");  // [CLS] ▁hello ▁world [SEP]
}

TEST(Cli, Detokenize) {
  CliResult r = RunRidge("detokenize -m " + SpmVocab() + " 1 15043 3186");
  EXPECT_EQ(r.exit_code, 0) << r.output();
  EXPECT_EQ(r.output(), "Hello world\n");
  r = RunRidge("detokenize -m " + SpmVocab() + " 1 32000");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output().find("token id 32000 is out of range"), std::string::npos) << r.output();
}

TEST(Cli, BadModelFile) {
  const CliResult r = RunRidge("tokenize -m /nonexistent/model.gguf hi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output().find("/nonexistent/model.gguf"), std::string::npos) << r.output();
}

}  // namespace
}  // namespace ridge
