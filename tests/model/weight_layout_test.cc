// What loading does to the weights' layout: a private copy is repacked in
// place where the active ISA has weight-panel kernels (and the model computes
// the same logits as from the file's layout: batch_invariance_test and
// random_model_test compare ISAs on such a model); a mapped file never is.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ridge/base/cpu_features.h"
#include "ridge/base/thread_pool.h"
#include "ridge/model/model.h"
#include "random_model.h"

namespace ridge {
namespace {

TEST(WeightLayout, CopyIsRepackedWhereTheIsaHasWeightPanelsMappedFileNever) {
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kF16}) {
    const std::string path = testing::RandomModelGguf(type);
    for (Isa isa : SupportedIsas()) {
      SetIsaOverride(isa);
      const auto copied = Model::Load(path, FileBacking::kHugePageMemory);
      const auto mapped = Model::Load(path, FileBacking::kMapped);
      ClearIsaOverride();
      const WeightLayout& c = copied->weights().layout;
      const bool panels = isa != Isa::kScalar && type != GgmlType::kF16;  // Q8_0, Q4_0: avx2 and avx512
      EXPECT_FALSE(c.mapped);
      EXPECT_EQ(panels, c.repacked_matrices > 0) << GgmlTypeName(type) << " " << IsaName(isa);
      // Every layer matrix and the untied output, all whole panels here; the bytes are the file's.
      const kernels::WeightMatrix& embd = copied->weights().token_embd;
      if (panels) {
        EXPECT_EQ(c.repacked_bytes, copied->weights().weight_bytes - embd.n_rows * embd.row_bytes);
      }
      EXPECT_NE(DescribeWeightLayout(c).find(panels ? "repacked at load for " + std::string(IsaName(isa)) : "file layout"), std::string::npos);
      const WeightLayout& m = mapped->weights().layout;
      EXPECT_TRUE(m.mapped);
      EXPECT_EQ(0, m.repacked_matrices);
      EXPECT_EQ(copied->weights().weight_bytes, mapped->weights().weight_bytes);
    }
  }
}

// Logits of every position of `tokens` in one prefill.
std::vector<float> PrefillLogits(Model& model, const std::vector<TokenId>& tokens) {
  ThreadPool pool(2);
  const int64_t n = static_cast<int64_t>(tokens.size()), v = model.config().n_vocab;
  PagedKvCache cache(model.KvShape(GgmlType::kF32, 4), 16);
  EXPECT_TRUE(cache.Reserve(0, n));
  std::vector<float> logits(static_cast<size_t>(n * v));
  Batch all;
  for (int64_t i = 0; i < n; ++i) all.Add(tokens[static_cast<size_t>(i)], i, 0, true);
  model.Forward(all, cache, logits.data(), pool);
  return logits;
}

// A tied output (no output.weight) is the embedding table, repacked as the LM
// head's panels: every token's embedding row is then read out of its panel.
// The logits must be the mapped file's, bit for bit, on every target.
TEST(WeightLayout, TiedEmbeddingIsRepackedAndLooksUpTheFileRows) {
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ5_0, GgmlType::kQ6_K}) {
    RandomModelOptions options;
    options.shape = {.n_embd = 256, .n_ff = 512, .n_layers = 1, .n_heads = 4, .n_kv_heads = 2, .n_ctx = 64};
    options.shape.tied_embeddings = true;
    options.type = type;
    options.seed = 3;
    const std::string path = testing::WriteRandomModelGguf(options, "tied-embedding", std::string(GgmlTypeName(type)) + ".gguf");
    // Tokens in different panels and rows of them (the vocabulary's 32000 rows are 1000 panels).
    const std::vector<TokenId> tokens = {1, 31, 32, 33, 450, 4996, 17354, 31999, 13, 29889};
    for (Isa isa : SupportedIsas()) {
      SetIsaOverride(isa);
      const auto copied = Model::Load(path, FileBacking::kHugePageMemory);
      const auto mapped = Model::Load(path, FileBacking::kMapped);
      const bool panels = copied->weights().layout.repacked_matrices > 0;
      EXPECT_EQ(panels, copied->weights().token_embd.panels) << GgmlTypeName(type) << " " << IsaName(isa);
      EXPECT_EQ(panels, copied->weights().output.panels) << GgmlTypeName(type) << " " << IsaName(isa);
      EXPECT_EQ(panels, isa != Isa::kScalar) << GgmlTypeName(type) << " " << IsaName(isa);
      EXPECT_TRUE(PrefillLogits(*copied, tokens) == PrefillLogits(*mapped, tokens))
          << GgmlTypeName(type) << " " << IsaName(isa);
      ClearIsaOverride();
    }
  }
}

}  // namespace
}  // namespace ridge
