#pragma once
// A whole file's bytes, read-only, either memory-mapped in place or copied
// into anonymous memory backed by 2 MiB pages. Owns the memory; views into
// it (weights, strings) borrow and must not outlive it.
//
// Why the copy: a mapped file sits in 4 KiB page-cache pages, and streaming
// gigabytes of weights through 4 KiB pages costs TLB misses (in a VM with
// nested paging, ~42 GB/s instead of ~60 GB/s on the machine ridge was
// measured on). Decode reads every weight once per token, so its speed is
// that bandwidth. The copy costs one read of the file at load time and the
// memory is private to the process; kMapped starts faster and shares the
// page cache between processes.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "ridge/base/huge_page_buffer.h"

namespace ridge {

enum class FileBacking {
  kMapped,          // mmap of the file: pages load on first touch, 4 KiB each
  kHugePageMemory,  // read into anonymous memory advised MADV_HUGEPAGE
};

class MappedFile {
 public:
  // Throws ridge::Error naming the path if the file cannot be opened, mapped,
  // allocated or read.
  static MappedFile Open(const std::string& path, FileBacking backing = FileBacking::kMapped);

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
  FileBacking backing() const { return backing_; }
  // kHugePageMemory: runs edit(bytes) with the copy writable, then makes it
  // read-only again (how weights are repacked at load) and returns true.
  // kMapped: false, and the file's bytes stay as they are.
  bool Rewrite(const std::function<void(uint8_t* bytes)>& edit);
  // Bytes of this file's memory the kernel currently backs with huge pages
  // (from /proc/self/smaps; 0 for kMapped or where THP is off).
  size_t HugePageBytes() const;

 private:
  void Release();
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_bytes_ = 0;
  FileBacking backing_ = FileBacking::kMapped;
  void* mapping_ = nullptr;  // kMapped: what munmap releases
  HugePageBuffer copy_;      // kHugePageMemory: the bytes
};

// One line for reports: where the bytes live, e.g. "copied into 2 MiB pages
// (1114 of 1115 MiB huge)" or "mapped from the file (4 KiB page cache)".
std::string DescribeMemory(const MappedFile& file);

}  // namespace ridge
