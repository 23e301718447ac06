// `ridge gen-model`: random-weight llama GGUFs read back with the right keys,
// shapes, types and values, byte-for-byte deterministic for a seed.
#include "ridge/gguf/model_generator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <cstring>

#include <sys/wait.h>

#include "ridge/base/error.h"
#include "ridge/base/thread_pool.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/quantize_file.h"
#include "gguf/temp_dirs.h"
#include "test_paths.h"

namespace ridge {
namespace {

using ::testing::HasSubstr;

std::string SpmVocab() { return testing::SharedDir() + "/vocab/ggml-vocab-llama-spm.gguf"; }

RandomModelOptions TinyOptions(GgmlType type, uint64_t seed = 1) {
  RandomModelOptions o;
  o.shape.n_embd = 64;
  o.shape.n_ff = 128;
  o.shape.n_layers = 2;
  o.shape.n_heads = 4;
  o.shape.n_kv_heads = 2;
  o.shape.n_ctx = 256;
  o.type = type;
  o.seed = seed;
  o.name = "tiny";
  return o;
}

std::string Generate(const RandomModelOptions& options, ThreadPool* pool = nullptr) {
  const GgufFile vocab = GgufFile::Open(SpmVocab());
  const std::string path = testing::TempDir("gen") + "/model.gguf";
  BuildRandomModelGguf(vocab, options, pool).Write(path);
  return path;
}

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

bool SameValue(const GgufValue& a, const GgufValue& b) {
  if (a.type != b.type) return false;
  if (a.type != GgufValueType::kArray) {
    if (a.AsString()) return b.AsString() && *a.AsString() == *b.AsString();
    if (a.AsBool()) return b.AsBool() == a.AsBool();
    if (a.AsInt()) return a.AsInt() == b.AsInt();
    return a.AsFloat() == b.AsFloat();
  }
  if (a.array_elem_type != b.array_elem_type || a.AsArray()->size() != b.AsArray()->size()) return false;
  for (size_t i = 0; i < a.AsArray()->size(); ++i)
    if (!SameValue((*a.AsArray())[i], (*b.AsArray())[i])) return false;
  return true;
}

std::vector<float> Row(const GgufTensorInfo& t, int64_t r) {
  std::vector<float> out(static_cast<size_t>(t.dims[0]));
  DequantizeRow(t.type, t.data + r * RowBytes(t.type, t.dims[0]), out.data(), t.dims[0]);
  return out;
}

class GenModelEachType : public ::testing::TestWithParam<GgmlType> {};

TEST_P(GenModelEachType, WritesALlamaGgufWithTheRightKeysShapesTypesAndValues) {
  const GgmlType type = GetParam();
  const std::string path = Generate(TinyOptions(type));
  const GgufFile f = GgufFile::Open(path);
  const GgufFile vocab = GgufFile::Open(SpmVocab());

  EXPECT_EQ(f.RequireString("general.architecture"), "llama");
  EXPECT_EQ(f.RequireString("general.name"), "tiny");
  EXPECT_EQ(f.RequireInt("general.file_type"), LlamaFileType(type));
  EXPECT_EQ(f.Find("general.quantization_version") != nullptr, TraitsOf(type).block_elems > 1);
  EXPECT_EQ(f.RequireInt("llama.vocab_size"), 32000);
  EXPECT_EQ(f.RequireInt("llama.context_length"), 256);
  EXPECT_EQ(f.RequireInt("llama.embedding_length"), 64);
  EXPECT_EQ(f.RequireInt("llama.block_count"), 2);
  EXPECT_EQ(f.RequireInt("llama.feed_forward_length"), 128);
  EXPECT_EQ(f.RequireInt("llama.attention.head_count"), 4);
  EXPECT_EQ(f.RequireInt("llama.attention.head_count_kv"), 2);
  EXPECT_EQ(f.RequireInt("llama.rope.dimension_count"), 16);
  EXPECT_FLOAT_EQ(static_cast<float>(*f.GetFloat("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
  EXPECT_FLOAT_EQ(static_cast<float>(*f.GetFloat("llama.rope.freq_base")), 10000.0f);
  int n_tokenizer_keys = 0;
  for (const auto& [key, value] : vocab.metadata()) {
    if (key.rfind("tokenizer.", 0) != 0) continue;
    ++n_tokenizer_keys;
    const GgufValue* copied = f.Find(key);
    ASSERT_NE(copied, nullptr) << key;
    EXPECT_TRUE(SameValue(value, *copied)) << key;
  }
  EXPECT_GE(n_tokenizer_keys, 5);

  // 1 embedding + 9 per layer + output norm + output.
  ASSERT_EQ(f.tensors().size(), 21u);
  auto expect_tensor = [&](const std::string& name, std::vector<int64_t> dims, GgmlType t) {
    const GgufTensorInfo* info = f.FindTensor(name);
    ASSERT_NE(info, nullptr) << name;
    EXPECT_EQ(info->dims, dims) << name;
    EXPECT_EQ(info->type, t) << name;
  };
  expect_tensor("token_embd.weight", {64, 32000}, type);
  for (int layer = 0; layer < 2; ++layer) {
    const std::string b = "blk." + std::to_string(layer) + ".";
    expect_tensor(b + "attn_norm.weight", {64}, GgmlType::kF32);
    expect_tensor(b + "attn_q.weight", {64, 64}, type);
    expect_tensor(b + "attn_k.weight", {64, 32}, type);
    expect_tensor(b + "attn_v.weight", {64, 32}, type);
    expect_tensor(b + "attn_output.weight", {64, 64}, type);
    expect_tensor(b + "ffn_norm.weight", {64}, GgmlType::kF32);
    expect_tensor(b + "ffn_gate.weight", {64, 128}, type);
    expect_tensor(b + "ffn_up.weight", {64, 128}, type);
    expect_tensor(b + "ffn_down.weight", {128, 64}, type);
  }
  expect_tensor("output_norm.weight", {64}, GgmlType::kF32);
  expect_tensor("output.weight", {64, 32000}, type);

  // Norms are 1; weights are the seeded rows in the file's type.
  for (float v : Row(*f.FindTensor("blk.1.ffn_norm.weight"), 0)) EXPECT_EQ(v, 1.0f);
  for (const char* name : {"blk.0.attn_k.weight", "blk.1.ffn_down.weight", "output.weight"}) {
    const GgufTensorInfo& t = *f.FindTensor(name);
    for (int64_t r : {int64_t{0}, t.dims[1] - 1}) {
      std::vector<float> expected(static_cast<size_t>(t.dims[0]));
      RandomWeightRow(1, name, r, expected.data(), t.dims[0]);
      std::vector<uint8_t> bytes(static_cast<size_t>(RowBytes(type, t.dims[0])));
      QuantizeRow(type, expected.data(), bytes.data(), t.dims[0]);
      DequantizeRow(type, bytes.data(), expected.data(), t.dims[0]);
      EXPECT_EQ(Row(t, r), expected) << name << " row " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, GenModelEachType,
                         ::testing::Values(GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0,
                                           GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                                           GgmlType::kIQ4_NL),
                         [](const auto& info) { return std::string(GgmlTypeName(info.param)); });

TEST(GenModel, WeightsHaveMeanZeroAndStdOneOverSqrtRowLength) {
  const GgufFile f = GgufFile::Open(Generate(TinyOptions(GgmlType::kF32, 9)));
  for (const char* name : {"token_embd.weight", "blk.0.ffn_down.weight"}) {
    const GgufTensorInfo& t = *f.FindTensor(name);
    double sum = 0.0, sum_sq = 0.0, max_abs = 0.0;
    const auto* v = reinterpret_cast<const float*>(t.data);
    for (int64_t i = 0; i < t.n_elements; ++i) {
      sum += v[i];
      sum_sq += static_cast<double>(v[i]) * v[i];
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(v[i])));
    }
    const double n = static_cast<double>(t.n_elements);
    const double std_expected = 1.0 / std::sqrt(static_cast<double>(t.dims[0]));
    const double stddev = std::sqrt(sum_sq / n - (sum / n) * (sum / n));
    EXPECT_NEAR(sum / n, 0.0, 5.0 * std_expected / std::sqrt(n)) << name;
    EXPECT_NEAR(stddev, std_expected, 0.03 * std_expected) << name;
    EXPECT_LE(max_abs, std::sqrt(3.0) * std_expected * 1.0001) << name;
  }
}

TEST(GenModel, SameSeedSameBytesWhateverTheThreadCount) {
  ThreadPool pool(3);
  const std::string one = FileBytes(Generate(TinyOptions(GgmlType::kQ4_0, 42)));
  const std::string three = FileBytes(Generate(TinyOptions(GgmlType::kQ4_0, 42), &pool));
  EXPECT_GT(one.size(), 1000000u);
  EXPECT_TRUE(one == three);

  const GgufFile a = GgufFile::Open(Generate(TinyOptions(GgmlType::kF32, 42)));
  const GgufFile b = GgufFile::Open(Generate(TinyOptions(GgmlType::kF32, 43)));
  for (const char* name : {"token_embd.weight", "blk.1.attn_q.weight"}) {
    const GgufTensorInfo& ta = *a.FindTensor(name);
    const GgufTensorInfo& tb = *b.FindTensor(name);
    ASSERT_EQ(ta.n_bytes, tb.n_bytes);
    EXPECT_NE(std::memcmp(ta.data, tb.data, static_cast<size_t>(ta.n_bytes)), 0) << name;
  }
  // Different tensors of one file differ too (the name is part of the row seed).
  const GgufTensorInfo& q = *a.FindTensor("blk.0.attn_q.weight");
  const GgufTensorInfo& o = *a.FindTensor("blk.0.attn_output.weight");
  EXPECT_NE(std::memcmp(q.data, o.data, static_cast<size_t>(q.n_bytes)), 0);
}

TEST(GenModel, TiedEmbeddingsHaveNoOutputWeight) {
  RandomModelOptions options = TinyOptions(GgmlType::kF16);
  options.shape.tied_embeddings = true;
  const GgufFile f = GgufFile::Open(Generate(options));
  EXPECT_EQ(f.FindTensor("output.weight"), nullptr);
  EXPECT_EQ(f.tensors().size(), 20u);
  EXPECT_EQ(f.FindTensor("token_embd.weight")->dims, (std::vector<int64_t>{64, 32000}));
}

void ExpectInvalid(void (*edit)(RandomModelOptions&), const char* message) {
  RandomModelOptions options = TinyOptions(GgmlType::kQ4_0);
  edit(options);
  try {
    ValidateRandomModel(options, 32000);
    FAIL() << "no error; expected " << message;
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(message));
  }
}

TEST(GenModel, ImpossibleShapesAreClearErrors) {
  EXPECT_NO_THROW(ValidateRandomModel(TinyOptions(GgmlType::kQ4_0), 32000));
  ExpectInvalid([](RandomModelOptions& o) { o.shape.n_heads = 5; }, "dim 64 is not a multiple of heads 5");
  ExpectInvalid([](RandomModelOptions& o) { o.shape.n_kv_heads = 3; }, "heads 4 is not a multiple of kv-heads 3");
  ExpectInvalid([](RandomModelOptions& o) { o.shape.n_ff = 100; }, "ffn 100 is not a multiple of the Q4_0 block size 32");
  ExpectInvalid([](RandomModelOptions& o) { o.shape.n_embd = 48; o.shape.n_heads = 3; o.shape.n_kv_heads = 3; },
                "dim 48 is not a multiple of the Q4_0 block size 32");
  ExpectInvalid([](RandomModelOptions& o) { o.shape.n_layers = 0; }, "layers must be > 0");
  ExpectInvalid([](RandomModelOptions& o) { o.shape.n_heads = 64; o.shape.n_kv_heads = 64; }, "must be even");
  ExpectInvalid([](RandomModelOptions& o) { o.type = GgmlType::kQ8_K; }, "type Q8_K cannot be written");
  // F32 has no block: an ffn of 100 is fine.
  RandomModelOptions f32 = TinyOptions(GgmlType::kF32);
  f32.shape.n_ff = 100;
  EXPECT_NO_THROW(ValidateRandomModel(f32, 32000));
}

TEST(GenModel, VocabularyFileWithoutTokensIsAnError) {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  const std::string path = testing::TempDir("novocab") + "/empty.gguf";
  w.Write(path);
  const GgufFile f = GgufFile::Open(path);
  try {
    BuildRandomModelGguf(f, TinyOptions(GgmlType::kF32), nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("tokenizer.ggml.tokens"));
  }
}

// Runs the ridge binary; returns its exit status, stderr in *err.
int RunRidge(const std::string& args, std::string* err) {
  const std::string err_path = testing::TempDir("cli") + "/stderr.txt";
  const int status = std::system((testing::RidgeBinary() + " " + args + " >/dev/null 2>" + err_path).c_str());
  *err = FileBytes(err_path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(GenModelCommand, WritesAFileAndRejectsBadFlags) {
  const std::string out = testing::TempDir("cli-gen") + "/m.gguf";
  std::string err;
  ASSERT_EQ(RunRidge("gen-model --dim 64 --ffn 128 --layers 2 --heads 4 --kv-heads 2 --vocab-from " + SpmVocab() +
                         " --type q8_0 --seed 5 --threads 2 -o " + out,
                     &err),
            0)
      << err;
  EXPECT_THAT(err, HasSubstr("100%"));  // the progress bar
  const GgufFile f = GgufFile::Open(out);
  EXPECT_EQ(f.FindTensor("blk.1.ffn_up.weight")->type, GgmlType::kQ8_0);
  // The command writes what the library writes for the same options and seed.
  RandomModelOptions options = TinyOptions(GgmlType::kQ8_0, 5);
  options.shape.n_ctx = 2048;
  options.name = "ridge-random";
  EXPECT_TRUE(FileBytes(out) == FileBytes(Generate(options)));

  EXPECT_EQ(RunRidge("gen-model --preset tinyllama-1.1b --dim 64 --type f16 -o " + out, &err), 1);
  EXPECT_THAT(err, HasSubstr("not both"));
  EXPECT_EQ(RunRidge("gen-model --preset no-such-model --type f16 -o " + out, &err), 1);
  EXPECT_THAT(err, HasSubstr("tinyllama-1.1b"));
  EXPECT_EQ(RunRidge("gen-model --dim 64 --ffn 128 --layers 2 --heads 4 --vocab-from " + SpmVocab() +
                         " --type q5_k -o " + out,
                     &err),
            1);
  EXPECT_THAT(err, HasSubstr("Q5_K"));
  EXPECT_EQ(RunRidge("gen-model --dim 64 --ffn 128 --layers 2 --heads 4 --type f32 -o " + out, &err), 1);
  EXPECT_THAT(err, HasSubstr("--vocab-from"));
}

}  // namespace
}  // namespace ridge
