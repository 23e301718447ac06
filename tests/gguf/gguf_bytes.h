#pragma once
// Test helper: assembles GGUF bytes field by field (independently of
// GgufWriter), recording the byte offset of each field so tests can check that
// error messages name the right place.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace ridge::testing {

class GgufBytes {
 public:
  uint64_t size() const { return bytes_.size(); }
  std::vector<uint8_t>& bytes() { return bytes_; }

  template <typename T>
  GgufBytes& Pod(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof v);
    return *this;
  }
  GgufBytes& U8(uint8_t v) { return Pod(v); }
  GgufBytes& U32(uint32_t v) { return Pod(v); }
  GgufBytes& U64(uint64_t v) { return Pod(v); }
  GgufBytes& Raw(const std::string& s) {
    bytes_.insert(bytes_.end(), s.begin(), s.end());
    return *this;
  }
  GgufBytes& Str(const std::string& s) { return U64(s.size()).Raw(s); }
  GgufBytes& Header(uint64_t n_tensors, uint64_t n_kv, uint32_t version = 3) {
    return Raw("GGUF").U32(version).U64(n_tensors).U64(n_kv);
  }
  // key + type tag uint32 (4) + value
  GgufBytes& KvU32(const std::string& key, uint32_t v) { return Str(key).U32(4).U32(v); }
  GgufBytes& KvStr(const std::string& key, const std::string& v) { return Str(key).U32(8).Str(v); }
  GgufBytes& TensorInfo(const std::string& name, std::vector<uint64_t> dims, uint32_t type, uint64_t offset) {
    Str(name).U32(static_cast<uint32_t>(dims.size()));
    for (uint64_t d : dims) U64(d);
    return U32(type).U64(offset);
  }
  GgufBytes& PadTo(uint64_t alignment) {
    while (bytes_.size() % alignment) bytes_.push_back(0);
    return *this;
  }
  GgufBytes& Zeros(uint64_t n) {
    bytes_.insert(bytes_.end(), n, 0);
    return *this;
  }
  void WriteTo(const std::string& path) const {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes_.data()), static_cast<std::streamsize>(bytes_.size()));
  }

 private:
  std::vector<uint8_t> bytes_;
};

}  // namespace ridge::testing
