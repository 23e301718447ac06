#include "ridge/roofline/bandwidth_meter.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ridge/base/clock.h"
#include "ridge/base/error.h"
#include "ridge/base/thread_pool.h"
#include "ridge/roofline/units.h"

namespace ridge {
namespace {
constexpr size_t kAlign = size_t{2} << 20;  // 2 MiB: lets the kernel back the buffer with huge pages
}

struct BandwidthMeter::Buffer {
  explicit Buffer(size_t bytes) : data(static_cast<uint8_t*>(std::aligned_alloc(kAlign, bytes))) {}
  ~Buffer() { std::free(data); }
  uint8_t* data;
};

BandwidthMeter::BandwidthMeter(ThreadPool& pool, int64_t requested_bytes)
    : pool_(pool), kernels_(probe::KernelsFor(ActiveIsa())) {
  if (requested_bytes < (int64_t{1} << 20)) Fail("bandwidth meter: the buffer must be at least 1 MiB");
  // Contiguous chunks, several per thread so a slow thread is made up for.
  chunk_bytes_ = requested_bytes / (int64_t{pool.n_threads()} * 16);
  chunk_bytes_ = std::clamp<int64_t>(chunk_bytes_ / 4096 * 4096, 64 << 10, 8 << 20);
  n_chunks_ = std::max<int64_t>(1, requested_bytes / chunk_bytes_);
  const size_t alloc_bytes = (static_cast<size_t>(buffer_bytes()) + kAlign - 1) / kAlign * kAlign;
  buffer_ = std::make_unique<Buffer>(alloc_bytes);
  if (!buffer_->data)
    Fail("bandwidth meter: cannot allocate the {} buffer", FormatBytes(static_cast<double>(buffer_bytes())));
  madvise(buffer_->data, alloc_bytes, MADV_HUGEPAGE);  // a hint; failure is harmless
  // First touch from the pool (pages land near the threads that read them);
  // chunk c holds the byte (c % 251) + 1 everywhere, so its word sum is known.
  uint8_t* data = buffer_->data;
  const int64_t chunk = chunk_bytes_;
  pool_.ParallelFor(n_chunks_, [&](int64_t c, int) {
    std::memset(data + c * chunk, static_cast<int>(c % 251) + 1, static_cast<size_t>(chunk));
  });
  const uint64_t words_per_chunk = static_cast<uint64_t>(chunk) / 8;
  for (int64_t c = 0; c < n_chunks_; ++c)
    expected_sum_ += words_per_chunk * (static_cast<uint64_t>(c % 251) + 1) * 0x0101010101010101ull;
}

BandwidthMeter::~BandwidthMeter() = default;

double BandwidthMeter::ReadBytesPerSecond() {
  struct alignas(64) Partial {
    uint64_t sum = 0;
  };
  std::vector<Partial> partial(static_cast<size_t>(pool_.n_threads()));
  const uint8_t* data = buffer_->data;
  const Clock::time_point start = Clock::now();
  pool_.ParallelFor(n_chunks_, [&](int64_t c, int thread) {
    partial[static_cast<size_t>(thread)].sum += kernels_.read_sum(data + c * chunk_bytes_, static_cast<size_t>(chunk_bytes_));
  });
  const double seconds = SecondsSince(start);
  uint64_t total = 0;
  for (const Partial& p : partial) total += p.sum;
  RIDGE_CHECK(total == expected_sum_);  // every byte was read
  return static_cast<double>(buffer_bytes()) / std::max(seconds, 1e-9);
}

}  // namespace ridge
