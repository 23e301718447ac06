// LlamaConfig::FromGguf: reads llama.* keys, fills defaults, rejects
// inconsistent shapes naming the key; KvBytesPerToken follows the reference formula.
#include "ridge/model/llama_config.h"

#include <gtest/gtest.h>

#include <functional>

#include "ridge/base/error.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/gguf_writer.h"
#include "test_paths.h"

namespace ridge {
namespace {

// stories260K's shape; `edit` changes the writer before it is written.
GgufFile Write(const std::function<void(GgufWriter&)>& edit = nullptr) {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetU32("llama.context_length", 512);
  w.SetU32("llama.embedding_length", 64);
  w.SetU32("llama.block_count", 5);
  w.SetU32("llama.feed_forward_length", 172);
  w.SetU32("llama.attention.head_count", 8);
  w.SetU32("llama.attention.head_count_kv", 4);
  w.SetU32("llama.rope.dimension_count", 8);
  w.SetF32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.SetF32("llama.rope.freq_base", 10000.0f);
  std::vector<GgufValue> tokens;
  for (int i = 0; i < 512; ++i) tokens.push_back(GgufValue::String("t" + std::to_string(i)));
  w.Set("tokenizer.ggml.tokens", GgufValue::Array(GgufValueType::kString, tokens));
  if (edit) edit(w);
  const std::string path = testing::ScratchDir("llama-config") + "/c.gguf";
  w.Write(path);
  return GgufFile::Open(path);
}

void ExpectConfigError(const std::function<void(GgufWriter&)>& edit, const std::string& needle) {
  const GgufFile f = Write(edit);
  try {
    LlamaConfig::FromGguf(f);
    FAIL() << "expected an error mentioning " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(f.path()), std::string::npos) << e.what();
  }
}

TEST(LlamaConfig, ReadsStories260KShape) {
  const LlamaConfig c = LlamaConfig::FromGguf(Write());
  EXPECT_EQ(c.architecture, "llama");
  EXPECT_EQ(c.n_vocab, 512);
  EXPECT_EQ(c.n_ctx_train, 512);
  EXPECT_EQ(c.n_embd, 64);
  EXPECT_EQ(c.n_layers, 5);
  EXPECT_EQ(c.n_ff, 172);
  EXPECT_EQ(c.n_heads, 8);
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.rope_dim, 8);
  EXPECT_FLOAT_EQ(c.rms_eps, 1e-5f);
  EXPECT_EQ(c.rope_freq_base, 10000.0f);
  EXPECT_EQ(KvBytesPerToken(c.n_layers, c.n_kv_heads, c.head_dim, 2), 640.0);
  EXPECT_EQ(KvBytesPerToken(c.n_layers, c.n_kv_heads, c.head_dim, 1), 320.0);
}

TEST(LlamaConfig, KvFormulaWorkedExample) {
  // inference-basics.md: L=32, H_kv=32, d_head=128, FP16 -> 524,288 bytes per token.
  EXPECT_EQ(KvBytesPerToken(32, 32, 128, 2), 524288.0);
}

TEST(LlamaConfig, DefaultsWhenOptionalKeysAreAbsent) {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetU32("llama.context_length", 16);
  w.SetU32("llama.embedding_length", 32);
  w.SetU32("llama.block_count", 2);
  w.SetU32("llama.feed_forward_length", 64);
  w.SetU32("llama.attention.head_count", 4);
  w.SetF32("llama.attention.layer_norm_rms_epsilon", 1e-6f);
  w.AddTensorBytes("token_embd.weight", GgmlType::kF32, {32, 10}, std::vector<uint8_t>(32 * 10 * 4));
  const std::string path = testing::ScratchDir("llama-config-defaults") + "/d.gguf";
  w.Write(path);
  const LlamaConfig c = LlamaConfig::FromGguf(GgufFile::Open(path));
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.rope_dim, 8);
  EXPECT_EQ(c.rope_freq_base, 10000.0f);
  EXPECT_EQ(c.n_vocab, 10) << "from token_embd.weight when there is no token list";
}

TEST(LlamaConfig, RealLlama2VocabFile) {
  const LlamaConfig c =
      LlamaConfig::FromGguf(GgufFile::Open(testing::SharedDir() + "/vocab/ggml-vocab-llama-spm.gguf"));
  EXPECT_EQ(c.n_layers, 32);
  EXPECT_EQ(c.n_heads, 32);
  EXPECT_EQ(c.n_kv_heads, 32);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.n_vocab, 32000);
  EXPECT_EQ(KvBytesPerToken(c.n_layers, c.n_kv_heads, c.head_dim, 2), 524288.0);
}

TEST(LlamaConfig, RejectsInconsistentShapes) {
  ExpectConfigError([](GgufWriter& w) { w.SetU32("llama.attention.head_count", 6); },
                    "llama.embedding_length 64 is not divisible by llama.attention.head_count 6");
  ExpectConfigError([](GgufWriter& w) { w.SetU32("llama.attention.head_count_kv", 3); },
                    "llama.attention.head_count 8 is not divisible by llama.attention.head_count_kv 3");
  ExpectConfigError([](GgufWriter& w) { w.SetU32("llama.attention.head_count_kv", 0); },
                    "'llama.attention.head_count_kv' = 0 is out of range");
  ExpectConfigError([](GgufWriter& w) { w.SetU32("llama.block_count", 0); }, "'llama.block_count' = 0");
  ExpectConfigError([](GgufWriter& w) { w.SetU32("llama.rope.dimension_count", 7); },
                    "llama.rope.dimension_count 7 must be even");
  ExpectConfigError([](GgufWriter& w) { w.SetU32("llama.rope.dimension_count", 16); }, "at most the head dim 8");
  ExpectConfigError([](GgufWriter& w) { w.SetF32("llama.attention.layer_norm_rms_epsilon", 0.0f); },
                    "layer_norm_rms_epsilon 0 is not in (0, 1)");
  ExpectConfigError([](GgufWriter& w) { w.SetU32("llama.attention.key_length", 16); },
                    "llama.attention.key_length = 16 differs");
  ExpectConfigError([](GgufWriter& w) { w.SetString("llama.block_count", "five"); },
                    "'llama.block_count' is a string but an integer was expected");
  ExpectConfigError(
      [](GgufWriter& w) {
        w.AddTensorBytes("token_embd.weight", GgmlType::kF32, {64, 500}, std::vector<uint8_t>(64 * 500 * 4));
      },
      "tokenizer.ggml.tokens has 512 tokens but token_embd.weight has 500 rows");
}

TEST(LlamaConfig, NamesMissingKeys) {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  const std::string path = testing::ScratchDir("llama-config-missing") + "/m.gguf";
  w.Write(path);
  const GgufFile f = GgufFile::Open(path);
  try {
    LlamaConfig::FromGguf(f);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("required metadata key 'llama.context_length' is missing"),
              std::string::npos)
        << e.what();
  }
  GgufWriter none;
  none.SetU32("x", 1);
  none.Write(path);
  EXPECT_THROW(LlamaConfig::FromGguf(GgufFile::Open(path)), Error);  // no general.architecture
}

}  // namespace
}  // namespace ridge
