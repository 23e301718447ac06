// Recipes: names parsed, and per-tensor types as llama.cpp's
// llama_tensor_get_type gives them for a dense Llama model.
#include "ridge/gguf/quant_recipe.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "ridge/gguf/dequantize.h"

namespace ridge {
namespace {

QuantRecipe Recipe(const std::string& name) {
  const std::optional<QuantRecipe> r = ParseQuantRecipe(name);
  EXPECT_TRUE(r.has_value()) << name;
  return r.value_or(PureRecipe(GgmlType::kF32));
}

// The type of a 2-D tensor with rows of row_elems, in an 8-layer model.
GgmlType TypeOf(const std::string& recipe, const std::string& name, int64_t row_elems = 4096,
                RecipeModel model = {8, 1, true}) {
  const std::optional<GgmlType> t = TypeFor(Recipe(recipe), name, {row_elems, 1024}, model);
  EXPECT_TRUE(t.has_value()) << name;
  return t.value_or(GgmlType::kF32);
}

TEST(QuantRecipe, ParsesMixesAndSingleTypes) {
  struct Case {
    const char* name;
    QuantMix mix;
    GgmlType base;
    uint32_t file_type;
  };
  const Case cases[] = {
      {"Q2_K", QuantMix::kQ2_K, GgmlType::kQ2_K, 10},       {"q3_k_m", QuantMix::kQ3_K_M, GgmlType::kQ3_K, 12},
      {"Q4_K_S", QuantMix::kQ4_K_S, GgmlType::kQ4_K, 14},   {"Q4_K_M", QuantMix::kQ4_K_M, GgmlType::kQ4_K, 15},
      {"Q5_K_S", QuantMix::kQ5_K_S, GgmlType::kQ5_K, 16},   {"Q5_K_M", QuantMix::kQ5_K_M, GgmlType::kQ5_K, 17},
      {"Q6_K", QuantMix::kQ6_K, GgmlType::kQ6_K, 18},       {"iq4_xs", QuantMix::kIQ4_XS, GgmlType::kIQ4_XS, 30},
      {"Q8_0", QuantMix::kPure, GgmlType::kQ8_0, 7},        {"Q4_0", QuantMix::kPure, GgmlType::kQ4_0, 2},
      {"F16", QuantMix::kPure, GgmlType::kF16, 1},          {"Q4_K", QuantMix::kPure, GgmlType::kQ4_K, 14},
      {"Q5_K", QuantMix::kPure, GgmlType::kQ5_K, 16},       {"BF16", QuantMix::kPure, GgmlType::kBF16, 32},
  };
  for (const Case& c : cases) {
    const QuantRecipe r = Recipe(c.name);
    EXPECT_EQ(r.mix, c.mix) << c.name;
    EXPECT_EQ(r.base, c.base) << c.name;
    EXPECT_EQ(r.file_type, c.file_type) << c.name;
  }
  EXPECT_FALSE(ParseQuantRecipe("Q4_K_X").has_value());
  EXPECT_FALSE(ParseQuantRecipe("Q8_K").has_value());  // a type, but not one ridge writes
  EXPECT_FALSE(ParseQuantRecipe("").has_value());
}

TEST(QuantRecipe, NormsAreKept) {
  EXPECT_FALSE(TypeFor(Recipe("Q4_K_M"), "blk.0.attn_norm.weight", {4096}, {}).has_value());
  EXPECT_FALSE(TypeFor(Recipe("Q8_0"), "output_norm.weight", {4096}, {}).has_value());
}

TEST(QuantRecipe, PureRecipesGiveEveryMatrixTheirType) {
  for (const char* name : {"token_embd.weight", "output.weight", "blk.0.attn_v.weight", "blk.7.ffn_down.weight"})
    EXPECT_EQ(TypeOf("Q4_0", name), GgmlType::kQ4_0) << name;
  // Rows that do not fit stay the type: the writer reports them.
  EXPECT_EQ(TypeOf("Q4_K", "blk.0.attn_q.weight", 64), GgmlType::kQ4_K);
}

TEST(QuantRecipe, Q4_K_M) {
  // 8 layers: use_more_bits picks 0 (first eighth), 7 (last eighth), 3 and 6 ((l − 1) % 3 == 2).
  const std::vector<int> more_bits = {0, 3, 6, 7};
  for (int layer = 0; layer < 8; ++layer) {
    const bool more = std::find(more_bits.begin(), more_bits.end(), layer) != more_bits.end();
    const std::string blk = "blk." + std::to_string(layer) + ".";
    const GgmlType expected = more ? GgmlType::kQ6_K : GgmlType::kQ4_K;
    EXPECT_EQ(TypeOf("Q4_K_M", blk + "attn_v.weight"), expected) << layer;
    EXPECT_EQ(TypeOf("Q4_K_M", blk + "ffn_down.weight"), expected) << layer;
    for (const char* t : {"attn_q.weight", "attn_k.weight", "attn_output.weight", "ffn_gate.weight", "ffn_up.weight"})
      EXPECT_EQ(TypeOf("Q4_K_M", blk + t), GgmlType::kQ4_K) << layer << " " << t;
    EXPECT_EQ(TypeOf("Q4_K_M", blk + "attn_qkv.weight"), GgmlType::kQ5_K);
  }
  EXPECT_EQ(TypeOf("Q4_K_M", "output.weight"), GgmlType::kQ6_K);
  EXPECT_EQ(TypeOf("Q4_K_M", "token_embd.weight"), GgmlType::kQ4_K);
  // Tied embeddings: token_embd is the output matrix.
  EXPECT_EQ(TypeOf("Q4_K_M", "token_embd.weight", 4096, {8, 1, false}), GgmlType::kQ6_K);
}

TEST(QuantRecipe, OtherMixes) {
  // 32 layers: use_more_bits is true for 0..3, 28..31 and 6, 9, ..., 27.
  const RecipeModel llama7b{32, 1, true}, gqa8{32, 8, true};
  EXPECT_EQ(TypeOf("Q5_K_M", "blk.6.attn_v.weight", 4096, llama7b), GgmlType::kQ6_K);
  EXPECT_EQ(TypeOf("Q5_K_M", "blk.5.attn_v.weight", 4096, llama7b), GgmlType::kQ5_K);
  EXPECT_EQ(TypeOf("Q5_K_M", "blk.30.ffn_down.weight", 4096, llama7b), GgmlType::kQ6_K);
  EXPECT_EQ(TypeOf("Q5_K_M", "blk.4.ffn_up.weight", 4096, llama7b), GgmlType::kQ5_K);
  EXPECT_EQ(TypeOf("Q5_K_M", "blk.4.attn_qkv.weight", 4096, llama7b), GgmlType::kQ6_K);
  EXPECT_EQ(TypeOf("Q4_K_S", "blk.3.attn_v.weight", 4096, llama7b), GgmlType::kQ5_K);
  EXPECT_EQ(TypeOf("Q4_K_S", "blk.4.attn_v.weight", 4096, llama7b), GgmlType::kQ4_K);
  EXPECT_EQ(TypeOf("Q4_K_S", "blk.3.ffn_down.weight", 4096, llama7b), GgmlType::kQ5_K);
  EXPECT_EQ(TypeOf("Q4_K_S", "blk.4.ffn_down.weight", 4096, llama7b), GgmlType::kQ4_K);
  EXPECT_EQ(TypeOf("Q5_K_S", "blk.0.attn_v.weight", 4096, llama7b), GgmlType::kQ5_K);
  EXPECT_EQ(TypeOf("Q6_K", "blk.0.attn_v.weight", 4096, llama7b), GgmlType::kQ6_K);
  EXPECT_EQ(TypeOf("Q6_K", "output.weight", 4096, llama7b), GgmlType::kQ6_K);
  EXPECT_EQ(TypeOf("Q3_K_M", "blk.1.attn_v.weight", 4096, llama7b), GgmlType::kQ5_K);
  EXPECT_EQ(TypeOf("Q3_K_M", "blk.2.attn_v.weight", 4096, llama7b), GgmlType::kQ4_K);
  EXPECT_EQ(TypeOf("Q3_K_M", "blk.1.ffn_down.weight", 4096, llama7b), GgmlType::kQ5_K);  // < 32 / 16
  EXPECT_EQ(TypeOf("Q3_K_M", "blk.2.ffn_down.weight", 4096, llama7b), GgmlType::kQ4_K);
  EXPECT_EQ(TypeOf("Q3_K_M", "blk.2.attn_output.weight", 4096, llama7b), GgmlType::kQ4_K);
  EXPECT_EQ(TypeOf("Q3_K_M", "blk.2.ffn_gate.weight", 4096, llama7b), GgmlType::kQ3_K);
  EXPECT_EQ(TypeOf("Q2_K", "blk.2.attn_v.weight", 4096, llama7b), GgmlType::kQ3_K);
  EXPECT_EQ(TypeOf("Q2_K", "blk.2.attn_v.weight", 4096, gqa8), GgmlType::kQ4_K);
  EXPECT_EQ(TypeOf("Q2_K", "blk.2.ffn_down.weight", 4096, llama7b), GgmlType::kQ3_K);
  EXPECT_EQ(TypeOf("Q2_K", "blk.2.attn_output.weight", 4096, llama7b), GgmlType::kQ3_K);
  EXPECT_EQ(TypeOf("Q2_K", "blk.2.attn_q.weight", 4096, llama7b), GgmlType::kQ2_K);
  EXPECT_EQ(TypeOf("IQ4_XS", "blk.2.attn_v.weight", 4096, gqa8), GgmlType::kQ5_K);
  EXPECT_EQ(TypeOf("IQ4_XS", "blk.2.attn_v.weight", 4096, llama7b), GgmlType::kIQ4_XS);
  EXPECT_EQ(TypeOf("IQ4_XS", "blk.3.ffn_down.weight", 4096, llama7b), GgmlType::kQ5_K);
  EXPECT_EQ(TypeOf("IQ4_XS", "blk.4.ffn_down.weight", 4096, llama7b), GgmlType::kIQ4_XS);
}

// llama.cpp's substitute where ridge has it, Q8_0 until then.
GgmlType LlamaFallback(GgmlType llama) { return CanQuantizeTo(llama) ? llama : GgmlType::kQ8_0; }

TEST(QuantRecipe, RowsThatDoNotFitFallBack) {
  // Rows of 4160 = 130 · 32: no 256-blocks, 32-blocks fit.
  EXPECT_EQ(TypeOf("Q4_K_M", "blk.1.attn_q.weight", 4160), LlamaFallback(GgmlType::kQ5_0));
  EXPECT_EQ(TypeOf("Q4_K_M", "blk.0.attn_v.weight", 4160), GgmlType::kQ8_0);  // Q6_K -> Q8_0
  EXPECT_EQ(TypeOf("Q5_K_S", "blk.1.attn_q.weight", 4160), LlamaFallback(GgmlType::kQ5_1));
  EXPECT_EQ(TypeOf("Q2_K", "blk.1.attn_q.weight", 4160), LlamaFallback(GgmlType::kIQ4_NL));
  EXPECT_EQ(TypeOf("Q3_K_M", "blk.5.ffn_gate.weight", 4160), LlamaFallback(GgmlType::kIQ4_NL));
  EXPECT_EQ(TypeOf("IQ4_XS", "blk.5.ffn_gate.weight", 4160), LlamaFallback(GgmlType::kIQ4_NL));
  EXPECT_EQ(TypeOf("Q4_K_M", "output.weight", 4160), GgmlType::kQ8_0);
  // Rows of 72: not even 32-blocks, F16.
  EXPECT_EQ(TypeOf("Q4_K_M", "blk.1.attn_q.weight", 72), GgmlType::kF16);
  EXPECT_EQ(TypeOf("Q4_K_M", "output.weight", 72), GgmlType::kF16);
  EXPECT_TRUE(RowsFit(GgmlType::kQ4_K, 512));
  EXPECT_FALSE(RowsFit(GgmlType::kQ4_K, 4160));
}

}  // namespace
}  // namespace ridge
