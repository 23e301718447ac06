// GGUF v3 reader. Every length, count, offset and size is checked against the
// bytes that remain in the file before it is used, so corrupt input gives a
// ridge::Error ("FILE: FIELD at byte offset N: PROBLEM") and never a read past
// the mapping or an allocation sized by an unchecked count.
#include "ridge/gguf/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "ridge/base/error.h"

namespace ridge {
namespace {

constexpr int kMaxArrayDepth = 8;
// Each parsed value costs sizeof(GgufValue) (~48 bytes) in memory against at
// least one byte in the file. Real files hold well under 2M values (a 256K-token
// vocabulary plus its merges); this cap keeps a hostile multi-gigabyte file of
// one-byte array elements from asking for hundreds of gigabytes.
constexpr uint64_t kMaxMetadataValues = uint64_t{1} << 24;

// The smallest number of bytes one value of `type` occupies in a file.
uint64_t MinValueBytes(GgufValueType type) {
  switch (type) {
    case GgufValueType::kUint8:
    case GgufValueType::kInt8:
    case GgufValueType::kBool: return 1;
    case GgufValueType::kUint16:
    case GgufValueType::kInt16: return 2;
    case GgufValueType::kUint32:
    case GgufValueType::kInt32:
    case GgufValueType::kFloat32: return 4;
    case GgufValueType::kUint64:
    case GgufValueType::kInt64:
    case GgufValueType::kFloat64:
    case GgufValueType::kString: return 8;   // the length prefix
    case GgufValueType::kArray: return 12;   // element type + count
  }
  return 1;
}

bool IsKnownValueType(uint32_t raw) { return raw <= static_cast<uint32_t>(GgufValueType::kFloat64); }

std::string Printable(const std::string& s) {
  std::string out;
  for (char c : s.substr(0, 64)) {
    auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7f) ? std::string(1, c) : fmt::format("\\x{:02x}", u);
  }
  if (s.size() > 64) out += "...";
  return out;
}

}  // namespace

class GgufParser {
 public:
  explicit GgufParser(GgufFile& file)
      : f_(file), bytes_(file.file_.data()), size_(file.file_.size_bytes()) {}

  void Parse() {
    ParseHeader();
    ParseMetadata();
    ParseAlignment();
    ParseTensorInfos();
    PlaceTensors();
  }

 private:
  [[noreturn]] void Bad(uint64_t offset, const std::string& field, const std::string& problem) const {
    Fail("{}: {} at byte offset {}: {}", f_.path(), field, offset, problem);
  }

  uint64_t Remaining() const { return size_ - pos_; }

  void Need(uint64_t n_bytes, const std::string& field) const {
    if (n_bytes > Remaining())
      Bad(pos_, field,
          fmt::format("truncated: needs {} bytes but the file ({} bytes) has only {} left", n_bytes, size_,
                      Remaining()));
  }

