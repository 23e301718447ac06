// The built `ridge` binary: convert + inspect on stories260K (the issue's
// acceptance numbers), tokenizer-only files, and corrupt input.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "cli_runner.h"
#include "test_paths.h"

namespace ridge {
namespace {

using testing::CliResult;
using testing::RunRidge;

TEST(RidgeCli, ConvertThenInspectStories260K) {
  const std::string shared = testing::SharedDir();
  const std::string out = testing::ScratchDir("cli") + "/stories260K.gguf";
  const CliResult conv = RunRidge("convert --checkpoint " + shared + "/models/stories260K.bin --tokenizer " + shared +
                          "/models/tok512.bin -o " + out);
  ASSERT_EQ(conv.exit_code, 0) << conv.output();
  const CliResult r = RunRidge("inspect " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output();
  EXPECT_TRUE(r.Has("5 layers, 8 heads, 4 KV heads, head dim 8")) << r.output();
  EXPECT_TRUE(r.Has("vocab 512")) << r.output();
  EXPECT_TRUE(r.Has("f16   (2 bytes/element): 640 bytes per token")) << r.output();
  EXPECT_TRUE(r.Has("8-bit (1 byte/element): 320 bytes per token")) << r.output();
  EXPECT_TRUE(r.Has("4096 tokens: 2621440 bytes")) << r.output();
  EXPECT_TRUE(r.Has("[512 strings: \"<unk>\", \"<s>\", \"</s>\", …]")) << r.output();
  EXPECT_TRUE(r.Has("tensors (47)")) << r.output();
  EXPECT_TRUE(r.Has("parameters: 260032")) << r.output();
  EXPECT_TRUE(r.Has("blk.4.ffn_down.weight")) << r.output();
}

TEST(RidgeCli, ConvertQ8_0) {
  const std::string shared = testing::SharedDir();
  const std::string out = testing::ScratchDir("cli-q8") + "/s.gguf";
  const CliResult conv = RunRidge("convert --checkpoint " + shared + "/models/stories260K.bin --tokenizer " + shared +
                          "/models/tok512.bin -o " + out + " --type q8_0");
  ASSERT_EQ(conv.exit_code, 0) << conv.output();
  EXPECT_TRUE(conv.Has("stored as F16")) << conv.output();
  const CliResult r = RunRidge("inspect " + out);
  EXPECT_TRUE(r.Has("Q8_0")) << r.output();
  const CliResult bad = RunRidge("convert --checkpoint " + shared + "/models/stories260K.bin --tokenizer " + shared +
                         "/models/tok512.bin -o " + out + " --type Q8_K");
  EXPECT_EQ(bad.exit_code, 1) << bad.output();
  EXPECT_TRUE(bad.Has("--type Q8_K")) << bad.output();
}

TEST(RidgeCli, InspectTokenizerOnlyFile) {
  const CliResult r = RunRidge("inspect " + testing::SharedDir() + "/vocab/ggml-vocab-gpt-2.gguf");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  EXPECT_TRUE(r.Has("tensors (0)")) << r.output();
  EXPECT_TRUE(r.Has("[50257 strings:")) << r.output();
  EXPECT_TRUE(r.Has("model: no model description ridge can run here")) << r.output();
}

TEST(RidgeCli, CorruptFileGivesNonZeroExitAndClearMessage) {
  const std::string path = testing::ScratchDir("cli-bad") + "/bad.gguf";
  {
    std::ofstream f(path, std::ios::binary);
    f << "GGUF";
    const uint32_t version = 3;
    const uint64_t n_tensors = 0, n_kv = 1u << 30;
    f.write(reinterpret_cast<const char*>(&version), 4);
    f.write(reinterpret_cast<const char*>(&n_tensors), 8);
    f.write(reinterpret_cast<const char*>(&n_kv), 8);
  }
  const CliResult r = RunRidge("inspect " + path);
  EXPECT_EQ(r.exit_code, 1) << r.output();
  EXPECT_TRUE(r.Has("ridge: error: " + path + ": header.metadata_kv_count at byte offset 16")) << r.output();
}

TEST(RidgeCli, TruncatedCheckpointGivesNonZeroExit) {
  const std::string dir = testing::ScratchDir("cli-cut");
  {
    std::ifstream in(testing::SharedDir() + "/models/stories260K.bin", std::ios::binary);
    std::vector<char> bytes(5000);
    in.read(bytes.data(), 5000);
    std::ofstream(dir + "/cut.bin", std::ios::binary).write(bytes.data(), 5000);
  }
  const CliResult r = RunRidge("convert --checkpoint " + dir + "/cut.bin --tokenizer " + testing::SharedDir() +
                       "/models/tok512.bin -o " + dir + "/x.gguf");
  EXPECT_EQ(r.exit_code, 1) << r.output();
  EXPECT_TRUE(r.Has("truncated")) << r.output();
  EXPECT_FALSE(std::ifstream(dir + "/x.gguf").good());
}

}  // namespace
}  // namespace ridge
