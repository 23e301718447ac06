#pragma once
// A growable, 64-byte aligned byte buffer that is reused across calls: kernels
// keep one per thread (thread_local) so the hot path never allocates once the
// largest shape has been seen. Its members are defined in scratch.cc, compiled
// for the baseline ISA, so that *_avx2.cc / *_avx512.cc files may use it
// without the linker picking an AVX copy of an inline member for every caller.
#include <cstdint>

namespace ridge::kernels {

class ScratchBuffer {
 public:
  ScratchBuffer() = default;
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  ~ScratchBuffer();

  // At least n_bytes, 64-byte aligned; previous contents are not kept.
  uint8_t* Get(int64_t n_bytes);

 private:
  uint8_t* data_ = nullptr;
  int64_t capacity_ = 0;
};

}  // namespace ridge::kernels
