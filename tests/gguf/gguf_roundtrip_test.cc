// GgufWriter -> GgufFile: identical metadata of every value type, identical
// tensor bytes, offsets and padding honouring general.alignment.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <random>

#include "ridge/base/error.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/gguf_writer.h"
#include "test_paths.h"

namespace ridge {
namespace {

using T = GgufValueType;

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Every value type, including arrays of strings, empty arrays and nested arrays.
std::vector<std::pair<std::string, GgufValue>> AllValueKinds() {
  std::vector<GgufValue> strings = {GgufValue::String("hello"), GgufValue::String(""),
                                    GgufValue::String("\xE2\x96\x81world"), GgufValue::String(std::string("a\0b", 3))};
  std::vector<GgufValue> inner1 = {GgufValue::Int(T::kInt16, -7), GgufValue::Int(T::kInt16, 300)};
  std::vector<GgufValue> nested = {GgufValue::Array(T::kInt16, inner1), GgufValue::Array(T::kInt16, {})};
  return {
      {"t.u8", GgufValue::Uint(T::kUint8, 255)},
      {"t.i8", GgufValue::Int(T::kInt8, -128)},
      {"t.u16", GgufValue::Uint(T::kUint16, 65535)},
      {"t.i16", GgufValue::Int(T::kInt16, -32768)},
      {"t.u32", GgufValue::Uint(T::kUint32, 4000000000u)},
      {"t.i32", GgufValue::Int(T::kInt32, -2000000000)},
      {"t.u64", GgufValue::Uint(T::kUint64, 18000000000000000000ull)},
      {"t.i64", GgufValue::Int(T::kInt64, -9000000000000000000ll)},
      {"t.f32", GgufValue::Float(T::kFloat32, 0.1f)},
      {"t.f64", GgufValue::Float(T::kFloat64, 0.1)},
      {"t.bool_true", GgufValue::Bool(true)},
      {"t.bool_false", GgufValue::Bool(false)},
      {"t.string", GgufValue::String("Ünïcødé ▁ text")},
      {"t.empty_string", GgufValue::String("")},
      {"t.arr_u8", GgufValue::Array(T::kUint8, {GgufValue::Uint(T::kUint8, 1), GgufValue::Uint(T::kUint8, 2)})},
      {"t.arr_i32", GgufValue::Array(T::kInt32, {GgufValue::Int(T::kInt32, -1), GgufValue::Int(T::kInt32, 6)})},
      {"t.arr_f32", GgufValue::Array(T::kFloat32, {GgufValue::Float(T::kFloat32, 1.5), GgufValue::Float(T::kFloat32, -2)})},
      {"t.arr_f64", GgufValue::Array(T::kFloat64, {GgufValue::Float(T::kFloat64, 1e300)})},
      {"t.arr_bool", GgufValue::Array(T::kBool, {GgufValue::Bool(true), GgufValue::Bool(false)})},
      {"t.arr_u64", GgufValue::Array(T::kUint64, {GgufValue::Uint(T::kUint64, 1ull << 63)})},
      {"t.arr_i64", GgufValue::Array(T::kInt64, {GgufValue::Int(T::kInt64, -5)})},
      {"t.arr_u16", GgufValue::Array(T::kUint16, {GgufValue::Uint(T::kUint16, 9)})},
      {"t.arr_i8", GgufValue::Array(T::kInt8, {GgufValue::Int(T::kInt8, -9)})},
      {"t.arr_u32", GgufValue::Array(T::kUint32, {GgufValue::Uint(T::kUint32, 7)})},
      {"t.arr_strings", GgufValue::Array(T::kString, strings)},
      {"t.arr_empty", GgufValue::Array(T::kString, {})},
      {"t.arr_nested", GgufValue::Array(T::kArray, nested)},
  };
}

void ExpectSameValue(const GgufValue& a, const GgufValue& b, const std::string& key) {
  ASSERT_EQ(a.type, b.type) << key;
  if (a.type == T::kArray) {
    ASSERT_EQ(a.array_elem_type, b.array_elem_type) << key;
    const auto& ea = *a.AsArray();
    const auto& eb = *b.AsArray();
    ASSERT_EQ(ea.size(), eb.size()) << key;
    for (size_t i = 0; i < ea.size(); ++i) ExpectSameValue(ea[i], eb[i], key + "[" + std::to_string(i) + "]");
    return;
  }
  if (a.type == T::kFloat32) {
    // Stored as float: compare at float precision.
    EXPECT_EQ(static_cast<float>(*a.AsFloat()), static_cast<float>(*b.AsFloat())) << key;
    return;
  }
  EXPECT_TRUE(a.data == b.data) << key;
}

struct Written {
  std::string name;
  GgmlType type;
  std::vector<int64_t> dims;
  std::vector<uint8_t> bytes;
};

void RoundTrip(uint32_t alignment /* 0 = default */) {
  const std::string path = testing::ScratchDir("roundtrip") + "/t.gguf";
  GgufWriter w;
  auto kinds = AllValueKinds();
  if (alignment) w.SetU32("general.alignment", alignment);
  for (const auto& [k, v] : kinds) w.Set(k, v);
  std::vector<Written> tensors = {
      {"f32", GgmlType::kF32, {3, 5}, RandomBytes(60, 1)},
      {"f16_odd", GgmlType::kF16, {7}, RandomBytes(14, 2)},
      {"q8_0", GgmlType::kQ8_0, {64, 2}, RandomBytes(136, 3)},
      {"q4_k", GgmlType::kQ4_K, {256, 1, 1, 2}, RandomBytes(288, 4)},
      {"i8", GgmlType::kI8, {5}, RandomBytes(5, 5)},
  };
  for (const auto& t : tensors) w.AddTensorBytes(t.name, t.type, t.dims, t.bytes);
  uint64_t progress_total = 0, progress_calls = 0;
  w.Write(path, [&](uint64_t, uint64_t total) {
    progress_total = total;
    ++progress_calls;
  });
  EXPECT_EQ(progress_calls, tensors.size());
  EXPECT_EQ(progress_total, 60u + 14 + 136 + 288 + 5);

  const GgufFile f = GgufFile::Open(path);
  const uint32_t want_alignment = alignment ? alignment : 32;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), want_alignment);
  EXPECT_EQ(f.data_offset() % want_alignment, 0u);
  // Metadata: same keys, same order, same values.
  size_t first = alignment ? 1 : 0;
  ASSERT_EQ(f.metadata().size(), kinds.size() + first);
  for (size_t i = 0; i < kinds.size(); ++i) {
    EXPECT_EQ(f.metadata()[i + first].first, kinds[i].first);
    ExpectSameValue(f.metadata()[i + first].second, kinds[i].second, kinds[i].first);
  }
  // Tensors: same names, types, dims and bytes; aligned offsets, zero padding.
  ASSERT_EQ(f.tensors().size(), tensors.size());
  uint64_t prev_end = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const GgufTensorInfo& t = f.tensors()[i];
    EXPECT_EQ(t.name, tensors[i].name);
    EXPECT_EQ(t.type, tensors[i].type);
    EXPECT_EQ(t.dims, tensors[i].dims);
    EXPECT_EQ(t.offset % want_alignment, 0u) << t.name;
    EXPECT_EQ(static_cast<size_t>(t.n_bytes), tensors[i].bytes.size());
    EXPECT_EQ(std::vector<uint8_t>(t.data, t.data + t.n_bytes), tensors[i].bytes) << t.name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data) % want_alignment, 0u) << "mmap is page aligned";
    for (uint64_t p = prev_end; p < t.offset; ++p) EXPECT_EQ(t.data[static_cast<int64_t>(p - t.offset)], 0) << p;
    prev_end = t.offset + static_cast<uint64_t>(t.n_bytes);
    EXPECT_EQ(f.FindTensor(t.name), &t);
  }
  EXPECT_EQ(f.file_bytes() % want_alignment, 0u);
  EXPECT_EQ(f.FindTensor("missing"), nullptr);
}

