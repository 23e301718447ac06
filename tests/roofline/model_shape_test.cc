#include "ridge/roofline/model_shape.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "ridge/base/error.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/gguf_writer.h"
#include "test_paths.h"

namespace ridge {
namespace {

// A llama GGUF with zero weights: dim 64, 4 heads (head dim 16), 2 KV heads,
// ffn 128, vocab 96, 2 layers. Layers in `layer_type` except blk.1.ffn_down
// in `odd_type`; the LM head in `output_type` (none: tied embeddings).
std::string WriteModel(const std::string& dir, GgmlType layer_type, GgmlType odd_type,
                       std::optional<GgmlType> output_type, bool drop_attn_v = false) {
  constexpr int64_t d = 64, ff = 128, vocab = 96, kv_dim = 32;
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetString("general.name", "unit-llama");
  w.SetU32("llama.context_length", 256);
  w.SetU32("llama.embedding_length", d);
  w.SetU32("llama.block_count", 2);
  w.SetU32("llama.feed_forward_length", ff);
  w.SetU32("llama.attention.head_count", 4);
  w.SetU32("llama.attention.head_count_kv", 2);
  w.SetF32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  auto zeros = [](uint8_t* out, int64_t n) { std::fill(out, out + n, uint8_t{0}); };
  w.AddTensor("token_embd.weight", GgmlType::kF16, {d, vocab}, zeros);
  w.AddTensor("output_norm.weight", GgmlType::kF32, {d}, zeros);
  if (output_type) w.AddTensor("output.weight", *output_type, {d, vocab}, zeros);
  for (int layer = 0; layer < 2; ++layer) {
    const std::string p = fmt::format("blk.{}.", layer);
    w.AddTensor(p + "attn_norm.weight", GgmlType::kF32, {d}, zeros);
    w.AddTensor(p + "ffn_norm.weight", GgmlType::kF32, {d}, zeros);
    w.AddTensor(p + "attn_q.weight", layer_type, {d, d}, zeros);
    w.AddTensor(p + "attn_k.weight", layer_type, {d, kv_dim}, zeros);
    if (!drop_attn_v) w.AddTensor(p + "attn_v.weight", layer_type, {d, kv_dim}, zeros);
    w.AddTensor(p + "attn_output.weight", layer_type, {d, d}, zeros);
    w.AddTensor(p + "ffn_gate.weight", layer_type, {d, ff}, zeros);
    w.AddTensor(p + "ffn_up.weight", layer_type, {d, ff}, zeros);
    w.AddTensor(p + "ffn_down.weight", layer == 1 ? odd_type : layer_type, {ff, d}, zeros);
  }
  const std::string path = dir + "/model.gguf";
  w.Write(path);
  return path;
}

TEST(ModelShape, FromGgufReadsTheTensorsTypes) {
  const std::string path =
      WriteModel(testing::ScratchDir("shape"), GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kF16);
  const GgufFile file = GgufFile::Open(path);
  const ModelShape s = ShapeFromGguf(file);
  EXPECT_EQ(s.name, "unit-llama");
  EXPECT_EQ(s.config.n_embd, 64);
  EXPECT_EQ(s.config.n_kv_heads, 2);
  EXPECT_EQ(s.config.head_dim, 16);
  EXPECT_EQ(s.config.n_vocab, 96);
  EXPECT_FALSE(s.tied_embeddings);
  EXPECT_DOUBLE_EQ(s.bytes_per_weight.attn_q, 34.0 / 32);
  EXPECT_DOUBLE_EQ(s.bytes_per_weight.attn_v, 34.0 / 32);
  // ffn_down: one layer Q8_0, one Q4_0, same size: the average.
  EXPECT_DOUBLE_EQ(s.bytes_per_weight.ffn_down, (34.0 / 32 + 18.0 / 32) / 2);
  EXPECT_DOUBLE_EQ(s.bytes_per_weight.output, 2.0);
  EXPECT_EQ(s.main_weight_type, GgmlType::kQ8_0);
  EXPECT_EQ(s.weight_types, "Q8_0 + Q4_0 (11%), LM head F16");  // 8192 of 73728 layer weights
  double all_bytes = 0;
  for (const auto& t : file.tensors()) all_bytes += static_cast<double>(t.n_bytes);
  EXPECT_DOUBLE_EQ(s.total_weight_bytes, all_bytes);
}

TEST(ModelShape, TiedEmbeddingsAndWeightOverride) {
  const std::string path = WriteModel(testing::ScratchDir("shape-tied"), GgmlType::kF16, GgmlType::kF16, std::nullopt);
  const ModelShape s = ShapeFromGguf(GgufFile::Open(path));
  EXPECT_TRUE(s.tied_embeddings);
  EXPECT_DOUBLE_EQ(s.bytes_per_weight.output, 2.0);  // token_embd serves as the LM head
  const ModelShape q = WithWeightType(s, GgmlType::kQ4_K);
  EXPECT_DOUBLE_EQ(q.bytes_per_weight.ffn_gate, 144.0 / 256);
  EXPECT_DOUBLE_EQ(q.bytes_per_weight.output, 144.0 / 256);
  EXPECT_EQ(q.weight_types, "Q4_K");
  EXPECT_EQ(q.main_weight_type, GgmlType::kQ4_K);
}

TEST(ModelShape, MissingTensorIsNamed) {
  const std::string path =
      WriteModel(testing::ScratchDir("shape-bad"), GgmlType::kF16, GgmlType::kF16, GgmlType::kF16, true);
  try {
    ShapeFromGguf(GgufFile::Open(path));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("blk.0.attn_v.weight"), std::string::npos) << e.what();
  }
}

TEST(ModelShape, BytesPerWeight) {
  EXPECT_EQ(BytesPerWeight(GgmlType::kF32), 4.0);
  EXPECT_EQ(BytesPerWeight(GgmlType::kF16), 2.0);
  EXPECT_EQ(BytesPerWeight(GgmlType::kBF16), 2.0);
  EXPECT_EQ(BytesPerWeight(GgmlType::kQ8_0), 34.0 / 32);
  EXPECT_EQ(BytesPerWeight(GgmlType::kQ4_0), 18.0 / 32);
  EXPECT_EQ(BytesPerWeight(GgmlType::kQ4_K), 144.0 / 256);
}

}  // namespace
}  // namespace ridge
