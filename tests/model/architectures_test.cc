// Every architecture's graph, on small random files from gen-model's
// generator, for the properties that hold whatever the weights: prefill and
// decode agree, a sliding window hides what lies outside it, a soft-cap bounds
// the logits, and the loader reads every tensor it is given. (That the logits
// are the right ones is the numpy reference oracle's job: tests/reference.)
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/base/thread_pool.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/model_generator.h"
#include "ridge/model/model.h"
#include "random_model.h"
#include "test_paths.h"

namespace ridge {
namespace {

RandomModelShape Shape(const std::string& arch) {
  RandomModelShape s{64, 128, 2, 4, 2, 256};
  s.architecture = arch;
  if (arch == "qwen3" || arch == "gemma2" || arch == "gemma3") s.head_dim = 32;  // heads × head_dim = 128 ≠ 64
  if (arch == "gemma2") {
    s.sliding_window = 6;
    s.attn_softcap = 4.0f;
    s.final_softcap = 3.0f;
  }
  if (arch == "gemma3") s.sliding_window = 6, s.rope_freq_base_swa = 10000.0f, s.rope_freq_base = 1e6f;
  if (arch == "phi3") s.rope_scaling = RandomRopeScaling::kLongRope, s.rope_original_context = 64;
  if (arch == "gpt-oss") {  // heads × head_dim = 128 ≠ 64, layer 0 slides, YaRN, MXFP4 experts
    s.head_dim = 32;
    s.sliding_window = 6;
    s.rope_scaling = RandomRopeScaling::kYarn, s.rope_factor = 4.0f, s.rope_original_context = 64;
  }
  if (arch == "qwen2moe" || arch == "qwen3moe" || arch == "mixtral" || arch == "gpt-oss") {
    s.n_expert = 8;
    s.n_expert_used = 2;
    s.n_ff_exp = 64;
    if (arch == "mixtral") s.architecture = "llama";
  }
  return s;
}

std::string Write(const RandomModelShape& shape, const std::string& tag) {
  RandomModelOptions options;
  options.shape = shape;
  options.seed = 11;
  return testing::WriteRandomModelGguf(options, "arch-" + tag);
}

// Logits of every position of `tokens`, in one prefill or one token at a time.
std::vector<float> Logits(Model& model, const std::vector<TokenId>& tokens, bool one_at_a_time) {
  ThreadPool pool(2);
  const int64_t n = static_cast<int64_t>(tokens.size()), v = model.config().n_vocab;
  PagedKvCache cache(model.KvShape(GgmlType::kF32, 4), 16);
  EXPECT_TRUE(cache.Reserve(0, n));
  std::vector<float> logits(static_cast<size_t>(n * v));
  if (!one_at_a_time) {
    Batch all;
    for (int64_t i = 0; i < n; ++i) all.Add(tokens[static_cast<size_t>(i)], i, 0, true);
    model.Forward(all, cache, logits.data(), pool);
    return logits;
  }
  for (int64_t i = 0; i < n; ++i) {
    Batch one;
    one.Add(tokens[static_cast<size_t>(i)], i, 0, true);
    model.Forward(one, cache, logits.data() + i * v, pool);
  }
  return logits;
}

const std::vector<TokenId> kTokens = {1, 450, 4996, 17354, 1701, 432, 17204, 975, 278, 17366, 11203, 29889, 13, 400};

class ArchitectureTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ArchitectureTest, LoadsEveryTensorAndPrefillMatchesDecode) {
  const RandomModelShape shape = Shape(GetParam());
  auto model = Model::Load(Write(shape, GetParam()));
  EXPECT_EQ(model->config().architecture, shape.architecture);
  const std::vector<float> prefill = Logits(*model, kTokens, false), decode = Logits(*model, kTokens, true);
  double max_abs = 0;
  for (float x : prefill) {
    ASSERT_TRUE(std::isfinite(x));
    max_abs = std::max(max_abs, static_cast<double>(std::fabs(x)));
  }
  ASSERT_GT(max_abs, 0.1);  // not a dead graph
  for (size_t i = 0; i < prefill.size(); ++i) ASSERT_NEAR(prefill[i], decode[i], 2e-3 * max_abs) << i;
}

INSTANTIATE_TEST_SUITE_P(EveryArchitecture, ArchitectureTest,
                         ::testing::Values("llama", "qwen2", "qwen3", "phi3", "gemma2", "gemma3", "qwen2moe",
                                           "qwen3moe", "mixtral", "gpt-oss"));

// One layer, every layer sliding (mistral style): the logits at position p
// depend on tokens p − window + 1 .. p only.
TEST(SlidingWindow, TokensOutsideTheWindowDoNotReachTheLogits) {
  RandomModelShape shape = Shape("llama");
  shape.n_layers = 1;
  shape.sliding_window = 4;
  auto model = Model::Load(Write(shape, "window"));
  std::vector<TokenId> changed = kTokens;
  changed[0] = 3000;  // position 0: seen by positions 0..3 only
  const std::vector<float> a = Logits(*model, kTokens, false), b = Logits(*model, changed, false);
  const int64_t v = model->config().n_vocab;
  auto differs = [&](int64_t pos) {
    double d = 0;
    for (int64_t i = 0; i < v; ++i) d = std::max(d, std::fabs(static_cast<double>(a[pos * v + i] - b[pos * v + i])));
    return d;
  };
  EXPECT_GT(differs(3), 1e-3) << "position 3 sees position 0";
  for (int64_t pos = 4; pos < static_cast<int64_t>(kTokens.size()); ++pos) EXPECT_EQ(differs(pos), 0.0) << pos;
}

TEST(SoftCap, FinalLogitsStayWithinTheCap) {
  auto model = Model::Load(Write(Shape("gemma2"), "softcap"));
  for (float x : Logits(*model, kTokens, false)) ASSERT_LE(std::fabs(x), 3.0f);
}

// Biases, norms and RoPE divisors change the output: a loader that dropped
// one would give the logits of the file without it.
TEST(OptionalTensors, ChangeWhatTheModelComputes) {
  RandomModelShape plain = Shape("llama");
  RandomModelShape scaled = plain;
  scaled.rope_scaling = RandomRopeScaling::kLlama3;
  scaled.rope_factor = 8.0f;
  scaled.rope_original_context = 16;
  auto a = Model::Load(Write(plain, "plain")), b = Model::Load(Write(scaled, "llama3"));
  const std::vector<float> la = Logits(*a, kTokens, false), lb = Logits(*b, kTokens, false);
  const int64_t v = a->config().n_vocab;
  double first = 0, later = 0;
  for (int64_t i = 0; i < v; ++i) first = std::max(first, std::fabs(static_cast<double>(la[i] - lb[i])));
  for (size_t i = static_cast<size_t>(v); i < la.size(); ++i)
    later = std::max(later, std::fabs(static_cast<double>(la[i] - lb[i])));
  EXPECT_EQ(first, 0.0) << "position 0 is not rotated";
  EXPECT_GT(later, 1e-3) << "rope_freqs changed nothing";
}

// Hostile weights: a NaN in layer 0's router makes its logits NaN; the forward
// pass ends with an error naming the router and the layer (the engine then
// ends the step's requests with it) instead of routing on garbage.
TEST(Router, NonFiniteLogitsEndTheForwardPassWithAnError) {
  for (const char* arch : {"qwen3moe", "gpt-oss"}) {
    const std::string path = Write(Shape(arch), std::string("nan-router-") + arch);
    uint64_t at = 0;
    {
      const GgufFile f = GgufFile::Open(path);
      at = f.data_offset() + f.FindTensor("blk.0.ffn_gate_inp.weight")->offset + 4 * 5;  // row 0, column 5
    }
    {
      std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
      const float nan = std::nanf("");
      file.seekp(static_cast<std::streamoff>(at));
      file.write(reinterpret_cast<const char*>(&nan), sizeof nan);
    }
    auto model = Model::Load(path);
    try {
      Logits(*model, kTokens, false);
      ADD_FAILURE() << arch << ": expected the forward pass to fail";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("layer 0: the router (ffn_gate_inp)"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace ridge
