// llama2.c import: the converted GGUF holds the checkpoint's floats bit for
// bit, llama.cpp's metadata keys and tensor names, and GGUF token conventions.
#include "ridge/gguf/llama2c_import.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ridge/base/error.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/gguf/gguf_file.h"
#include "test_paths.h"

namespace ridge {
namespace {

std::string Checkpoint() { return testing::SharedDir() + "/models/stories260K.bin"; }
std::string Tokenizer() { return testing::SharedDir() + "/models/tok512.bin"; }

std::vector<float> ReadFloats(const std::string& path, uint64_t offset, int64_t n) {
  std::ifstream in(path, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::vector<float> v(static_cast<size_t>(n));
  in.read(reinterpret_cast<char*>(v.data()), n * 4);
  EXPECT_TRUE(in.good());
  return v;
}

std::string Convert(GgmlType type) {
  const std::string out = testing::ScratchDir("llama2c") + "/stories260K.gguf";
  const auto ckpt = Llama2cCheckpoint::Open(Checkpoint());
  const auto vocab = ReadLlama2cTokenizer(Tokenizer(), ckpt.header.vocab_size);
  Llama2cConvertOptions options;
  options.type = type;
  options.name = "stories260K";
  BuildLlama2cGguf(ckpt, vocab, options).Write(out);
  return out;
}

TEST(Llama2cImport, Header) {
  const auto c = Llama2cCheckpoint::Open(Checkpoint());
  EXPECT_EQ(c.header.dim, 64);
  EXPECT_EQ(c.header.hidden_dim, 172);
  EXPECT_EQ(c.header.n_layers, 5);
  EXPECT_EQ(c.header.n_heads, 8);
  EXPECT_EQ(c.header.n_kv_heads, 4);
  EXPECT_EQ(c.header.vocab_size, 512);
  EXPECT_EQ(c.header.seq_len, 512);
  EXPECT_TRUE(c.header.shared_classifier);
  EXPECT_EQ(c.tensors.size(), 1u + 5 * 9 + 1);
}

TEST(Llama2cImport, MetadataFollowsLlamaCppConventions) {
  const GgufFile f = GgufFile::Open(Convert(GgmlType::kF32));
  EXPECT_EQ(f.RequireString("general.architecture"), "llama");
  EXPECT_EQ(f.RequireString("general.name"), "stories260K");
  EXPECT_EQ(f.RequireInt("llama.context_length"), 512);
  EXPECT_EQ(f.RequireInt("llama.embedding_length"), 64);
  EXPECT_EQ(f.RequireInt("llama.block_count"), 5);
  EXPECT_EQ(f.RequireInt("llama.feed_forward_length"), 172);
  EXPECT_EQ(f.RequireInt("llama.attention.head_count"), 8);
  EXPECT_EQ(f.RequireInt("llama.attention.head_count_kv"), 4);
  EXPECT_EQ(f.RequireInt("llama.rope.dimension_count"), 8);
  EXPECT_EQ(f.Find("llama.attention.layer_norm_rms_epsilon")->type, GgufValueType::kFloat32);
  EXPECT_FLOAT_EQ(static_cast<float>(*f.GetFloat("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
  EXPECT_EQ(f.GetFloat("llama.rope.freq_base"), 10000.0);
  EXPECT_EQ(f.RequireString("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(f.RequireInt("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(f.RequireInt("tokenizer.ggml.eos_token_id"), 2);
  EXPECT_EQ(f.RequireInt("tokenizer.ggml.unknown_token_id"), 0);
  EXPECT_EQ(f.GetBool("tokenizer.ggml.add_bos_token"), true);
  EXPECT_EQ(f.GetBool("tokenizer.ggml.add_eos_token"), false);

  const auto& tokens = *f.Find("tokenizer.ggml.tokens")->AsArray();
  const auto& scores = *f.Find("tokenizer.ggml.scores")->AsArray();
  const auto& types = *f.Find("tokenizer.ggml.token_type")->AsArray();
  ASSERT_EQ(tokens.size(), 512u);
  ASSERT_EQ(scores.size(), 512u);
  ASSERT_EQ(types.size(), 512u);
  EXPECT_EQ(f.Find("tokenizer.ggml.token_type")->array_elem_type, GgufValueType::kInt32);
  EXPECT_EQ(*tokens[0].AsString(), "<unk>");
  EXPECT_EQ(types[0].AsInt(), 2);
  EXPECT_EQ(*tokens[1].AsString(), "<s>");
  EXPECT_EQ(*tokens[2].AsString(), "</s>");
  EXPECT_EQ(types[1].AsInt(), 3);
  EXPECT_EQ(types[2].AsInt(), 3);
  EXPECT_EQ(*tokens[3].AsString(), "<0x00>");
  EXPECT_EQ(*tokens[13].AsString(), "<0x0A>");
  EXPECT_EQ(*tokens[258].AsString(), "<0xFF>");
  for (int i = 3; i <= 258; ++i) EXPECT_EQ(types[i].AsInt(), 6) << i;
  int with_space_marker = 0;
  for (int i = 259; i < 512; ++i) {
    EXPECT_EQ(types[i].AsInt(), 1) << i;
    const std::string& piece = *tokens[i].AsString();
    EXPECT_EQ(piece.find(' '), std::string::npos) << "space left in piece " << i;
    if (piece.find("\xE2\x96\x81") != std::string::npos) ++with_space_marker;
  }
  EXPECT_GT(with_space_marker, 50);

  // Scores are the tokenizer file's floats, in order (score, len, bytes per token after a 4-byte header).
  std::ifstream in(Tokenizer(), std::ios::binary);
  in.seekg(4);
  for (int i = 0; i < 512; ++i) {
    float score;
    int32_t len;
    in.read(reinterpret_cast<char*>(&score), 4);
    in.read(reinterpret_cast<char*>(&len), 4);
    in.seekg(len, std::ios::cur);
    EXPECT_EQ(static_cast<float>(*scores[i].AsFloat()), score) << i;
  }
}

// Offsets computed here from the README's layout, independently of the importer.
TEST(Llama2cImport, TensorsEqualSourceFloats) {
  const GgufFile f = GgufFile::Open(Convert(GgmlType::kF32));
  const int64_t dim = 64, hid = 172, L = 5, kv = 32, vocab = 512;
  uint64_t off = 28;
  auto check = [&](const std::string& name, std::vector<int64_t> dims, uint64_t at) {
    const GgufTensorInfo* t = f.FindTensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(t->type, GgmlType::kF32) << name;
    EXPECT_EQ(t->dims, dims) << name;
    const auto want = ReadFloats(Checkpoint(), at, t->n_elements);
    EXPECT_EQ(std::memcmp(t->data, want.data(), want.size() * 4), 0) << name;
  };
  check("token_embd.weight", {dim, vocab}, off);
  off += vocab * dim * 4;
  struct A { const char* name; std::vector<int64_t> dims; };
  const std::vector<A> layered = {{"attn_norm", {dim}},       {"attn_q", {dim, dim}},   {"attn_k", {dim, kv}},
                                  {"attn_v", {dim, kv}},      {"attn_output", {dim, dim}}, {"ffn_norm", {dim}},
                                  {"ffn_gate", {dim, hid}},   {"ffn_down", {hid, dim}}, {"ffn_up", {dim, hid}}};
  for (const auto& a : layered) {
    int64_t n = 1;
    for (int64_t d : a.dims) n *= d;
    for (int64_t l = 0; l < L; ++l) check("blk." + std::to_string(l) + "." + a.name + ".weight", a.dims, off + l * n * 4);
    off += L * n * 4;
  }
  check("output_norm.weight", {dim}, off);
  EXPECT_EQ(f.FindTensor("output.weight"), nullptr) << "shared classifier: no output.weight";
  EXPECT_EQ(f.tensors().size(), 47u);
  EXPECT_EQ(f.tensors().front().name, "token_embd.weight");
}

TEST(Llama2cImport, Q8_0KeepsNormsF32AndFallsBackForOddRows) {
  const GgufFile f = GgufFile::Open(Convert(GgmlType::kQ8_0));
  EXPECT_EQ(f.GetInt("general.file_type"), 7);
  EXPECT_EQ(f.FindTensor("blk.0.attn_norm.weight")->type, GgmlType::kF32);
  EXPECT_EQ(f.FindTensor("output_norm.weight")->type, GgmlType::kF32);
  EXPECT_EQ(f.FindTensor("blk.2.ffn_down.weight")->type, GgmlType::kF16);  // rows of 172
  const GgufTensorInfo* q = f.FindTensor("blk.3.attn_q.weight");
  ASSERT_EQ(q->type, GgmlType::kQ8_0);
  // Dequantized values stay within Q8_0's error of the source floats.
  const uint64_t at = 28 + (512 * 64 + 5 * 64) * 4 + 3 * 64 * 64 * 4;
  const auto src = ReadFloats(Checkpoint(), at, 64 * 64);
  std::vector<float> row(64);
  for (int r = 0; r < 64; ++r) {
    DequantizeRow(GgmlType::kQ8_0, q->data + r * RowBytes(GgmlType::kQ8_0, 64), row.data(), 64);
    for (int b = 0; b < 2; ++b) {
      float amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(src[r * 64 + b * 32 + j]));
      for (int j = 0; j < 32; ++j)
        EXPECT_LE(std::fabs(row[b * 32 + j] - src[r * 64 + b * 32 + j]), amax / 127 * 0.6f);
    }
  }
}

TEST(Llama2cImport, TruncatedCheckpointIsAClearError) {
  const std::string dir = testing::ScratchDir("llama2c-bad");
  std::ifstream in(Checkpoint(), std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  {
    std::ofstream out(dir + "/cut.bin", std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() - 1000));
  }
  try {
    Llama2cCheckpoint::Open(dir + "/cut.bin");
    FAIL();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(dir + "/cut.bin"), std::string::npos) << msg;
    EXPECT_NE(msg.find("should be 1056540 bytes"), std::string::npos) << msg;
    EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
  }
  {
    std::ofstream out(dir + "/short.bin", std::ios::binary);
    out.write(bytes.data(), 10);
  }
  EXPECT_THROW(Llama2cCheckpoint::Open(dir + "/short.bin"), Error);
  // n_heads = 7 does not divide dim = 64.
  bytes[12] = 7;
  {
    std::ofstream out(dir + "/heads.bin", std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  try {
    Llama2cCheckpoint::Open(dir + "/heads.bin");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("not divisible by n_heads 7"), std::string::npos) << e.what();
  }
}

TEST(Llama2cImport, BadTokenizerIsAClearError) {
  EXPECT_THROW(ReadLlama2cTokenizer(Tokenizer(), 1000), Error);  // runs out of bytes
  EXPECT_THROW(ReadLlama2cTokenizer(Tokenizer(), 300), Error);   // trailing bytes
  const std::string dir = testing::ScratchDir("tok-bad");
  std::ifstream in(Tokenizer(), std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), {});
  const int32_t huge = 1 << 30;
  std::memcpy(bytes.data() + 8, &huge, 4);  // token 0's length
  {
    std::ofstream out(dir + "/t.bin", std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  try {
    ReadLlama2cTokenizer(dir + "/t.bin", 512);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token 0 length 1073741824 at byte offset 8"), std::string::npos) << e.what();
  }
}

// A widening target that cannot hold the checkpoint (stories260K: dim 64,
// hidden 172, 5 layers, 8 heads of 8, 4 kv heads, 512 tokens) is refused
// with the size that does not fit.
TEST(Llama2cImport, WideningThatCannotHoldTheModelIsAClearError) {
  const auto ckpt = Llama2cCheckpoint::Open(Checkpoint());
  const Llama2cShape fits{.dim = 256, .hidden_dim = 256, .n_layers = 7, .n_heads = 16, .n_kv_heads = 4,
                             .vocab_size = 600};
  EXPECT_NO_THROW(CheckWidening(ckpt, fits));
  auto refused = [&](Llama2cShape to, const std::string& what) {
    try {
      CheckWidening(ckpt, to);
      ADD_FAILURE() << "accepted a target whose " << what << " does not fit";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("target " + what), std::string::npos) << e.what();
    }
  };
  Llama2cShape to = fits;
  to.dim = 64;  // no spare dim for the constant
  refused(to, "dim");
  to = fits;
  to.hidden_dim = 128;
  refused(to, "hidden_dim");
  to = fits;
  to.n_layers = 4;
  refused(to, "n_layers");
  to = fits;
  to.n_heads = 4;  // 1 query head per kv head, the source has 2
  refused(to, "heads per kv head");
  to = fits;
  to.n_heads = 8, to.n_kv_heads = 4, to.dim = 96;  // head size 12: not a multiple of 8
  refused(to, "head size");
  to = fits;
  to.vocab_size = 500;
  refused(to, "vocab_size");
}

}  // namespace
}  // namespace ridge
