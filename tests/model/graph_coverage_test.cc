// The loader runs the Llama graph only, so it refuses what that graph would
// silently mis-run: another architecture, or a tensor it would not read.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/model_generator.h"
#include "ridge/model/llama_model.h"
#include "test_paths.h"

namespace ridge {
namespace {

GgufWriter SmallLlama() {
  GgufFile vocab = GgufFile::Open(testing::SharedDir() + "/vocab/ggml-vocab-llama-spm.gguf");
  RandomModelOptions options;
  options.shape = {64, 128, 1, 2, 2, 64};
  options.seed = 3;
  return BuildRandomLlamaGguf(vocab, options, nullptr);
}

void ExpectRefused(const GgufWriter& w, const std::vector<std::string>& needles) {
  const std::string path = testing::ScratchDir("graph") + "/model.gguf";
  w.Write(path);
  try {
    LlamaModel::Load(path);
    ADD_FAILURE() << "expected the model to be refused";
  } catch (const Error& e) {
    for (const std::string& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
  }
}

TEST(LlamaGraph, PlainLlamaLoads) {
  const std::string path = testing::ScratchDir("graph") + "/model.gguf";
  SmallLlama().Write(path);
  EXPECT_EQ(LlamaModel::Load(path)->config().n_layers, 1);
}

TEST(LlamaGraph, OtherArchitecturesAreRefused) {
  GgufWriter w = SmallLlama();
  w.SetString("general.architecture", "qwen2");
  ExpectRefused(w, {"general.architecture", "'qwen2'", "'llama'"});
}

TEST(LlamaGraph, TensorsTheGraphWouldIgnoreAreRefused) {
  for (const char* name : {"blk.0.attn_q.bias", "rope_freqs.weight"}) {
    GgufWriter w = SmallLlama();
    w.AddTensorBytes(name, GgmlType::kF32, {64}, std::vector<uint8_t>(64 * 4, 0));
    ExpectRefused(w, {name, "not part of the llama graph"});
  }
}

}  // namespace
}  // namespace ridge
