#include "ridge/gguf/gguf_writer.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <algorithm>
#include <limits>
#include <memory>

#include "ridge/base/error.h"

namespace ridge {
namespace {

constexpr uint32_t kDefaultAlignment = 32;
constexpr size_t kMaxTensorNameBytes = 63;  // llama.cpp's GGML_MAX_NAME (64) less the NUL

class FileOut {
 public:
  FileOut(const std::string& path) : path_(path), f_(std::fopen(path.c_str(), "wb")) {
    if (!f_) Fail("{}: cannot create: {}", path, std::strerror(errno));
  }
  ~FileOut() {
    if (f_) std::fclose(f_);
  }
  void Bytes(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) Fail("{}: write failed at byte {}: {}", path_, offset_, std::strerror(errno));
    offset_ += n;
  }
  template <typename T>
  void Pod(T v) {
    Bytes(&v, sizeof v);
  }
  void String(const std::string& s) {
    Pod<uint64_t>(s.size());
    Bytes(s.data(), s.size());
  }
  void PadTo(uint64_t alignment) {
    static const uint8_t zeros[256] = {};
    uint64_t pad = (alignment - offset_ % alignment) % alignment;
    while (pad > 0) {
      const uint64_t n = std::min<uint64_t>(pad, sizeof zeros);
      Bytes(zeros, n);
      pad -= n;
    }
  }
  void Close() {
    FILE* f = f_;
    f_ = nullptr;
    if (std::fclose(f) != 0) Fail("{}: close failed: {}", path_, std::strerror(errno));
  }
  uint64_t offset() const { return offset_; }

 private:
  std::string path_;
  FILE* f_;
  uint64_t offset_ = 0;
};

void CheckRange(const std::string& key, const GgufValue& v, int64_t lo, uint64_t hi) {
  if (const auto* u = std::get_if<uint64_t>(&v.data)) {
    if (*u > hi) Fail("GGUF writer: key '{}': value {} does not fit {}", key, *u, GgufValueTypeName(v.type));
  } else if (const auto* i = std::get_if<int64_t>(&v.data)) {
    if (*i < lo || (*i > 0 && static_cast<uint64_t>(*i) > hi))
      Fail("GGUF writer: key '{}': value {} does not fit {}", key, *i, GgufValueTypeName(v.type));
  } else {
    Fail("GGUF writer: key '{}': a {} value holds a non-integer", key, GgufValueTypeName(v.type));
  }
}

// Writes the payload of a value of type v.type (no type tag).
void WritePayload(FileOut& out, const std::string& key, const GgufValue& v) {
  auto u = [&] { return std::get_if<uint64_t>(&v.data) ? std::get<uint64_t>(v.data)
                                                          : static_cast<uint64_t>(std::get<int64_t>(v.data)); };
  switch (v.type) {
    case GgufValueType::kUint8: CheckRange(key, v, 0, 0xff); return out.Pod<uint8_t>(static_cast<uint8_t>(u()));
    case GgufValueType::kInt8: CheckRange(key, v, -128, 127); return out.Pod<uint8_t>(static_cast<uint8_t>(u()));
    case GgufValueType::kUint16: CheckRange(key, v, 0, 0xffff); return out.Pod<uint16_t>(static_cast<uint16_t>(u()));
    case GgufValueType::kInt16:
      CheckRange(key, v, -32768, 32767);
      return out.Pod<uint16_t>(static_cast<uint16_t>(u()));
    case GgufValueType::kUint32:
      CheckRange(key, v, 0, 0xffffffffu);
      return out.Pod<uint32_t>(static_cast<uint32_t>(u()));
    case GgufValueType::kInt32:
      CheckRange(key, v, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max());
      return out.Pod<uint32_t>(static_cast<uint32_t>(u()));
    case GgufValueType::kUint64:
      CheckRange(key, v, 0, std::numeric_limits<uint64_t>::max());
      return out.Pod<uint64_t>(u());
    case GgufValueType::kInt64:
      CheckRange(key, v, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
      return out.Pod<uint64_t>(u());
    case GgufValueType::kFloat32: {
      const auto* d = std::get_if<double>(&v.data);
      if (!d) Fail("GGUF writer: key '{}': a float32 value holds a non-float", key);
      return out.Pod<float>(static_cast<float>(*d));
    }
    case GgufValueType::kFloat64: {
      const auto* d = std::get_if<double>(&v.data);
      if (!d) Fail("GGUF writer: key '{}': a float64 value holds a non-float", key);
      return out.Pod<double>(*d);
    }
    case GgufValueType::kBool: {
      const auto* b = std::get_if<bool>(&v.data);
      if (!b) Fail("GGUF writer: key '{}': a bool value holds a non-bool", key);
      return out.Pod<uint8_t>(*b ? 1 : 0);
    }
    case GgufValueType::kString: {
      const auto* s = std::get_if<std::string>(&v.data);
      if (!s) Fail("GGUF writer: key '{}': a string value holds a non-string", key);
      return out.String(*s);
    }
    case GgufValueType::kArray: {
      const auto* elems = std::get_if<std::vector<GgufValue>>(&v.data);
      if (!elems) Fail("GGUF writer: key '{}': an array value holds a non-array", key);
      out.Pod<uint32_t>(static_cast<uint32_t>(v.array_elem_type));
      out.Pod<uint64_t>(elems->size());
      for (const GgufValue& e : *elems) {
        if (e.type != v.array_elem_type)
          Fail("GGUF writer: key '{}': array of {} holds a {}", key, GgufValueTypeName(v.array_elem_type),
               GgufValueTypeName(e.type));
        WritePayload(out, key, e);
      }
      return;
    }
  }
  Fail("GGUF writer: key '{}': unknown value type {}", key, static_cast<uint32_t>(v.type));
}

}  // namespace

void GgufWriter::Set(const std::string& key, GgufValue value) {
  if (key.empty()) Fail("GGUF writer: empty metadata key");
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

void GgufWriter::SetString(const std::string& key, const std::string& v) { Set(key, GgufValue::String(v)); }
void GgufWriter::SetU32(const std::string& key, uint32_t v) { Set(key, GgufValue::Uint(GgufValueType::kUint32, v)); }
void GgufWriter::SetI32(const std::string& key, int32_t v) { Set(key, GgufValue::Int(GgufValueType::kInt32, v)); }
void GgufWriter::SetF32(const std::string& key, float v) { Set(key, GgufValue::Float(GgufValueType::kFloat32, v)); }
void GgufWriter::SetBool(const std::string& key, bool v) { Set(key, GgufValue::Bool(v)); }

void GgufWriter::AddTensor(const std::string& name, GgmlType type, std::vector<int64_t> dims,
                           TensorProducer producer) {
  if (name.empty() || name.size() > kMaxTensorNameBytes)
    Fail("GGUF writer: tensor name '{}' must have 1..{} bytes", name, kMaxTensorNameBytes);
  for (const auto& t : tensors_)
    if (t.name == name) Fail("GGUF writer: duplicate tensor name '{}'", name);
  if (dims.empty() || dims.size() > static_cast<size_t>(4))
    Fail("GGUF writer: tensor '{}' has {} dimensions (1..4 allowed)", name, dims.size());
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d <= 0 || __builtin_mul_overflow(n, d, &n)) Fail("GGUF writer: tensor '{}' has a bad dimension {}", name, d);
  }
  const GgmlTypeTraits& traits = TraitsOf(type);
  if (dims[0] % traits.block_elems != 0)
    Fail("GGUF writer: tensor '{}': row of {} elements is not a multiple of the {} block size {}", name, dims[0],
         traits.name, traits.block_elems);
  tensors_.push_back({name, type, std::move(dims), std::move(producer)});
}