TEST(GgufRoundTrip, DefaultAlignment) { RoundTrip(0); }
TEST(GgufRoundTrip, Alignment64) { RoundTrip(64); }
TEST(GgufRoundTrip, Alignment256) { RoundTrip(256); }
TEST(GgufRoundTrip, Alignment8) { RoundTrip(8); }

TEST(GgufRoundTrip, TypedGetters) {
  const std::string path = testing::ScratchDir("getters") + "/g.gguf";
  GgufWriter w;
  w.SetU32("a.u32", 7);
  w.SetI32("a.i32", -3);
  w.SetF32("a.f32", 2.5f);
  w.SetBool("a.bool", true);
  w.SetString("a.str", "x");
  w.SetString("a.str", "replaced");  // replaces in place
  w.Set("a.big", GgufValue::Uint(T::kUint64, ~0ull));
  w.Write(path);
  const GgufFile f = GgufFile::Open(path);
  EXPECT_EQ(f.metadata().size(), 6u);
  EXPECT_EQ(f.GetInt("a.u32"), 7);
  EXPECT_EQ(f.GetInt("a.i32"), -3);
  EXPECT_EQ(f.GetFloat("a.f32"), 2.5);
  EXPECT_EQ(f.GetFloat("a.u32"), 7.0);
  EXPECT_EQ(f.GetBool("a.bool"), true);
  EXPECT_EQ(f.GetString("a.str"), "replaced");
  EXPECT_EQ(f.RequireString("a.str"), "replaced");
  EXPECT_EQ(f.RequireInt("a.u32"), 7);
  EXPECT_EQ(f.GetInt("absent"), std::nullopt);
  EXPECT_THROW(f.GetInt("a.str"), Error);
  EXPECT_THROW(f.GetString("a.u32"), Error);
  EXPECT_THROW(f.GetBool("a.u32"), Error);
  EXPECT_THROW(f.GetFloat("a.str"), Error);
  EXPECT_THROW(f.GetInt("a.big"), Error);  // does not fit int64
  EXPECT_THROW(f.RequireInt("absent"), Error);
  EXPECT_THROW(f.RequireString("absent"), Error);
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_LE(f.data_offset(), f.file_bytes());
}

