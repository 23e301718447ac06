// Writes a few tiny valid GGUF files for the fuzzer's seed corpus: every
// metadata value type, each tensor type family, a custom alignment and a
// minimal llama model description. Usage: ridge_fuzz_seed DIR
#include <cstdio>
#include <filesystem>

#include "ridge/base/error.h"
#include "ridge/gguf/gguf_writer.h"

namespace {

using ridge::GgmlType;
using ridge::GgufValue;
using T = ridge::GgufValueType;

void AddTensor(ridge::GgufWriter& w, const std::string& name, GgmlType type, std::vector<int64_t> dims) {
  int64_t rows = 1;
  for (size_t i = 1; i < dims.size(); ++i) rows *= dims[i];
  std::vector<uint8_t> bytes(static_cast<size_t>(ridge::RowBytes(type, dims[0]) * rows));
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<uint8_t>(i * 37 + 11);
  w.AddTensorBytes(name, type, std::move(dims), std::move(bytes));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  try {
    std::filesystem::create_directories(dir);
    {
      ridge::GgufWriter w;
      w.Set("u8", GgufValue::Uint(T::kUint8, 7));
      w.Set("i16", GgufValue::Int(T::kInt16, -3));
      w.Set("u64", GgufValue::Uint(T::kUint64, 1ull << 40));
      w.Set("f64", GgufValue::Float(T::kFloat64, 0.25));
      w.SetF32("f32", 1.5f);
      w.SetBool("b", true);
      w.SetString("s", "text");
      w.Set("strs", GgufValue::Array(T::kString, {GgufValue::String("a"), GgufValue::String("bc")}));
      w.Set("nested", GgufValue::Array(T::kArray, {GgufValue::Array(T::kInt32, {GgufValue::Int(T::kInt32, 1)})}));
      AddTensor(w, "f32", GgmlType::kF32, {4, 2});
      AddTensor(w, "f16", GgmlType::kF16, {3});
      AddTensor(w, "q8", GgmlType::kQ8_0, {32});
      AddTensor(w, "q4k", GgmlType::kQ4_K, {256});
      w.Write(dir + "/types.gguf");
    }
    {
      ridge::GgufWriter w;
      w.SetU32("general.alignment", 64);
      AddTensor(w, "q6k", GgmlType::kQ6_K, {256});
      AddTensor(w, "q5_1", GgmlType::kQ5_1, {32, 2});
      AddTensor(w, "bf16", GgmlType::kBF16, {5});
      w.Write(dir + "/aligned64.gguf");
    }
    {
      ridge::GgufWriter w;
      w.SetString("general.architecture", "llama");
      w.SetU32("llama.context_length", 16);
      w.SetU32("llama.embedding_length", 8);
      w.SetU32("llama.block_count", 1);
      w.SetU32("llama.feed_forward_length", 16);
      w.SetU32("llama.attention.head_count", 2);
      w.SetU32("llama.attention.head_count_kv", 1);
      w.SetF32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
      w.Set("tokenizer.ggml.tokens", GgufValue::Array(T::kString, {GgufValue::String("<unk>"), GgufValue::String("a")}));
      AddTensor(w, "token_embd.weight", GgmlType::kF32, {8, 2});
      w.Write(dir + "/llama.gguf");
    }
    {
      // The variant keys of gemma2 and a yarn-scaled qwen2, so mutations reach their checks.
      ridge::GgufWriter w;
      w.SetString("general.architecture", "gemma2");
      w.SetU32("gemma2.context_length", 16);
      w.SetU32("gemma2.embedding_length", 8);
      w.SetU32("gemma2.block_count", 2);
      w.SetU32("gemma2.feed_forward_length", 16);
      w.SetU32("gemma2.attention.head_count", 2);
      w.SetU32("gemma2.attention.head_count_kv", 1);
      w.SetU32("gemma2.attention.key_length", 8);
      w.SetU32("gemma2.attention.value_length", 8);
      w.SetU32("gemma2.attention.sliding_window", 4);
      w.SetF32("gemma2.attn_logit_softcapping", 50.0f);
      w.SetF32("gemma2.final_logit_softcapping", 30.0f);
      w.SetF32("gemma2.attention.layer_norm_rms_epsilon", 1e-6f);
      w.Set("tokenizer.ggml.tokens", GgufValue::Array(T::kString, {GgufValue::String("<unk>"), GgufValue::String("a")}));
      w.Write(dir + "/gemma2.gguf");
    }
    {
      ridge::GgufWriter w;
      w.SetString("general.architecture", "qwen2");
      w.SetU32("qwen2.context_length", 64);
      w.SetU32("qwen2.embedding_length", 8);
      w.SetU32("qwen2.block_count", 1);
      w.SetU32("qwen2.feed_forward_length", 16);
      w.SetU32("qwen2.attention.head_count", 2);
      w.SetF32("qwen2.attention.layer_norm_rms_epsilon", 1e-6f);
      w.SetString("qwen2.rope.scaling.type", "yarn");
      w.SetF32("qwen2.rope.scaling.factor", 4.0f);
      w.SetU32("qwen2.rope.scaling.original_context_length", 16);
      w.Set("tokenizer.ggml.tokens", GgufValue::Array(T::kString, {GgufValue::String("<unk>"), GgufValue::String("a")}));
      w.Write(dir + "/qwen2_yarn.gguf");
    }
    {
      ridge::GgufWriter w;
      w.Write(dir + "/empty.gguf");
    }
  } catch (const ridge::Error& e) {
    std::fprintf(stderr, "ridge_fuzz_seed: %s\n", e.what());
    return 1;
  }
  return 0;
}
