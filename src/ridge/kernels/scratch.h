#pragma once
// A growable, 64-byte aligned byte buffer that is reused across calls: kernels
// keep one per thread (thread_local) so the hot path never allocates once the
// largest shape has been seen. Not for use in *_avx2.cc / *_avx512.cc files.
#include <cstdint>
#include <cstdlib>
#include <new>

namespace ridge::kernels {

class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer() { std::free(data_); }

  // At least n_bytes, 64-byte aligned; previous contents are not kept.
  uint8_t* Get(int64_t n_bytes) {
    if (n_bytes > capacity_) {
      std::free(data_);
      data_ = nullptr;
      capacity_ = 0;
      const int64_t rounded = (n_bytes + 4095) & ~int64_t{4095};
      data_ = static_cast<uint8_t*>(std::aligned_alloc(64, static_cast<size_t>(rounded)));
      if (!data_) throw std::bad_alloc();
      capacity_ = rounded;
    }
    return data_;
  }

 private:
  uint8_t* data_ = nullptr;
  int64_t capacity_ = 0;
};

}  // namespace ridge::kernels