TEST(GgufWriter, RejectsBadInput) {
  GgufWriter w;
  w.AddTensorBytes("x", GgmlType::kF32, {2}, std::vector<uint8_t>(8));
  EXPECT_THROW(w.AddTensorBytes("x", GgmlType::kF32, {2}, std::vector<uint8_t>(8)), Error);      // duplicate
  EXPECT_THROW(w.AddTensorBytes("y", GgmlType::kQ8_0, {33}, std::vector<uint8_t>(34)), Error);   // not a block
  EXPECT_THROW(w.AddTensorBytes("z", GgmlType::kF32, {1, 1, 1, 1, 1}, {}), Error);               // 5 dims
  EXPECT_THROW(w.AddTensorBytes("w", GgmlType::kF32, {0}, {}), Error);                           // zero dim
  EXPECT_THROW(w.AddTensorBytes(std::string(64, 'n'), GgmlType::kF32, {1}, {}), Error);          // name too long
  const std::string dir = testing::ScratchDir("writer-bad");
  GgufWriter wrong_size;
  wrong_size.AddTensorBytes("x", GgmlType::kF32, {2}, std::vector<uint8_t>(7));
  EXPECT_THROW(wrong_size.Write(dir + "/a.gguf"), Error);
  EXPECT_FALSE(std::ifstream(dir + "/a.gguf").good()) << "no half-written file is left";
  GgufWriter bad_alignment;
  bad_alignment.SetU32("general.alignment", 48);
  EXPECT_THROW(bad_alignment.Write(dir + "/b.gguf"), Error);
  GgufWriter out_of_range;
  out_of_range.Set("k", GgufValue::Uint(T::kUint8, 256));
  EXPECT_THROW(out_of_range.Write(dir + "/c.gguf"), Error);
  GgufWriter no_dir;
  EXPECT_THROW(no_dir.Write(dir + "/missing/d.gguf"), Error);
}

}  // namespace
}  // namespace ridge
