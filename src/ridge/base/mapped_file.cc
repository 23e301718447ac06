#include "ridge/base/mapped_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

#include "ridge/base/error.h"

namespace ridge {
namespace {

constexpr size_t kHugePageBytes = size_t{2} << 20;
constexpr size_t kReadChunkBytes = size_t{64} << 20;

// Closes the descriptor on every path out of Open.
struct FdCloser {
  int fd;
  ~FdCloser() { ::close(fd); }
};

}  // namespace

MappedFile MappedFile::Open(const std::string& path, FileBacking backing) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) Fail("{}: cannot open: {}", path, std::strerror(errno));
  FdCloser closer{fd};
  struct stat st{};
  if (::fstat(fd, &st) != 0) Fail("{}: cannot stat: {}", path, std::strerror(errno));
  if (!S_ISREG(st.st_mode)) Fail("{}: not a regular file", path);
  MappedFile file;
  file.path_ = path;
  file.backing_ = backing;
  file.size_bytes_ = static_cast<size_t>(st.st_size);
  if (file.size_bytes_ == 0) return file;

  if (backing == FileBacking::kMapped) {
    void* p = ::mmap(nullptr, file.size_bytes_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) Fail("{}: cannot mmap {} bytes: {}", path, file.size_bytes_, std::strerror(errno));
    file.region_ = p;
    file.region_bytes_ = file.size_bytes_;
    file.data_ = static_cast<const uint8_t*>(p);
    return file;
  }

  // Over-allocate by one huge page so the data can start on a 2 MiB boundary,
  // which is where the kernel can place huge pages.
  const size_t rounded = (file.size_bytes_ + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  file.region_bytes_ = rounded + kHugePageBytes;
  void* region = ::mmap(nullptr, file.region_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED)
    Fail("{}: cannot allocate {} bytes to hold the file: {}", path, file.region_bytes_, std::strerror(errno));
  file.region_ = region;
  const auto aligned = (reinterpret_cast<uintptr_t>(region) + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  auto* dst = reinterpret_cast<uint8_t*>(aligned);
  file.data_ = dst;
  ::madvise(dst, rounded, MADV_HUGEPAGE);  // a hint: without THP the copy still works, in 4 KiB pages
  size_t done = 0;
  while (done < file.size_bytes_) {
    const size_t want = std::min(kReadChunkBytes, file.size_bytes_ - done);
    const ssize_t got = ::pread(fd, dst + done, want, static_cast<off_t>(done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) Fail("{}: read failed at byte {}: {}", path, done, std::strerror(errno));
    if (got == 0) Fail("{}: file ended at byte {} while {} were expected (changed while loading?)", path, done,
                       file.size_bytes_);
    done += static_cast<size_t>(got);
  }
  ::mprotect(region, file.region_bytes_, PROT_READ);  // weights are never written
  return file;
}

size_t MappedFile::HugePageBytes() const {
  if (!data_ || backing_ != FileBacking::kHugePageMemory) return 0;
  std::ifstream smaps("/proc/self/smaps");
  const auto begin = reinterpret_cast<uintptr_t>(data_), end = begin + size_bytes_;
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
  return std::min(total, size_bytes_);
}

std::string DescribeMemory(const MappedFile& file) {
  if (file.backing() == FileBacking::kMapped) return "mapped from the file (4 KiB page cache)";
  constexpr double kMiB = 1 << 20;
  char text[128];
  std::snprintf(text, sizeof text, "copied into 2 MiB pages (%.0f of %.0f MiB huge)", file.HugePageBytes() / kMiB,
                file.size_bytes() / kMiB);
  return text;
}

MappedFile::MappedFile(MappedFile&& other) noexcept { *this = std::move(other); }

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    Release();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_bytes_ = std::exchange(other.size_bytes_, 0);
    backing_ = other.backing_;
    region_ = std::exchange(other.region_, nullptr);
    region_bytes_ = std::exchange(other.region_bytes_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { Release(); }

void MappedFile::Release() {
  if (region_) ::munmap(region_, region_bytes_);
  region_ = nullptr;
  region_bytes_ = 0;
  data_ = nullptr;
  size_bytes_ = 0;
}

}  // namespace ridge
