// What loading does to the weights' layout: a private copy is repacked in
// place where the active ISA has weight-panel kernels (and the model computes
// the same logits as from the file's layout: batch_invariance_test and
// random_model_test compare ISAs on such a model); a mapped file never is.
#include <gtest/gtest.h>

#include <string>

#include "ridge/base/cpu_features.h"
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

}  // namespace
}  // namespace ridge
