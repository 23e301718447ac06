#pragma once
// Zero-filled anonymous memory that starts on a 2 MiB boundary and is
// advised MADV_HUGEPAGE (from 2 MiB on), so that the kernel can back it with 2 MiB pages:
// for buffers streamed every step (weights, the KV pool) 4 KiB pages cost TLB
// misses, and faulting gigabytes in 4 KiB pages costs seconds. Owns the
// mapping; move-only.
#include <cstddef>
#include <cstdint>

namespace ridge {

class HugePageBuffer {
 public:
  // Throws ridge::Error (naming `what`) if the memory cannot be mapped. With
  // `prefault`, every page is touched now, so the memory is really there
  // (counted in the process's RSS) before anyone relies on it.
  static HugePageBuffer Allocate(size_t n_bytes, bool prefault, const char* what);

  HugePageBuffer() = default;
  HugePageBuffer(HugePageBuffer&& other) noexcept;
  HugePageBuffer& operator=(HugePageBuffer&& other) noexcept;
  HugePageBuffer(const HugePageBuffer&) = delete;
  HugePageBuffer& operator=(const HugePageBuffer&) = delete;
  ~HugePageBuffer();

  uint8_t* data() const { return data_; }
  size_t size_bytes() const { return size_bytes_; }
  // No more writes: the pages become read-only.
  void MakeReadOnly();
  // Writable again (until the next MakeReadOnly).
  void MakeWritable();

 private:
  void Release();
  uint8_t* data_ = nullptr;
  size_t size_bytes_ = 0;
  void* region_ = nullptr;  // what munmap releases (data_ rounded to 2 MiB inside it)
  size_t region_bytes_ = 0;
};

// Bytes of [data, data + n_bytes) the kernel currently backs with huge pages,
// from /proc/self/smaps (0 where THP is off or the file cannot be read).
size_t HugePageBytes(const void* data, size_t n_bytes);

}  // namespace ridge
