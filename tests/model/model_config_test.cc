// ModelConfig::FromGguf: reads llama.* keys, fills defaults, rejects
// inconsistent shapes naming the key; KvBytesPerToken follows the reference formula.
#include "ridge/model/model_config.h"

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
    ModelConfig::FromGguf(f);
    FAIL() << "expected an error mentioning " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(f.path()), std::string::npos) << e.what();
  }
}

TEST(ModelConfig, ReadsStories260KShape) {
  const ModelConfig c = ModelConfig::FromGguf(Write());
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

TEST(ModelConfig, KvFormulaWorkedExample) {
  // inference-basics.md: L=32, H_kv=32, d_head=128, FP16 -> 524,288 bytes per token.
  EXPECT_EQ(KvBytesPerToken(32, 32, 128, 2), 524288.0);
}

TEST(ModelConfig, DefaultsWhenOptionalKeysAreAbsent) {
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
  const ModelConfig c = ModelConfig::FromGguf(GgufFile::Open(path));
  EXPECT_EQ(c.n_kv_heads, 4);
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.rope_dim, 8);
  EXPECT_EQ(c.rope_freq_base, 10000.0f);
  EXPECT_EQ(c.n_vocab, 10) << "from token_embd.weight when there is no token list";
}

TEST(ModelConfig, RealLlama2VocabFile) {
  const ModelConfig c =
      ModelConfig::FromGguf(GgufFile::Open(testing::SharedDir() + "/vocab/ggml-vocab-llama-spm.gguf"));
  EXPECT_EQ(c.n_layers, 32);
  EXPECT_EQ(c.n_heads, 32);
  EXPECT_EQ(c.n_kv_heads, 32);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.n_vocab, 32000);
  EXPECT_EQ(KvBytesPerToken(c.n_layers, c.n_kv_heads, c.head_dim, 2), 524288.0);
}

TEST(ModelConfig, RejectsInconsistentShapes) {
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
  ExpectConfigError([](GgufWriter& w) { w.SetU32("llama.attention.value_length", 16); },
                    "llama.attention.value_length = 16 differs from the key length 8");
  ExpectConfigError([](GgufWriter& w) { w.SetString("llama.block_count", "five"); },
                    "'llama.block_count' is a string but an integer was expected");
  ExpectConfigError(
      [](GgufWriter& w) {
        w.AddTensorBytes("token_embd.weight", GgmlType::kF32, {64, 500}, std::vector<uint8_t>(64 * 500 * 4));
      },
      "tokenizer.ggml.tokens has 512 tokens but token_embd.weight has 500 rows");
}

// Heads that do not tile n_embd (qwen3, gemma) give their size as key_length.
TEST(ModelConfig, KeyLengthSetsTheHeadSize) {
  const ModelConfig c = ModelConfig::FromGguf(Write([](GgufWriter& w) {
    w.SetU32("llama.attention.key_length", 16);
    w.SetU32("llama.attention.value_length", 16);
  }));
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.q_dim(), 128);
  EXPECT_EQ(c.kv_dim(), 64);
}

// Every variant key, hostile or inconsistent, is an error naming the key.
TEST(ModelConfig, RejectsHostileVariantKeys) {
  ExpectConfigError([](GgufWriter& w) { w.SetU32("llama.attention.sliding_window", 0); },
                    "llama.attention.sliding_window = 0 must be at least 1");
  ExpectConfigError([](GgufWriter& w) { w.SetI32("llama.attention.sliding_window", -4); },
                    "llama.attention.sliding_window = -4");
  ExpectConfigError([](GgufWriter& w) { w.SetString("llama.rope.scaling.type", "ntk-magic"); },
                    "llama.rope.scaling.type = 'ntk-magic' is not a RoPE scaling ridge knows");
  ExpectConfigError([](GgufWriter& w) { w.SetString("llama.rope.scaling.type", "yarn"); },
                    "'llama.rope.scaling.factor' is missing");
  ExpectConfigError(
      [](GgufWriter& w) {
        w.SetString("llama.rope.scaling.type", "linear");
        w.SetF32("llama.rope.scaling.factor", -2.0f);
      },
      "'llama.rope.scaling.factor' = -2 must be a positive number");
  ExpectConfigError([](GgufWriter& w) { w.SetF32("llama.attention.scale", 0.0f); },
                    "'llama.attention.scale' = 0 must be a positive number");
  ExpectConfigError([](GgufWriter& w) { w.SetF32("llama.rope.freq_base", std::nanf("")); },
                    "'llama.rope.freq_base' = nan must be a positive number");
  ExpectConfigError(
      [](GgufWriter& w) {
        w.SetU32("llama.expert_count", 4);
        w.SetU32("llama.expert_used_count", 5);
      },
      "llama.expert_used_count = 5 with llama.expert_count = 4: need 1 <= used <= count");
  ExpectConfigError([](GgufWriter& w) { w.SetU32("llama.expert_count", 4); },
                    "required metadata key 'llama.expert_used_count' is missing");
  ExpectConfigError([](GgufWriter& w) { w.SetString("general.architecture", "mamba"); },
                    "general.architecture is 'mamba', which ridge does not run; supported: llama, qwen2");
}

TEST(ModelConfig, GemmaSoftCapsMustBePositive) {
  const auto gemma = [](GgufWriter& w) {
    w.SetString("general.architecture", "gemma2");
    for (auto [key, value] : {std::pair{"context_length", 512}, {"embedding_length", 64}, {"block_count", 5},
                              {"feed_forward_length", 172}, {"attention.head_count", 8},
                              {"attention.head_count_kv", 4}, {"rope.dimension_count", 8}})
      w.SetU32(std::string("gemma2.") + key, static_cast<uint32_t>(value));
    w.SetF32("gemma2.attention.layer_norm_rms_epsilon", 1e-6f);
  };
  const ModelConfig c = ModelConfig::FromGguf(Write([&](GgufWriter& w) {
    gemma(w);
    w.SetF32("gemma2.attn_logit_softcapping", 50.0f);
    w.SetF32("gemma2.final_logit_softcapping", 30.0f);
  }));
  EXPECT_EQ(c.attn_softcap, 50.0f);
  EXPECT_EQ(c.final_softcap, 30.0f);
  EXPECT_FLOAT_EQ(c.embedding_scale, 8.0f);  // sqrt(64)
  ExpectConfigError(
      [&](GgufWriter& w) {
        gemma(w);
        w.SetF32("gemma2.attn_logit_softcapping", 0.0f);
      },
      "'gemma2.attn_logit_softcapping' = 0 must be a positive number");
}

TEST(ModelConfig, NamesMissingKeys) {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  const std::string path = testing::ScratchDir("llama-config-missing") + "/m.gguf";
  w.Write(path);
  const GgufFile f = GgufFile::Open(path);
  try {
    ModelConfig::FromGguf(f);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("required metadata key 'llama.context_length' is missing"),
              std::string::npos)
        << e.what();
  }
  GgufWriter none;
  none.SetU32("x", 1);
  none.Write(path);
  EXPECT_THROW(ModelConfig::FromGguf(GgufFile::Open(path)), Error);  // no general.architecture
}

}  // namespace
}  // namespace ridge