void GgufWriter::AddTensorBytes(const std::string& name, GgmlType type, std::vector<int64_t> dims,
                                std::vector<uint8_t> bytes) {
  auto shared = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  AddTensor(name, type, std::move(dims), [shared, name](uint8_t* out, int64_t n_bytes) {
    if (static_cast<int64_t>(shared->size()) != n_bytes)
      Fail("GGUF writer: tensor '{}' was given {} bytes but its shape and type need {}", name, shared->size(),
           n_bytes);
    std::memcpy(out, shared->data(), shared->size());
  });
}

void GgufWriter::Write(const std::string& path, const Progress& progress) const {
  uint32_t alignment = kDefaultAlignment;
  for (const auto& [k, v] : metadata_) {
    if (k != "general.alignment") continue;
    if (v.type != GgufValueType::kUint32) Fail("GGUF writer: general.alignment must be a uint32");
    const uint64_t a = std::get<uint64_t>(v.data);
    if (a == 0 || a > 0xffffffffu || (a & (a - 1)) != 0)
      Fail("GGUF writer: general.alignment {} is not a power of two", a);
    alignment = static_cast<uint32_t>(a);
  }

  // Tensor sizes and their offsets in the data section.
  std::vector<uint64_t> n_bytes, offsets;
  uint64_t end = 0, total = 0;
  for (const auto& t : tensors_) {
    int64_t rows = 1;
    for (size_t i = 1; i < t.dims.size(); ++i) rows *= t.dims[i];
    const uint64_t nb = static_cast<uint64_t>(RowBytes(t.type, t.dims[0]) * rows);
    end = (end + alignment - 1) / alignment * alignment;
    offsets.push_back(end);
    n_bytes.push_back(nb);
    end += nb;
    total += nb;
  }

  // Write to a temporary name and rename at the end so a failure leaves no half-written file.
  const std::string tmp = path + ".partial";
  try {
    FileOut out(tmp);
    out.Bytes("GGUF", 4);
    out.Pod<uint32_t>(3);
    out.Pod<uint64_t>(tensors_.size());
    out.Pod<uint64_t>(metadata_.size());
    for (const auto& [k, v] : metadata_) {
      out.String(k);
      out.Pod<uint32_t>(static_cast<uint32_t>(v.type));
      WritePayload(out, k, v);
    }
    for (size_t i = 0; i < tensors_.size(); ++i) {
      const auto& t = tensors_[i];
      out.String(t.name);
      out.Pod<uint32_t>(static_cast<uint32_t>(t.dims.size()));
      for (int64_t d : t.dims) out.Pod<uint64_t>(static_cast<uint64_t>(d));
      out.Pod<uint32_t>(static_cast<uint32_t>(t.type));
      out.Pod<uint64_t>(offsets[i]);
    }
    // Like llama.cpp, a file without tensors ends right after its metadata (no padding).
    if (!tensors_.empty()) out.PadTo(alignment);
    const uint64_t data_start = out.offset();
    uint64_t done = 0;
    std::vector<uint8_t> buffer;
    for (size_t i = 0; i < tensors_.size(); ++i) {
      out.PadTo(alignment);
      RIDGE_CHECK(out.offset() - data_start == offsets[i]);
      buffer.assign(n_bytes[i], 0);
      tensors_[i].producer(buffer.data(), static_cast<int64_t>(n_bytes[i]));
      out.Bytes(buffer.data(), buffer.size());
      done += n_bytes[i];
      if (progress) progress(done, total);
    }
    // Pad the end too, as llama.cpp does, so the data section is a whole number of alignment units.
    if (!tensors_.empty()) out.PadTo(alignment);
    out.Close();
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec) Fail("{}: cannot rename {} to it: {}", path, tmp, ec.message());
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
}

}  // namespace ridge
