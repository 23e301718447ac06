// `ridge quantize`: weight matrices converted by the reference quantizers
// (within the block quantization error bound), norms and metadata kept,
// clear errors for sources it cannot convert.
#include "ridge/gguf/quantize_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include <sys/wait.h>

#include "ridge/base/error.h"
#include "ridge/base/half.h"
#include "ridge/base/thread_pool.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/gguf_writer.h"
#include "ridge/gguf/model_generator.h"
#include "ridge/gguf/quant_recipe.h"
#include "gguf/temp_dirs.h"
#include "test_paths.h"

namespace ridge {
namespace {

using ::testing::HasSubstr;

// A tiny random llama model of `type` (as `ridge gen-model` writes it).
std::string TinyModel(GgmlType type) {
  RandomModelOptions o;
  o.shape = {64, 128, 2, 4, 2, 256, 10000.0f, 1e-5f, false};
  o.type = type;
  o.seed = 3;
  const GgufFile vocab = GgufFile::Open(testing::SharedDir() + "/vocab/ggml-vocab-llama-spm.gguf");
  const std::string path = testing::TempDir("quant-src") + "/model.gguf";
  BuildRandomModelGguf(vocab, o, nullptr).Write(path);
  return path;
}

std::vector<float> Row(const GgufTensorInfo& t, int64_t r) {
  std::vector<float> out(static_cast<size_t>(t.dims[0]));
  DequantizeRow(t.type, t.data + r * RowBytes(t.type, t.dims[0]), out.data(), t.dims[0]);
  return out;
}

// The largest error quantizing a block of 32 values with absolute maximum
// amax may make: Q8_0 rounds x / d (d = amax / 127) to the nearest integer,
// error <= d / 2; Q4_0 has d = amax / 8 and its code 15 is clamped, error <= d
// (reached by the value opposite in sign to the block's extreme); Q5_0 the
// same with d = amax / 16. Q4_1 / Q5_1 round to half a step of d = range / 15
// or / 31, range <= 2·amax. The scale is stored as f16: relative error 2^-11
// on d, times |q| <= 127, 8, 16, 15 or 31 (and on Q*_1's minimum, <= amax).
// IQ4_NL: levels at most 24 apart (89 -> 113) in units of a scale near
// amax / 120, and the least-squares scale may clip the block's extreme: a
// quarter of amax.
double BlockErrorBound(GgmlType type, double amax) {
  switch (type) {
    case GgmlType::kQ8_0: return amax / 254.0 + amax * 0x1p-11;
    case GgmlType::kQ4_0: return amax / 8.0 + amax * 0x1p-11;
    case GgmlType::kQ5_0: return amax / 16.0 + amax * 0x1p-11;
    case GgmlType::kQ4_1: return amax / 15.0 + 3.0 * amax * 0x1p-11;
    case GgmlType::kQ5_1: return amax / 31.0 + 3.0 * amax * 0x1p-11;
    case GgmlType::kIQ4_NL: return amax / 4.0;
    default: ADD_FAILURE() << "no bound for " << GgmlTypeName(type); return 0.0;
  }
}

class QuantizeTo : public ::testing::TestWithParam<GgmlType> {};

TEST_P(QuantizeTo, F32WeightsRoundTripWithinTheBlockErrorBound) {
  const GgmlType type = GetParam();
  const std::string in_path = TinyModel(GgmlType::kF32);
  const std::string out_path = testing::TempDir("quant-out") + "/q.gguf";
  ThreadPool pool(2);
  uint64_t last_done = 0, last_total = 0;
  const QuantizeSummary summary = QuantizeGgufFile(in_path, out_path, type, &pool, [&](uint64_t done, uint64_t total) {
    EXPECT_GE(done, last_done);
    last_done = done;
    last_total = total;
  });
  EXPECT_EQ(summary.n_tensors, 21);
  EXPECT_EQ(summary.n_converted, 16);  // 7 per layer, embedding, output
  EXPECT_EQ(summary.n_copied, 5);      // the norms
  EXPECT_EQ(last_done, last_total);
  EXPECT_EQ(last_total, summary.out_tensor_bytes);

  const GgufFile in = GgufFile::Open(in_path);
  const GgufFile out = GgufFile::Open(out_path);
  // Metadata: everything copied, in order; the file type updated.
  const std::map<GgmlType, int64_t> llama_ftype = {{GgmlType::kQ8_0, 7}, {GgmlType::kQ4_0, 2}, {GgmlType::kQ4_1, 3},
                                                   {GgmlType::kQ5_0, 8}, {GgmlType::kQ5_1, 9}, {GgmlType::kIQ4_NL, 25}};
  EXPECT_EQ(out.RequireInt("general.file_type"), llama_ftype.at(type));
  EXPECT_EQ(out.RequireInt("general.quantization_version"), 2);
  ASSERT_EQ(out.metadata().size(), in.metadata().size() + 1);
  for (size_t i = 0; i < in.metadata().size(); ++i) {
    EXPECT_EQ(out.metadata()[i].first, in.metadata()[i].first);
    EXPECT_EQ(out.metadata()[i].second.type, in.metadata()[i].second.type);
  }
  EXPECT_EQ(out.RequireString("general.architecture"), "llama");
  EXPECT_EQ(out.Find("tokenizer.ggml.tokens")->AsArray()->size(), 32000u);

  ASSERT_EQ(out.tensors().size(), in.tensors().size());
  for (const GgufTensorInfo& src : in.tensors()) {
    const GgufTensorInfo& dst = *out.FindTensor(src.name);
    EXPECT_EQ(dst.dims, src.dims) << src.name;
    if (src.dims.size() == 1) {  // norms stay F32, bytes untouched
      EXPECT_EQ(dst.type, GgmlType::kF32) << src.name;
      ASSERT_EQ(dst.n_bytes, src.n_bytes);
      EXPECT_EQ(std::memcmp(dst.data, src.data, static_cast<size_t>(src.n_bytes)), 0) << src.name;
      continue;
    }
    ASSERT_EQ(dst.type, type) << src.name;
    const int64_t row_bytes = RowBytes(type, src.dims[0]);
    std::vector<uint8_t> reference(static_cast<size_t>(row_bytes));
    double worst_ratio = 0.0;  // error / bound over the tensor
    for (int64_t r = 0; r < src.dims[1]; ++r) {
      const std::vector<float> x = Row(src, r);
      // Exactly the reference quantizer's bytes...
      QuantizeRow(type, x.data(), reference.data(), src.dims[0]);
      ASSERT_EQ(std::memcmp(dst.data + r * row_bytes, reference.data(), reference.size()), 0)
          << src.name << " row " << r;
      // ...and within the error bound of each block.
      const std::vector<float> y = Row(dst, r);
      for (size_t b = 0; b < x.size(); b += 32) {
        double amax = 0.0;
        for (size_t j = b; j < b + 32; ++j) amax = std::max(amax, std::fabs(static_cast<double>(x[j])));
        const double bound = BlockErrorBound(type, amax);
        for (size_t j = b; j < b + 32; ++j) {
          const double error = std::fabs(static_cast<double>(x[j]) - y[j]);
          ASSERT_LE(error, bound) << src.name << " row " << r << " element " << j;
          worst_ratio = std::max(worst_ratio, error / bound);
        }
      }
    }
    EXPECT_GT(worst_ratio, 0.2) << src.name << ": the bound is far too loose to mean anything";
  }
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizeTo,
                         ::testing::Values(GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0,
                                           GgmlType::kQ5_1, GgmlType::kIQ4_NL),
                         [](const auto& info) { return std::string(GgmlTypeName(info.param)); });

TEST(Quantize, HalfSourcesAndHalfTargets) {
  // F16 source -> Q4_0: the F16 values, widened, quantized by the reference.
  const std::string f16_path = TinyModel(GgmlType::kF16);
  const std::string q4_path = testing::TempDir("quant-f16") + "/q4.gguf";
  QuantizeGgufFile(f16_path, q4_path, GgmlType::kQ4_0);
  const GgufFile f16 = GgufFile::Open(f16_path);
  const GgufFile q4 = GgufFile::Open(q4_path);
  const GgufTensorInfo& src = *f16.FindTensor("blk.0.ffn_down.weight");
  const GgufTensorInfo& dst = *q4.FindTensor("blk.0.ffn_down.weight");
  std::vector<uint8_t> expected(static_cast<size_t>(RowBytes(GgmlType::kQ4_0, 128)));
  QuantizeRow(GgmlType::kQ4_0, Row(src, 5).data(), expected.data(), 128);
  EXPECT_EQ(std::memcmp(dst.data + 5 * expected.size(), expected.data(), expected.size()), 0);

  // F32 -> BF16 and F16: each value rounded to nearest.
  const std::string f32_path = TinyModel(GgmlType::kF32);
  const GgufFile f32 = GgufFile::Open(f32_path);
  const std::vector<float> x = Row(*f32.FindTensor("output.weight"), 7);
  for (GgmlType type : {GgmlType::kBF16, GgmlType::kF16}) {
    const std::string path = testing::TempDir("quant-half") + "/h.gguf";
    QuantizeGgufFile(f32_path, path, type);
    const GgufFile h = GgufFile::Open(path);
    EXPECT_EQ(h.RequireInt("general.file_type"), type == GgmlType::kBF16 ? 32 : 1);
    EXPECT_EQ(h.Find("general.quantization_version"), nullptr);
    const std::vector<float> y = Row(*h.FindTensor("output.weight"), 7);
    for (size_t i = 0; i < x.size(); ++i) {
      const float rounded = type == GgmlType::kBF16 ? Bf16ToF32(F32ToBf16(x[i])) : F16ToF32(F32ToF16(x[i]));
      ASSERT_EQ(y[i], rounded) << i;
    }
  }
}

TEST(Quantize, TensorsAlreadyOfTheTypeAreCopied) {
  const std::string q8_path = TinyModel(GgmlType::kQ8_0);
  const std::string out_path = testing::TempDir("quant-same") + "/same.gguf";
  const QuantizeSummary summary = QuantizeGgufFile(q8_path, out_path, GgmlType::kQ8_0);
  EXPECT_EQ(summary.n_converted, 0);
  EXPECT_EQ(summary.n_copied, 21);
  const GgufFile a = GgufFile::Open(q8_path);
  const GgufFile b = GgufFile::Open(out_path);
  const GgufTensorInfo& ta = *a.FindTensor("token_embd.weight");
  EXPECT_EQ(std::memcmp(ta.data, b.FindTensor("token_embd.weight")->data, static_cast<size_t>(ta.n_bytes)), 0);
}

std::string WriteHandMade(GgmlType type, std::vector<int64_t> dims, const std::string& name) {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  const int64_t n_bytes = RowBytes(type, dims[0]) * (n / dims[0]);
  w.AddTensorBytes("norm.weight", GgmlType::kF32, {4}, std::vector<uint8_t>(16, 0));
  w.AddTensorBytes(name, type, dims, std::vector<uint8_t>(static_cast<size_t>(n_bytes), 0));
  const std::string path = testing::TempDir("quant-bad") + "/in.gguf";
  w.Write(path);
  return path;
}

void ExpectQuantizeError(const std::string& in, GgmlType type, const char* message) {
  const std::string out = std::filesystem::path(in).parent_path() / "out.gguf";
  try {
    QuantizeGgufFile(in, out, type);
    FAIL() << "no error; expected " << message;
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr(message));
  }
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
}

TEST(Quantize, BadInputIsAClearErrorAndWritesNothing) {
  ExpectQuantizeError(WriteHandMade(GgmlType::kQ4_K, {256, 2}, "blk.0.attn_q.weight"), GgmlType::kQ8_0,
                      "tensor 'blk.0.attn_q.weight' is Q4_K; ridge quantize reads F32, F16 or BF16");
  ExpectQuantizeError(WriteHandMade(GgmlType::kF32, {40, 3}, "blk.0.ffn_down.weight"), GgmlType::kQ4_0,
                      "tensor 'blk.0.ffn_down.weight' has rows of 40 elements, not a multiple of the Q4_0 block size 32");
  ExpectQuantizeError(WriteHandMade(GgmlType::kF32, {64, 3}, "w"), GgmlType::kQ8_K, "cannot write Q8_K");
  ExpectQuantizeError(testing::TempDir("quant-missing") + "/does-not-exist.gguf", GgmlType::kQ8_0,
                      "does-not-exist.gguf");
  // Rows of 40 are fine for F16: no block.
  const std::string ok = WriteHandMade(GgmlType::kF32, {40, 3}, "w");
  EXPECT_NO_THROW(QuantizeGgufFile(ok, ok + ".f16", GgmlType::kF16));
}

// A random llama model with 256-wide rows (K-quant blocks fit), 8 layers, GQA 2, F32 weights.
std::string KQuantModel() {
  RandomModelOptions o;
  o.shape = {256, 512, 8, 4, 2, 256, 10000.0f, 1e-5f, false};
  o.type = GgmlType::kF32;
  o.seed = 5;
  const GgufFile vocab = GgufFile::Open(testing::SharedDir() + "/vocab/ggml-vocab-llama-spm.gguf");
  const std::string path = testing::TempDir("quant-kq-src") + "/model.gguf";
  BuildRandomModelGguf(vocab, o, nullptr).Write(path);
  return path;
}

// Relative RMS error of a quantized tensor against its F32 source.
double RelativeRmsError(const GgufTensorInfo& src, const GgufTensorInfo& dst) {
  double err2 = 0.0, x2 = 0.0;
  for (int64_t r = 0; r < src.dims[1]; ++r) {
    const std::vector<float> x = Row(src, r), y = Row(dst, r);
    for (size_t j = 0; j < x.size(); ++j) {
      err2 += (static_cast<double>(x[j]) - y[j]) * (static_cast<double>(x[j]) - y[j]);
      x2 += static_cast<double>(x[j]) * x[j];
    }
  }
  return std::sqrt(err2 / x2);
}

TEST(Quantize, Q4_K_MMixOnAGenModelFile) {
  const std::string in_path = KQuantModel();
  const std::string out_path = testing::TempDir("quant-kq-out") + "/q4_k_m.gguf";
  ThreadPool pool(2);
  const QuantizeSummary summary = QuantizeGgufFile(in_path, out_path, *ParseQuantRecipe("Q4_K_M"), &pool);
  EXPECT_EQ(summary.n_converted, 2 + 7 * 8);
  EXPECT_EQ(summary.n_fallback, 0);
  const GgufFile in = GgufFile::Open(in_path);
  const GgufFile out = GgufFile::Open(out_path);
  EXPECT_EQ(out.RequireInt("general.file_type"), 15);  // LLAMA_FTYPE_MOSTLY_Q4_K_M
  EXPECT_EQ(out.RequireInt("general.quantization_version"), 2);
  // use_more_bits over 8 layers: 0, 3, 6, 7.
  auto expected = [](const std::string& name) {
    if (name == "output.weight") return GgmlType::kQ6_K;
    for (const char* layer : {"blk.0.", "blk.3.", "blk.6.", "blk.7."})
      if (name.rfind(layer, 0) == 0 && (name.find("attn_v") != std::string::npos ||
                                        name.find("ffn_down") != std::string::npos))
        return GgmlType::kQ6_K;
    return GgmlType::kQ4_K;
  };
  for (const GgufTensorInfo& src : in.tensors()) {
    const GgufTensorInfo& dst = *out.FindTensor(src.name);
    if (src.dims.size() == 1) {
      EXPECT_EQ(dst.type, GgmlType::kF32) << src.name;
      continue;
    }
    ASSERT_EQ(dst.type, expected(src.name)) << src.name;
    // Q4_K reaches ~0.07 relative RMS error on Gaussian weights, Q6_K ~0.02.
    EXPECT_LT(RelativeRmsError(src, dst), dst.type == GgmlType::kQ6_K ? 0.025 : 0.085) << src.name;
  }
  // The bytes are the reference quantizer's.
  const GgufTensorInfo& v0 = *out.FindTensor("blk.0.attn_v.weight");
  std::vector<uint8_t> reference(static_cast<size_t>(RowBytes(GgmlType::kQ6_K, 256)));
  QuantizeRow(GgmlType::kQ6_K, Row(*in.FindTensor("blk.0.attn_v.weight"), 1).data(), reference.data(), 256);
  EXPECT_EQ(std::memcmp(v0.data + reference.size(), reference.data(), reference.size()), 0);
}

TEST(Quantize, MixOnNarrowRowsFallsBack) {
  // Rows of 64 and 128 fit no 256-block: every matrix takes its fallback.
  const std::string in_path = TinyModel(GgmlType::kF32);
  const std::string out_path = testing::TempDir("quant-fallback") + "/q.gguf";
  const QuantizeSummary summary = QuantizeGgufFile(in_path, out_path, *ParseQuantRecipe("Q4_K_M"));
  EXPECT_EQ(summary.n_fallback, summary.n_converted);
  const GgufFile out = GgufFile::Open(out_path);
  const GgmlType q4k_fallback = CanQuantizeTo(GgmlType::kQ5_0) ? GgmlType::kQ5_0 : GgmlType::kQ8_0;
  EXPECT_EQ(out.FindTensor("blk.1.attn_q.weight")->type, q4k_fallback);
  // llama.cpp's use_more_bits for 2 layers: layer 1's attn_v takes Q6_K (falling back to Q8_0), layer 0's Q4_K.
  EXPECT_EQ(out.FindTensor("blk.0.attn_v.weight")->type, q4k_fallback);
  EXPECT_EQ(out.FindTensor("blk.1.attn_v.weight")->type, GgmlType::kQ8_0);
  EXPECT_EQ(out.FindTensor("output.weight")->type, GgmlType::kQ8_0);
}

int RunRidge(const std::string& args, std::string* err) {
  const std::string err_path = testing::TempDir("cli") + "/stderr.txt";
  const int status = std::system((testing::RidgeBinary() + " " + args + " >/dev/null 2>" + err_path).c_str());
  std::ifstream in(err_path);
  err->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(QuantizeCommand, ConvertsAndReportsErrors) {
  const std::string in = TinyModel(GgmlType::kBF16);
  const std::string out = testing::TempDir("cli-quant") + "/q8.gguf";
  std::string err;
  ASSERT_EQ(RunRidge("quantize " + in + " " + out + " Q8_0 --threads 2", &err), 0) << err;
  EXPECT_THAT(err, HasSubstr("100%"));
  EXPECT_EQ(GgufFile::Open(out).FindTensor("blk.0.attn_v.weight")->type, GgmlType::kQ8_0);
  const std::string mixed = testing::TempDir("cli-quant") + "/q5_k_m.gguf";
  ASSERT_EQ(RunRidge("quantize " + KQuantModel() + " " + mixed + " q5_k_m --threads 2", &err), 0) << err;
  const GgufFile q5 = GgufFile::Open(mixed);
  EXPECT_EQ(q5.RequireInt("general.file_type"), 17);  // LLAMA_FTYPE_MOSTLY_Q5_K_M
  EXPECT_EQ(q5.FindTensor("blk.0.ffn_down.weight")->type, GgmlType::kQ6_K);
  EXPECT_EQ(q5.FindTensor("blk.1.ffn_down.weight")->type, GgmlType::kQ5_K);
  EXPECT_EQ(q5.FindTensor("output.weight")->type, GgmlType::kQ6_K);
  EXPECT_EQ(RunRidge("quantize " + in + " " + out + " Q9_9", &err), 1);
  EXPECT_THAT(err, HasSubstr("unknown type 'Q9_9'"));
  EXPECT_EQ(RunRidge("quantize " + out + " " + out + ".q4 Q4_0", &err), 1);  // Q8_0 is not a source type
  EXPECT_THAT(err, HasSubstr("is Q8_0"));
  // Every 32-element type ridge writes, by name as llama.cpp spells it.
  for (const char* name : {"Q4_1", "Q5_0", "Q5_1", "IQ4_NL"}) {
    const std::string q = testing::TempDir("cli-quant") + "/" + name + ".gguf";
    ASSERT_EQ(RunRidge("quantize " + in + " " + q + " " + name + " --threads 2", &err), 0) << name << ": " << err;
    EXPECT_EQ(GgufFile::Open(q).FindTensor("blk.1.ffn_down.weight")->type, *ParseGgmlType(name)) << name;
  }
  EXPECT_EQ(RunRidge("quantize " + in + " " + out + " Q4_K", &err), 1);  // a pure K-quant on 64-element rows
  EXPECT_THAT(err, HasSubstr("has rows of 64 elements, not a multiple of the Q4_K block size 256"));
  EXPECT_EQ(RunRidge("quantize " + in + " " + out + " Q8_K", &err), 1);
  EXPECT_THAT(err, HasSubstr("unknown type 'Q8_K'; ridge quantize writes F32, F16, Q4_0"));
}

}  // namespace
}  // namespace ridge
