#include "ridge/base/huge_page_buffer.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <utility>

#include "ridge/base/error.h"

namespace ridge {
namespace {
constexpr size_t kHugePageBytes = size_t{2} << 20;
}

HugePageBuffer HugePageBuffer::Allocate(size_t n_bytes, bool prefault, const char* what) {
  HugePageBuffer b;
  if (n_bytes == 0) return b;
  // Over-allocate by one huge page so the data can start on a 2 MiB boundary,
  // which is where the kernel can place huge pages.
  const size_t rounded = (n_bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  b.region_bytes_ = rounded + kHugePageBytes;
  void* region = ::mmap(nullptr, b.region_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) Fail("cannot allocate {} bytes for {}: {}", b.region_bytes_, what, std::strerror(errno));
  b.region_ = region;
  const auto aligned = (reinterpret_cast<uintptr_t>(region) + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  b.data_ = reinterpret_cast<uint8_t*>(aligned);
  b.size_bytes_ = n_bytes;
  // A hint: without THP the memory works, in 4 KiB pages. Below one huge page
  // there is nothing to gain, and a 2 MiB page to zero on first touch.
  if (n_bytes >= kHugePageBytes) ::madvise(b.data_, rounded, MADV_HUGEPAGE);
  if (prefault) {
    const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    for (size_t offset = 0; offset < n_bytes; offset += page) b.data_[offset] = 0;  // already zero: a write faults it in
  }
  return b;
}

HugePageBuffer::HugePageBuffer(HugePageBuffer&& other) noexcept { *this = std::move(other); }

HugePageBuffer& HugePageBuffer::operator=(HugePageBuffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
    region_ = std::exchange(other.region_, nullptr);
    region_bytes_ = std::exchange(other.region_bytes_, 0);
  }
  return *this;
}

HugePageBuffer::~HugePageBuffer() { Release(); }

void HugePageBuffer::MakeReadOnly() {
  if (region_) ::mprotect(region_, region_bytes_, PROT_READ);
}

void HugePageBuffer::MakeWritable() {
  if (region_) ::mprotect(region_, region_bytes_, PROT_READ | PROT_WRITE);
}

void HugePageBuffer::Release() {
  if (region_) ::munmap(region_, region_bytes_);
  region_ = nullptr;
  region_bytes_ = 0;
  data_ = nullptr;
  size_bytes_ = 0;
}

size_t HugePageBytes(const void* data, size_t n_bytes) {
  if (!data || n_bytes == 0) return 0;
  std::ifstream smaps("/proc/self/smaps");
  const auto begin = reinterpret_cast<uintptr_t>(data), end = begin + n_bytes;
  size_t total = 0;
  bool inside = false;  // the current mapping overlaps [begin, end)
  std::string line;
  while (std::getline(smaps, line)) {
    uintmax_t lo = 0, hi = 0;
    unsigned long long kib = 0;
    if (std::sscanf(line.c_str(), "%jx-%jx ", &lo, &hi) == 2 && line.find('-') < line.find(' ')) {
      inside = lo < end && hi > begin;
    } else if (inside && std::sscanf(line.c_str(), "AnonHugePages: %llu kB", &kib) == 1) {
      total += static_cast<size_t>(kib) * 1024;
    }
  }
  return std::min(total, n_bytes);
}

}  // namespace ridge
