#include "ridge/roofline/bandwidth_meter.h"

#include <algorithm>
#include <vector>

#include "ridge/base/clock.h"
#include "ridge/base/error.h"
#include "ridge/base/thread_pool.h"

namespace ridge {
namespace {
constexpr int64_t kMinBytes = 64 << 10;  // one chunk
}

BandwidthMeter::BandwidthMeter(ThreadPool& pool, std::span<const uint8_t> region)
    : pool_(pool), kernels_(probe::KernelsFor(ActiveIsa())) {
  const auto start = reinterpret_cast<uintptr_t>(region.data());
  const uintptr_t aligned = (start + 63) & ~uintptr_t{63};
  const int64_t usable = region.empty() || aligned - start >= region.size()
                             ? 0
                             : static_cast<int64_t>((region.size() - (aligned - start)) & ~size_t{63});
  if (usable < kMinBytes) Fail("bandwidth meter: the region must hold at least {} bytes, got {}", kMinBytes, usable);
  begin_ = reinterpret_cast<const uint8_t*>(aligned);
  // Contiguous chunks, several per thread so a slow thread is made up for.
  chunk_bytes_ = usable / (int64_t{pool.n_threads()} * 16);
  chunk_bytes_ = std::clamp<int64_t>(chunk_bytes_ / 4096 * 4096, 64 << 10, 8 << 20);
  n_chunks_ = std::max<int64_t>(1, usable / chunk_bytes_);
}

double BandwidthMeter::ReadBytesPerSecond(uint64_t* word_sum) {
  struct alignas(64) Partial {
    uint64_t sum = 0;
  };
  std::vector<Partial> partial(static_cast<size_t>(pool_.n_threads()));
  const Clock::time_point start = Clock::now();
  pool_.ParallelFor(n_chunks_, [&](int64_t c, int thread) {
    partial[static_cast<size_t>(thread)].sum +=
        kernels_.read_sum(begin_ + c * chunk_bytes_, static_cast<size_t>(chunk_bytes_));
  });
  const double seconds = SecondsSince(start);
  uint64_t total = 0;
  for (const Partial& p : partial) total += p.sum;
  if (word_sum) *word_sum = total;
  return static_cast<double>(read_bytes()) / std::max(seconds, 1e-9);
}

}  // namespace ridge
