#include "ridge/base/mapped_file.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

#include "ridge/base/error.h"

namespace ridge {
namespace {

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
    file.mapping_ = p;
    file.data_ = static_cast<const uint8_t*>(p);
    return file;
  }

  file.copy_ = HugePageBuffer::Allocate(file.size_bytes_, /*prefault=*/false, path.c_str());
  uint8_t* dst = file.copy_.data();
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
  file.copy_.MakeReadOnly();  // weights are never written
  file.data_ = dst;
  return file;
}

bool MappedFile::Rewrite(const std::function<void(uint8_t* bytes)>& edit) {
  if (backing_ != FileBacking::kHugePageMemory || size_bytes_ == 0) return false;
  struct ReadOnlyAgain {
    HugePageBuffer& copy;
    ~ReadOnlyAgain() { copy.MakeReadOnly(); }
  } guard{copy_};
  copy_.MakeWritable();
  edit(copy_.data());
  return true;
}

size_t MappedFile::HugePageBytes() const {
  return backing_ == FileBacking::kHugePageMemory ? ridge::HugePageBytes(data_, size_bytes_) : 0;
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
    mapping_ = std::exchange(other.mapping_, nullptr);
    copy_ = std::move(other.copy_);
  }
  return *this;
}

MappedFile::~MappedFile() { Release(); }

void MappedFile::Release() {
  if (mapping_) ::munmap(mapping_, size_bytes_);
  mapping_ = nullptr;
  copy_ = HugePageBuffer();
  data_ = nullptr;
  size_bytes_ = 0;
}

}  // namespace ridge