  template <typename T>
  T Read(const std::string& field) {
    Need(sizeof(T), field);
    T v;
    std::memcpy(&v, bytes_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  std::string ReadString(const std::string& field) {
    const uint64_t at = pos_;
    const auto n = Read<uint64_t>(field + ".length");
    if (n > Remaining())
      Bad(at, field + ".length",
          fmt::format("string length {} exceeds the {} bytes left in the file", n, Remaining()));
    std::string s(reinterpret_cast<const char*>(bytes_ + pos_), static_cast<size_t>(n));
    pos_ += n;
    return s;
  }

  GgufValueType ReadValueType(const std::string& field) {
    const uint64_t at = pos_;
    const auto raw = Read<uint32_t>(field);
    if (!IsKnownValueType(raw)) Bad(at, field, fmt::format("unknown value type {}", raw));
    return static_cast<GgufValueType>(raw);
  }

  GgufValue ReadValue(GgufValueType type, const std::string& field, int depth) {
    switch (type) {
      case GgufValueType::kUint8: return GgufValue::Uint(type, Read<uint8_t>(field));
      case GgufValueType::kUint16: return GgufValue::Uint(type, Read<uint16_t>(field));
      case GgufValueType::kUint32: return GgufValue::Uint(type, Read<uint32_t>(field));
      case GgufValueType::kUint64: return GgufValue::Uint(type, Read<uint64_t>(field));
      case GgufValueType::kInt8: return GgufValue::Int(type, Read<int8_t>(field));
      case GgufValueType::kInt16: return GgufValue::Int(type, Read<int16_t>(field));
      case GgufValueType::kInt32: return GgufValue::Int(type, Read<int32_t>(field));
      case GgufValueType::kInt64: return GgufValue::Int(type, Read<int64_t>(field));
      case GgufValueType::kFloat32: return GgufValue::Float(type, Read<float>(field));
      case GgufValueType::kFloat64: return GgufValue::Float(type, Read<double>(field));
      case GgufValueType::kBool: {
        const uint64_t at = pos_;
        const auto b = Read<uint8_t>(field);
        if (b > 1) Bad(at, field, fmt::format("bool value {} is neither 0 nor 1", b));
        return GgufValue::Bool(b == 1);
      }
      case GgufValueType::kString: return GgufValue::String(ReadString(field));
      case GgufValueType::kArray: return ReadArray(field, depth);
    }
    Bad(pos_, field, "unknown value type");
  }

  GgufValue ReadArray(const std::string& field, int depth) {
    const uint64_t at = pos_;
    if (depth >= kMaxArrayDepth)
      Bad(at, field, fmt::format("arrays nested more than {} deep", kMaxArrayDepth));
    const GgufValueType elem = ReadValueType(field + ".element_type");
    const uint64_t count_at = pos_;
    const auto count = Read<uint64_t>(field + ".count");
    // Check the count against the bytes left before reserving anything.
    const uint64_t min_bytes = MinValueBytes(elem);
    if (count > Remaining() / min_bytes)
      Bad(count_at, field + ".count",
          fmt::format("array of {} {} values needs at least {} bytes per value but only {} bytes are left", count,
                      GgufValueTypeName(elem), min_bytes, Remaining()));
    if (count > values_left_)
      Bad(count_at, field + ".count",
          fmt::format("array of {} values takes the metadata past ridge's limit of {} values in total", count,
                      kMaxMetadataValues));
    values_left_ -= count;
    std::vector<GgufValue> elems;
    elems.reserve(static_cast<size_t>(count));
    const bool scalar = elem != GgufValueType::kString && elem != GgufValueType::kArray;
    for (uint64_t i = 0; i < count; ++i)
      elems.push_back(ReadValue(elem, scalar ? field : fmt::format("{}[{}]", field, i), depth + 1));
    GgufValue v;
    v.type = GgufValueType::kArray;
    v.array_elem_type = elem;
    v.data = std::move(elems);
    return v;
  }

  void ParseHeader() {
    Need(4, "header.magic");
    if (std::memcmp(bytes_, "GGUF", 4) != 0)
      Bad(0, "header.magic",
          fmt::format("expected \"GGUF\" but found {:02x} {:02x} {:02x} {:02x}: not a GGUF file", bytes_[0],
                      bytes_[1], bytes_[2], bytes_[3]));
    pos_ = 4;
    f_.version_ = Read<uint32_t>("header.version");
    if (f_.version_ != 2 && f_.version_ != 3) {
      std::string hint = (f_.version_ == 0x03000000u || f_.version_ == 0x02000000u)
                             ? " (this looks like a big-endian GGUF; ridge reads little-endian files)"
                             : "";
      Bad(4, "header.version", fmt::format("unsupported GGUF version {} (ridge reads 2 and 3){}", f_.version_, hint));
    }
    const auto n_tensors = Read<uint64_t>("header.tensor_count");
    const auto n_kv = Read<uint64_t>("header.metadata_kv_count");
    // Minimal sizes: key (8 + 1) + type (4) + 1-byte value; tensor info name (8 + 1) + n_dims (4) + one dim (8)
    // + type (4) + offset (8).
    constexpr uint64_t kMinKvBytes = 8 + 1 + 4 + 1, kMinTensorInfoBytes = 8 + 1 + 4 + 8 + 4 + 8;
    if (n_kv > Remaining() / kMinKvBytes)
      Bad(16, "header.metadata_kv_count",
          fmt::format("{} metadata entries cannot fit in the {} bytes left in the file", n_kv, Remaining()));
    if (n_tensors > (Remaining() - n_kv * kMinKvBytes) / kMinTensorInfoBytes)
      Bad(8, "header.tensor_count",
          fmt::format("{} tensor infos cannot fit in the {} bytes left in the file after {} metadata entries",
                      n_tensors, Remaining(), n_kv));
    n_tensors_ = n_tensors;
    n_kv_ = n_kv;
  }

  void ParseMetadata() {
    for (uint64_t i = 0; i < n_kv_; ++i) {
      const uint64_t key_at = pos_;
      const std::string base = fmt::format("metadata[{}]", i);
      std::string key = ReadString(base + ".key");
      if (key.empty()) Bad(key_at, base + ".key", "empty key");
      const std::string field = fmt::format("metadata[{}] '{}'", i, Printable(key));
      if (auto it = f_.metadata_index_.find(key); it != f_.metadata_index_.end())
        Bad(key_at, field + ".key", fmt::format("duplicate key (first defined as metadata[{}])", it->second));
      const GgufValueType type = ReadValueType(field + ".type");
      value_offsets_.push_back(pos_);
      GgufValue value = ReadValue(type, field + ".value", 0);
      f_.metadata_index_.emplace(key, f_.metadata_.size());
      f_.metadata_.emplace_back(std::move(key), std::move(value));
    }
  }

  void ParseAlignment() {
    auto it = f_.metadata_index_.find("general.alignment");
    if (it == f_.metadata_index_.end()) return;
    const GgufValue& v = f_.metadata_[it->second].second;
    const uint64_t at = value_offsets_[it->second];
    const std::string field = fmt::format("metadata[{}] 'general.alignment'.value", it->second);
    if (v.type != GgufValueType::kUint32)
      Bad(at, field, fmt::format("general.alignment must be a uint32, found {}", GgufValueTypeName(v.type)));
    const auto a = std::get<uint64_t>(v.data);
    if (a == 0 || (a & (a - 1)) != 0) Bad(at, field, fmt::format("alignment {} is not a power of two", a));
    f_.alignment_ = static_cast<uint32_t>(a);
  }

  void ParseTensorInfos() {
    for (uint64_t i = 0; i < n_tensors_; ++i) {
      GgufTensorInfo t;
      const uint64_t name_at = pos_;
      t.name = ReadString(fmt::format("tensor_infos[{}].name", i));
      const std::string base = fmt::format("tensor_infos[{}] '{}'", i, Printable(t.name));
      if (t.name.empty()) Bad(name_at, base + ".name", "empty tensor name");
      if (auto it = f_.tensor_index_.find(t.name); it != f_.tensor_index_.end())
        Bad(name_at, base + ".name", fmt::format("duplicate tensor name (first defined as tensor_infos[{}])", it->second));
      const uint64_t n_dims_at = pos_;
      const auto n_dims = Read<uint32_t>(base + ".n_dims");
      if (n_dims == 0 || n_dims > kGgufMaxDims)
        Bad(n_dims_at, base + ".n_dims", fmt::format("n_dims {} is not in 1..{}", n_dims, kGgufMaxDims));
      int64_t n_elements = 1;
      for (uint32_t d = 0; d < n_dims; ++d) {
        const uint64_t dim_at = pos_;
        const std::string field = fmt::format("{}.dims[{}]", base, d);
        const auto dim = Read<uint64_t>(field);
        if (dim == 0) Bad(dim_at, field, "dimension is 0");
        if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
            __builtin_mul_overflow(n_elements, static_cast<int64_t>(dim), &n_elements))
          Bad(dim_at, field, fmt::format("dimension {} makes the element count overflow 64 bits", dim));
        t.dims.push_back(static_cast<int64_t>(dim));
      }
      const uint64_t type_at = pos_;
      const auto raw_type = Read<uint32_t>(base + ".type");
      const auto traits = FindGgmlType(raw_type);
      if (!traits) Bad(type_at, base + ".type", fmt::format("unknown tensor type {}", raw_type));
      t.type = static_cast<GgmlType>(raw_type);
      if (t.dims[0] % traits->block_elems != 0)
        Bad(n_dims_at + 4, base + ".dims[0]",
            fmt::format("row of {} elements is not a multiple of the {} block size {}", t.dims[0], traits->name,
                        traits->block_elems));
      t.n_elements = n_elements;
      if (__builtin_mul_overflow(n_elements / traits->block_elems, traits->block_bytes, &t.n_bytes))
        Bad(type_at, base + ".type", fmt::format("size of {} {} elements overflows 64 bits", n_elements, traits->name));
      const uint64_t offset_at = pos_;
      t.offset = Read<uint64_t>(base + ".offset");
      if (t.offset % f_.alignment_ != 0)
        Bad(offset_at, base + ".offset",
            fmt::format("offset {} is not a multiple of the alignment {}", t.offset, f_.alignment_));
      offset_field_at_.push_back(offset_at);
      f_.tensor_index_.emplace(t.name, f_.tensors_.size());
      f_.tensors_.push_back(std::move(t));
    }
  }

  void PlaceTensors() {
    const uint64_t a = f_.alignment_;
    const uint64_t end_of_infos = pos_;
    f_.data_offset_ = (end_of_infos + a - 1) / a * a;  // pos_ <= size_, so no overflow
    if (f_.tensors_.empty()) {
      // llama.cpp does not pad tokenizer-only files: their (empty) data section starts at the end.
      f_.data_offset_ = std::min<uint64_t>(f_.data_offset_, size_);
      return;
    }
    if (f_.data_offset_ > size_)
      Bad(end_of_infos, "data section",
          fmt::format("the data section would start at byte {} but the file ends at {}", f_.data_offset_, size_));
    const uint64_t data_bytes = size_ - f_.data_offset_;
    for (size_t i = 0; i < f_.tensors_.size(); ++i) {
      GgufTensorInfo& t = f_.tensors_[i];
      const auto n_bytes = static_cast<uint64_t>(t.n_bytes);
      if (t.offset > data_bytes || n_bytes > data_bytes - t.offset)
        Bad(offset_field_at_[i], fmt::format("tensor_infos[{}] '{}'.offset", i, Printable(t.name)),
            fmt::format("tensor data [{}, +{} bytes) lies outside the {}-byte data section at file byte {} "
                        "(truncated data or bad offset)",
                        t.offset, n_bytes, data_bytes, f_.data_offset_));
      t.data = bytes_ + f_.data_offset_ + t.offset;
    }
    std::vector<size_t> order(f_.tensors_.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::sort(order.begin(), order.end(),
              [&](size_t x, size_t y) { return f_.tensors_[x].offset < f_.tensors_[y].offset; });
    for (size_t k = 1; k < order.size(); ++k) {
      const GgufTensorInfo& prev = f_.tensors_[order[k - 1]];
      const GgufTensorInfo& cur = f_.tensors_[order[k]];
      if (prev.offset + static_cast<uint64_t>(prev.n_bytes) > cur.offset)
        Bad(offset_field_at_[order[k]], fmt::format("tensor_infos[{}] '{}'.offset", order[k], Printable(cur.name)),
            fmt::format("tensor data at {} overlaps tensor_infos[{}] '{}' at [{}, {})", cur.offset, order[k - 1],
                        Printable(prev.name), prev.offset, prev.offset + static_cast<uint64_t>(prev.n_bytes)));
    }
  }

  GgufFile& f_;
  const uint8_t* bytes_;
  uint64_t size_;
  uint64_t pos_ = 0;
  uint64_t n_tensors_ = 0;
  uint64_t n_kv_ = 0;
  uint64_t values_left_ = kMaxMetadataValues;  // array elements still allowed
  std::vector<uint64_t> value_offsets_;   // per metadata entry
  std::vector<uint64_t> offset_field_at_;  // per tensor: where its offset field is
};

GgufFile GgufFile::Open(const std::string& path, FileBacking backing) {
  // Validated through a mapping first, so that a hostile or broken file is
  // refused before gigabytes are allocated and read for its copy.
  GgufFile f;
  f.file_ = MappedFile::Open(path, FileBacking::kMapped);
  GgufParser(f).Parse();
  if (backing == FileBacking::kMapped) return f;
  // The copy is parsed again: it is what will be used, and the file may have
  // changed in between.
  GgufFile copy;
  copy.file_ = MappedFile::Open(path, backing);
  GgufParser(copy).Parse();
  return copy;
}

const GgufValue* GgufFile::Find(const std::string& key) const {
  auto it = metadata_index_.find(key);
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].second;
}

namespace {
[[noreturn]] void WrongKind(const std::string& path, const std::string& key, const GgufValue& v, const char* want) {
  Fail("{}: metadata key '{}' is a {} but {} was expected", path, key, GgufValueTypeName(v.type), want);
}
}  // namespace

std::optional<int64_t> GgufFile::GetInt(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (!v) return std::nullopt;
  if (auto i = v->AsInt()) return i;
  if (std::holds_alternative<uint64_t>(v->data))
    Fail("{}: metadata key '{}' value {} does not fit a signed 64-bit integer", path(), key,
         std::get<uint64_t>(v->data));
  WrongKind(path(), key, *v, "an integer");
}

std::optional<double> GgufFile::GetFloat(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (!v) return std::nullopt;
  if (auto x = v->AsFloat()) return x;
  WrongKind(path(), key, *v, "a number");
}

std::optional<bool> GgufFile::GetBool(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (!v) return std::nullopt;
  if (auto b = v->AsBool()) return b;
  WrongKind(path(), key, *v, "a bool");
}

std::optional<std::string> GgufFile::GetString(const std::string& key) const {
  const GgufValue* v = Find(key);
  if (!v) return std::nullopt;
  if (const std::string* s = v->AsString()) return *s;
  WrongKind(path(), key, *v, "a string");
}

int64_t GgufFile::RequireInt(const std::string& key) const {
  if (auto v = GetInt(key)) return *v;
  Fail("{}: required metadata key '{}' is missing", path(), key);
}

std::string GgufFile::RequireString(const std::string& key) const {
  if (auto v = GetString(key)) return *v;
  Fail("{}: required metadata key '{}' is missing", path(), key);
}

const GgufTensorInfo* GgufFile::FindTensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace ridge
