#pragma once
// A read-only memory map of a whole file. Owns the mapping; views into it
// (weights, strings) borrow and must not outlive it.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace ridge {

class MappedFile {
 public:
  // Throws ridge::Error naming the path if the file cannot be opened or mapped.
  static MappedFile Open(const std::string& path);

  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size_bytes() const { return size_bytes_; }
  std::span<const uint8_t> bytes() const { return {data_, size_bytes_}; }
  const std::string& path() const { return path_; }

 private:
  void Release();
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_bytes_ = 0;
};

}  // namespace ridge
