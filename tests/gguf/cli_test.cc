// The built `ridge` binary: convert + inspect on stories260K (the issue's
// acceptance numbers), tokenizer-only files, and corrupt input.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>

#include "test_paths.h"

namespace ridge {
namespace {

struct Result {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

Result RunRidge(const std::string& args) {
  const std::string cmd = testing::RidgeBinary() + " " + args + " 2>&1";
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

bool Has(const Result& r, const std::string& s) { return r.output.find(s) != std::string::npos; }

TEST(RidgeCli, ConvertThenInspectStories260K) {
  const std::string shared = testing::SharedDir();
  const std::string out = testing::ScratchDir("cli") + "/stories260K.gguf";
  const Result conv = RunRidge("convert --checkpoint " + shared + "/models/stories260K.bin --tokenizer " + shared +
                          "/models/tok512.bin -o " + out);
  ASSERT_EQ(conv.exit_code, 0) << conv.output;
  const Result r = RunRidge("inspect " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Has(r, "5 layers, 8 heads, 4 KV heads, head dim 8")) << r.output;
  EXPECT_TRUE(Has(r, "vocab 512")) << r.output;
  EXPECT_TRUE(Has(r, "f16   (2 bytes/element): 640 bytes per token")) << r.output;
  EXPECT_TRUE(Has(r, "8-bit (1 byte/element): 320 bytes per token")) << r.output;
  EXPECT_TRUE(Has(r, "4096 tokens: 2621440 bytes")) << r.output;
  EXPECT_TRUE(Has(r, "[512 strings: \"<unk>\", \"<s>\", \"</s>\", …]")) << r.output;
  EXPECT_TRUE(Has(r, "tensors (47)")) << r.output;
  EXPECT_TRUE(Has(r, "parameters: 260032")) << r.output;
  EXPECT_TRUE(Has(r, "blk.4.ffn_down.weight")) << r.output;
}

TEST(RidgeCli, ConvertQ8_0) {
  const std::string shared = testing::SharedDir();
  const std::string out = testing::ScratchDir("cli-q8") + "/s.gguf";
  const Result conv = RunRidge("convert --checkpoint " + shared + "/models/stories260K.bin --tokenizer " + shared +
                          "/models/tok512.bin -o " + out + " --type q8_0");
  ASSERT_EQ(conv.exit_code, 0) << conv.output;
  EXPECT_TRUE(Has(conv, "stored as F16")) << conv.output;
  const Result r = RunRidge("inspect " + out);
  EXPECT_TRUE(Has(r, "Q8_0")) << r.output;
  const Result bad = RunRidge("convert --checkpoint " + shared + "/models/stories260K.bin --tokenizer " + shared +
                         "/models/tok512.bin -o " + out + " --type Q4_K");
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_TRUE(Has(bad, "--type Q4_K")) << bad.output;
}

TEST(RidgeCli, InspectTokenizerOnlyFile) {
  const Result r = RunRidge("inspect " + testing::SharedDir() + "/vocab/ggml-vocab-gpt-2.gguf");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Has(r, "tensors (0)")) << r.output;
  EXPECT_TRUE(Has(r, "[50257 strings:")) << r.output;
  EXPECT_TRUE(Has(r, "model: no Llama-family model description here")) << r.output;
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
  const Result r = RunRidge("inspect " + path);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Has(r, "ridge: error: " + path + ": header.metadata_kv_count at byte offset 16")) << r.output;
}

TEST(RidgeCli, TruncatedCheckpointGivesNonZeroExit) {
  const std::string dir = testing::ScratchDir("cli-cut");
  {
    std::ifstream in(testing::SharedDir() + "/models/stories260K.bin", std::ios::binary);
    std::vector<char> bytes(5000);
    in.read(bytes.data(), 5000);
    std::ofstream(dir + "/cut.bin", std::ios::binary).write(bytes.data(), 5000);
  }
  const Result r = RunRidge("convert --checkpoint " + dir + "/cut.bin --tokenizer " + testing::SharedDir() +
                       "/models/tok512.bin -o " + dir + "/x.gguf");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(Has(r, "truncated")) << r.output;
  EXPECT_FALSE(std::ifstream(dir + "/x.gguf").good());
}

}  // namespace
}  // namespace ridge
