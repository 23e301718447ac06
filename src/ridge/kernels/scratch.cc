#include "ridge/kernels/scratch.h"

#include <cstdlib>
#include <new>

namespace ridge::kernels {

ScratchBuffer::~ScratchBuffer() { std::free(data_); }

uint8_t* ScratchBuffer::Get(int64_t n_bytes) {
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

}  // namespace ridge::kernels
