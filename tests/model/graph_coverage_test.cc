// The loader refuses what it would silently mis-run: an architecture it does
// not know, a tensor the architecture's graph would not read, or one of the
// wrong size.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/gguf/model_generator.h"
#include "ridge/model/model.h"
#include "random_model.h"
#include "test_paths.h"

namespace ridge {
namespace {

GgufWriter SmallLlama() {
  RandomModelOptions options;
  options.shape = {64, 128, 1, 2, 2, 64};
  options.seed = 3;
  return testing::BuildRandomLlamaVocabModel(options);
}

void ExpectRefused(const GgufWriter& w, const std::vector<std::string>& needles) {
  const std::string path = testing::ScratchDir("graph") + "/model.gguf";
  w.Write(path);
  try {
    Model::Load(path);
    ADD_FAILURE() << "expected the model to be refused";
  } catch (const Error& e) {
    for (const std::string& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

TEST(LlamaGraph, PlainLlamaLoads) {
  const std::string path = testing::ScratchDir("graph") + "/model.gguf";
  SmallLlama().Write(path);
  EXPECT_EQ(Model::Load(path)->config().n_layers, 1);
}

TEST(LlamaGraph, UnknownArchitecturesAreRefused) {
  GgufWriter w = SmallLlama();
  w.SetString("general.architecture", "falcon");
  ExpectRefused(w, {"general.architecture", "'falcon'", "supported: llama, qwen2, qwen3, phi3, gemma2, gemma3, qwen2moe, qwen3moe"});
}

TEST(LlamaGraph, TensorsTheGraphWouldIgnoreAreRefused) {
  // Other architectures' tensors, and names outside every table.
  for (const char* name : {"blk.0.attn_q_norm.weight", "blk.0.post_ffw_norm.weight", "rope_factors_long.weight",
                           "blk.0.ffn_gate_inp.weight", "blk.7.attn_norm.weight"}) {
    GgufWriter w = SmallLlama();
    w.AddTensorBytes(name, GgmlType::kF32, {64}, std::vector<uint8_t>(64 * 4, 0));
    ExpectRefused(w, {name, "not part of the llama graph"});
  }
}

TEST(LlamaGraph, MisSizedOptionalTensorsAreRefused) {
  GgufWriter w = SmallLlama();  // head_dim 32: rope_freqs holds 16 divisors
  w.AddTensorBytes("rope_freqs.weight", GgmlType::kF32, {64}, std::vector<uint8_t>(64 * 4, 0));
  ExpectRefused(w, {"rope_freqs.weight", "has shape [64], expected [16]"});
  GgufWriter zeros = SmallLlama();
  zeros.AddTensorBytes("rope_freqs.weight", GgmlType::kF32, {16}, std::vector<uint8_t>(16 * 4, 0));
  ExpectRefused(zeros, {"rope_freqs.weight", "is not a positive frequency factor"});
  GgufWriter bias = SmallLlama();
  bias.AddTensorBytes("blk.0.attn_k.bias", GgmlType::kF32, {32}, std::vector<uint8_t>(32 * 4, 0));
  ExpectRefused(bias, {"blk.0.attn_k.bias", "has shape [32], expected [64]"});
}

// A phi3 file (fused QKV and gate+up, LongRoPE factors) whose metadata no
// longer matches its tensors: each mismatch names the tensor.
TEST(LlamaGraph, FusedTensorsAndRopeFactorsOfTheWrongSizeAreRefused) {
  auto phi3 = [] {
    RandomModelOptions options;
    options.shape = {64, 128, 1, 2, 2, 64};
    options.shape.architecture = "phi3";
    options.shape.rope_scaling = RandomRopeScaling::kLongRope;
    options.shape.rope_original_context = 16;
    return testing::BuildRandomLlamaVocabModel(options);
  };
  const std::string path = testing::ScratchDir("graph") + "/phi3.gguf";
  phi3().Write(path);
  EXPECT_EQ(Model::Load(path)->config().architecture, "phi3");
  GgufWriter kv = phi3();
  kv.SetU32("phi3.attention.head_count_kv", 1);  // attn_qkv should then hold 32 + 2·32 ... rows of 64
  ExpectRefused(kv, {"blk.0.attn_qkv.weight", "expected [64, 128]"});
  GgufWriter ffn = phi3();
  ffn.SetU32("phi3.feed_forward_length", 96);  // ffn_up holds gate and up: 2 · 96 rows expected
  ExpectRefused(ffn, {"blk.0.ffn_up.weight", "expected [64, 192]"});
  GgufWriter rope = phi3();
  rope.SetU32("phi3.rope.dimension_count", 16);  // 8 factors expected, the file has 16
  ExpectRefused(rope, {"rope_factors_long.weight", "expected [8]"});
}

// A gpt-oss file whose metadata no longer matches its experts or its sinks:
// each mismatch names the key's tensor and the shape it implies.
TEST(LlamaGraph, GptOssTensorsThatDisagreeWithTheMetadataAreRefused) {
  auto gpt_oss = [] {
    RandomModelOptions options;
    options.shape = {64, 128, 1, 2, 2, 64};
    options.shape.architecture = "gpt-oss";
    options.shape.n_expert = 4;
    options.shape.n_expert_used = 2;
    options.shape.n_ff_exp = 64;
    return testing::BuildRandomLlamaVocabModel(options);
  };
  const std::string path = testing::ScratchDir("graph") + "/gpt-oss.gguf";
  gpt_oss().Write(path);
  EXPECT_EQ(Model::Load(path)->config().n_expert, 4);
  GgufWriter count = gpt_oss();
  count.SetU32("gpt-oss.expert_count", 6);
  ExpectRefused(count, {"blk.0.ffn_gate_inp.weight", "expected [64, 6]"});
  GgufWriter ffn = gpt_oss();
  ffn.SetU32("gpt-oss.expert_feed_forward_length", 96);
  ExpectRefused(ffn, {"blk.0.ffn_gate_exps.weight", "expected [64, 96, 4]"});
  GgufWriter heads = gpt_oss();  // 4 heads of 16: the projections keep their shapes, the sinks do not
  heads.SetU32("gpt-oss.attention.head_count", 4);
  heads.SetU32("gpt-oss.attention.head_count_kv", 4);
  heads.SetU32("gpt-oss.rope.dimension_count", 16);
  ExpectRefused(heads, {"blk.0.attn_sinks.weight", "expected [4]"});
  GgufWriter used = gpt_oss();
  used.SetU32("gpt-oss.expert_used_count", 5);
  ExpectRefused(used, {"gpt-oss.expert_used_count = 5 with gpt-oss.expert_count = 4"});
}

}  // namespace
}  // namespace ridge
