// One hand-made corrupt file per failure mode: each must give a ridge::Error
// naming the file, the field and the byte offset, and never crash.
#include <gtest/gtest.h>

#include "gguf_bytes.h"
#include "ridge/base/error.h"
#include "ridge/gguf/gguf_file.h"
#include "test_paths.h"

namespace ridge {
namespace {

using testing::GgufBytes;
constexpr uint32_t kF32 = 0, kQ8_0 = 8;
constexpr uint64_t kFirstKv = 24;  // magic 4 + version 4 + tensor count 8 + kv count 8

// Opens the bytes as a file, mapped and copied into huge-page memory, and
// returns the error message ("" if it opened); both ways must agree.
std::string OpenError(GgufBytes& b, std::string* path_out = nullptr) {
  const std::string path = testing::ScratchDir("corrupt") + "/case.gguf";
  b.WriteTo(path);
  if (path_out) *path_out = path;
  std::string errors[2];
  const FileBacking backings[2] = {FileBacking::kMapped, FileBacking::kHugePageMemory};
  for (int i = 0; i < 2; ++i) {
    try {
      GgufFile::Open(path, backings[i]);
    } catch (const Error& e) {
      errors[i] = e.what();
    }
  }
  EXPECT_EQ(errors[0], errors[1]) << "a copy must be refused exactly as the mapping is";
  return errors[0];
}

// The message must be "PATH: FIELD at byte offset N: ...PROBLEM...".
void ExpectError(GgufBytes& b, const std::string& field, uint64_t offset, const std::string& problem) {
  std::string path;
  const std::string msg = OpenError(b, &path);
  ASSERT_FALSE(msg.empty()) << "opened without error; expected " << field;
  EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
  EXPECT_NE(msg.find(field + " at byte offset " + std::to_string(offset) + ":"), std::string::npos) << msg;
  EXPECT_NE(msg.find(problem), std::string::npos) << msg;
}

// A valid file: one string key, one F32 tensor [4 x 2] (32 bytes).
GgufBytes Valid() {
  GgufBytes b;
  b.Header(1, 1).KvStr("general.architecture", "llama").TensorInfo("w", {4, 2}, kF32, 0).PadTo(32).Zeros(32);
  return b;
}

TEST(GgufCorrupt, HandMadeValidFileOpens) {
  GgufBytes b = Valid();
  EXPECT_EQ(OpenError(b), "");
}

TEST(GgufCorrupt, MissingFile) {
  try {
    GgufFile::Open("/nonexistent/x.gguf");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.gguf"), std::string::npos);
  }
}

TEST(GgufCorrupt, EmptyFile) {
  GgufBytes b;
  ExpectError(b, "header.magic", 0, "truncated");
}

TEST(GgufCorrupt, BadMagic) {
  GgufBytes b;
  b.Raw("GGUX").U32(3).U64(0).U64(0);
  ExpectError(b, "header.magic", 0, "not a GGUF file");
}

TEST(GgufCorrupt, UnsupportedVersion) {
  GgufBytes b;
  b.Header(0, 0, 4);
  ExpectError(b, "header.version", 4, "unsupported GGUF version 4");
  GgufBytes v1;
  v1.Header(0, 0, 1);
  ExpectError(v1, "header.version", 4, "unsupported GGUF version 1");
  GgufBytes big_endian;
  big_endian.Header(0, 0, 0x03000000u);
  ExpectError(big_endian, "header.version", 4, "big-endian");
}

TEST(GgufCorrupt, TruncatedHeader) {
  GgufBytes b;
  b.Raw("GGUF").U32(3).Raw("ab");
  ExpectError(b, "header.tensor_count", 8, "truncated");
  GgufBytes c;
  c.Raw("GGUF").U32(3).U64(0).U32(0);
  ExpectError(c, "header.metadata_kv_count", 16, "truncated");
}

TEST(GgufCorrupt, TruncatedMetadataValue) {
  GgufBytes b;
  b.Header(0, 1).Str("k").U32(4 /* uint32 */);
  const uint64_t at = b.size();
  b.Raw("xy");  // half a uint32
  ExpectError(b, "metadata[0] 'k'.value", at, "truncated");
}

TEST(GgufCorrupt, TruncatedTensorInfo) {
  GgufBytes b;
  b.Header(1, 0).Str("w").U32(2).U64(4);
  const uint64_t at = b.size();
  b.U64(2).U32(kF32).U32(0);  // the offset field is cut in half
  b.bytes().resize(b.bytes().size());
  ExpectError(b, "tensor_infos[0] 'w'.offset", at + 12, "truncated");
}

TEST(GgufCorrupt, KeyLengthExceedsFile) {
  GgufBytes b;
  b.Header(0, 1).U64(1ull << 40).Raw("kkkkkkkkkkkkkkkkkkkkkkkkkkkk");
  ExpectError(b, "metadata[0].key.length", kFirstKv, "string length 1099511627776 exceeds");
}

TEST(GgufCorrupt, StringValueLengthExceedsFile) {
  GgufBytes b;
  b.Header(0, 1).Str("k").U32(8);
  const uint64_t at = b.size();
  b.U64(1000).Raw("short");
  ExpectError(b, "metadata[0] 'k'.value.length", at, "string length 1000 exceeds the 5 bytes left");
}

TEST(GgufCorrupt, ArrayLengthExceedsFile) {
  GgufBytes b;
  b.Header(0, 1).Str("a").U32(9).U32(4 /* uint32 elements */);
  const uint64_t at = b.size();
  b.U64(1ull << 40).U32(1).U32(2);
  ExpectError(b, "metadata[0] 'a'.value.count", at, "array of 1099511627776 uint32 values");
  // Strings need at least their 8-byte length each: 3 strings cannot fit in 16 bytes.
  GgufBytes s;
  s.Header(0, 1).Str("s").U32(9).U32(8);
  const uint64_t s_at = s.size();
  s.U64(3).Str("").Str("");
  ExpectError(s, "metadata[0] 's'.value.count", s_at, "array of 3 string values");
}

TEST(GgufCorrupt, StringInArrayExceedsFile) {
  GgufBytes b;
  b.Header(0, 1).Str("s").U32(9).U32(8).U64(2).Str("ok");
  const uint64_t at = b.size();
  b.U64(99);
  ExpectError(b, "metadata[0] 's'.value[1].length", at, "string length 99 exceeds");
}

TEST(GgufCorrupt, MetadataCountExceedsFile) {
  GgufBytes b;
  b.Header(0, 1000000000000ull).KvU32("a", 1);
  ExpectError(b, "header.metadata_kv_count", 16, "1000000000000 metadata entries cannot fit");
}

TEST(GgufCorrupt, TensorCountExceedsFile) {
  GgufBytes b;
  b.Header(1000000000000ull, 0).TensorInfo("w", {4}, kF32, 0).PadTo(32).Zeros(16);
  ExpectError(b, "header.tensor_count", 8, "1000000000000 tensor infos cannot fit");
  GgufBytes max;
  max.Header(~0ull, ~0ull);
  ExpectError(max, "header.metadata_kv_count", 16, "cannot fit");
}

TEST(GgufCorrupt, TensorOutOfBounds) {
  GgufBytes b;
  b.Header(1, 0).Str("w").U32(2).U64(4).U64(2).U32(kF32);
  const uint64_t at = b.size();
  b.U64(64).PadTo(32).Zeros(64);  // needs [64, 96) in a 64-byte data section
  ExpectError(b, "tensor_infos[0] 'w'.offset", at, "lies outside the 64-byte data section");
  GgufBytes huge;
  huge.Header(1, 0).Str("w").U32(1).U64(8).U32(kF32);
  const uint64_t huge_at = huge.size();
  huge.U64(~0ull - 31).PadTo(32).Zeros(32);  // offset + size would wrap around
  ExpectError(huge, "tensor_infos[0] 'w'.offset", huge_at, "lies outside");
}

TEST(GgufCorrupt, TruncatedData) {
  GgufBytes b;
  b.Header(1, 0).Str("w").U32(2).U64(4).U64(2).U32(kF32);
  const uint64_t at = b.size();
  b.U64(0).PadTo(32).Zeros(20);  // 32 bytes needed
  ExpectError(b, "tensor_infos[0] 'w'.offset", at, "truncated data");
}

TEST(GgufCorrupt, DataSectionPastEnd) {
  GgufBytes b;
  b.Header(1, 0).TensorInfo("w", {1}, kF32, 0);  // infos end at byte 57; no padding, no data
  ExpectError(b, "data section", b.size(), "the file ends at");
}

TEST(GgufCorrupt, OverlappingTensors) {
  GgufBytes b;
  b.Header(2, 0).TensorInfo("a", {16}, kF32, 0).Str("b").U32(1).U64(8).U32(kF32);
  const uint64_t at = b.size();
  b.U64(32).PadTo(32).Zeros(96);  // a = [0, 64), b = [32, 64)
  ExpectError(b, "tensor_infos[1] 'b'.offset", at, "overlaps tensor_infos[0] 'a' at [0, 64)");
}

TEST(GgufCorrupt, MisalignedOffset) {
  GgufBytes b;
  b.Header(1, 0).Str("w").U32(1).U64(4).U32(kF32);
  const uint64_t at = b.size();
  b.U64(4).PadTo(32).Zeros(64);
  ExpectError(b, "tensor_infos[0] 'w'.offset", at, "offset 4 is not a multiple of the alignment 32");
}

TEST(GgufCorrupt, MisalignedForCustomAlignment) {
  GgufBytes b;
  b.Header(1, 1).KvU32("general.alignment", 64).Str("w").U32(1).U64(4).U32(kF32);
  const uint64_t at = b.size();
  b.U64(32).PadTo(64).Zeros(128);
  ExpectError(b, "tensor_infos[0] 'w'.offset", at, "not a multiple of the alignment 64");
}

TEST(GgufCorrupt, UnknownTensorType) {
  GgufBytes b;
  b.Header(1, 0).Str("w").U32(1).U64(4);
  const uint64_t at = b.size();
  b.U32(99).U64(0).PadTo(32).Zeros(64);
  ExpectError(b, "tensor_infos[0] 'w'.type", at, "unknown tensor type 99");
}

TEST(GgufCorrupt, UnknownValueType) {
  GgufBytes b;
  b.Header(0, 1).Str("k");
  const uint64_t at = b.size();
  b.U32(13).U32(0);
  ExpectError(b, "metadata[0] 'k'.type", at, "unknown value type 13");
  GgufBytes arr;
  arr.Header(0, 1).Str("k").U32(9);
  const uint64_t arr_at = arr.size();
  arr.U32(200).U64(0);
  ExpectError(arr, "metadata[0] 'k'.value.element_type", arr_at, "unknown value type 200");
}

TEST(GgufCorrupt, DimensionProductOverflows) {
  GgufBytes b;
  b.Header(1, 0).Str("w").U32(2).U64(1ull << 32);
  const uint64_t at = b.size();
  b.U64(1ull << 32).U32(kF32).U64(0).PadTo(32).Zeros(32);
  ExpectError(b, "tensor_infos[0] 'w'.dims[1]", at, "overflow");
  GgufBytes neg;
  neg.Header(1, 0).Str("w").U32(1);
  const uint64_t neg_at = neg.size();
  neg.U64(1ull << 63).U32(kF32).U64(0).PadTo(32).Zeros(32);
  ExpectError(neg, "tensor_infos[0] 'w'.dims[0]", neg_at, "overflow");
  // Elements fit in int64 but F32 bytes (4 × 2^62) do not.
  GgufBytes bytes;
  bytes.Header(1, 0).Str("w").U32(1).U64(1ull << 62);
  const uint64_t bytes_at = bytes.size();
  bytes.U32(kF32).U64(0).PadTo(32).Zeros(32);
  ExpectError(bytes, "tensor_infos[0] 'w'.type", bytes_at, "overflows 64 bits");
}

TEST(GgufCorrupt, TooManyDims) {
  GgufBytes b;
  b.Header(1, 0).Str("w");
  const uint64_t at = b.size();
  b.U32(5).U64(1).U64(1).U64(1).U64(1).U64(1).U32(kF32).U64(0).PadTo(32).Zeros(32);
  ExpectError(b, "tensor_infos[0] 'w'.n_dims", at, "n_dims 5 is not in 1..4");
}

TEST(GgufCorrupt, ZeroDims) {
  GgufBytes b;
  b.Header(1, 0).Str("w");
  const uint64_t at = b.size();
  b.U32(0).U32(kF32).U64(0).PadTo(32).Zeros(32);
  ExpectError(b, "tensor_infos[0] 'w'.n_dims", at, "n_dims 0 is not in 1..4");
  GgufBytes z;
  z.Header(1, 0).Str("w").U32(2).U64(4);
  const uint64_t z_at = z.size();
  z.U64(0).U32(kF32).U64(0).PadTo(32).Zeros(32);
  ExpectError(z, "tensor_infos[0] 'w'.dims[1]", z_at, "dimension is 0");
}

TEST(GgufCorrupt, RowNotMultipleOfBlock) {
  GgufBytes b;
  b.Header(1, 0).Str("w").U32(1);
  const uint64_t at = b.size();
  b.U64(33).U32(kQ8_0).U64(0).PadTo(32).Zeros(64);
  ExpectError(b, "tensor_infos[0] 'w'.dims[0]", at, "row of 33 elements is not a multiple of the Q8_0 block size 32");
}

TEST(GgufCorrupt, AlignmentNotPowerOfTwo) {
  GgufBytes b;
  b.Header(0, 1).Str("general.alignment").U32(4);
  const uint64_t at = b.size();
  b.U32(48);
  ExpectError(b, "metadata[0] 'general.alignment'.value", at, "alignment 48 is not a power of two");
  GgufBytes zero;
  zero.Header(0, 1).Str("general.alignment").U32(4);
  const uint64_t zero_at = zero.size();
  zero.U32(0);
  ExpectError(zero, "metadata[0] 'general.alignment'.value", zero_at, "alignment 0 is not a power of two");
  GgufBytes type;
  type.Header(0, 1).Str("general.alignment").U32(5 /* int32 */);
  const uint64_t type_at = type.size();
  type.U32(32);
  ExpectError(type, "metadata[0] 'general.alignment'.value", type_at, "must be a uint32");
}

TEST(GgufCorrupt, DuplicateKey) {
  GgufBytes b;
  b.Header(0, 2).KvU32("k", 1);
  const uint64_t at = b.size();
  b.KvU32("k", 2);
  ExpectError(b, "metadata[1] 'k'.key", at, "duplicate key (first defined as metadata[0])");
}

TEST(GgufCorrupt, DuplicateTensorName) {
  GgufBytes b;
  b.Header(2, 0).TensorInfo("w", {8}, kF32, 0);
  const uint64_t at = b.size();
  b.TensorInfo("w", {8}, kF32, 32).PadTo(32).Zeros(64);
  ExpectError(b, "tensor_infos[1] 'w'.name", at, "duplicate tensor name");
}

TEST(GgufCorrupt, EmptyKeyAndName) {
  GgufBytes b;
  b.Header(0, 1).Str("").U32(4).U32(1);
  ExpectError(b, "metadata[0].key", kFirstKv, "empty key");
  GgufBytes t;
  t.Header(1, 0);
  const uint64_t at = t.size();
  t.TensorInfo("", {8}, kF32, 0).PadTo(32).Zeros(32);
  ExpectError(t, "tensor_infos[0] ''.name", at, "empty tensor name");
}

TEST(GgufCorrupt, BoolNotZeroOrOne) {
  GgufBytes b;
  b.Header(0, 1).Str("b").U32(7);
  const uint64_t at = b.size();
  b.U8(2);
  ExpectError(b, "metadata[0] 'b'.value", at, "bool value 2 is neither 0 nor 1");
}

TEST(GgufCorrupt, ArraysNestedTooDeep) {
  GgufBytes b;
  b.Header(0, 1).Str("n").U32(9);
  for (int i = 0; i < 20; ++i) b.U32(9).U64(1);
  b.U32(4).U64(0);
  const std::string msg = OpenError(b);
  EXPECT_NE(msg.find("nested more than 8 deep"), std::string::npos) << msg;
  EXPECT_NE(msg.find("metadata[0] 'n'.value"), std::string::npos) << msg;
}

TEST(GgufCorrupt, MetadataValueCapBoundsMemory) {
  // 2^24 + 1 one-byte values would fit in the file but exceed ridge's cap on metadata values.
  GgufBytes b;
  b.Header(0, 1).Str("big").U32(9).U32(0 /* uint8 */);
  const uint64_t at = b.size();
  const uint64_t n = (uint64_t{1} << 24) + 1;
  b.U64(n).Zeros(n);
  ExpectError(b, "metadata[0] 'big'.value.count", at, "past ridge's limit of 16777216 values");
}

TEST(GgufCorrupt, NonPrintableKeyIsEscapedInMessage) {
  GgufBytes b;
  b.Header(0, 2).KvU32(std::string("\x01z", 2), 1).KvU32(std::string("\x01z", 2), 1);
  const std::string msg = OpenError(b);
  EXPECT_NE(msg.find("'\\x01z'"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ridge
