#pragma once
// Memory read bandwidth right now, of a given region: read once per call by
// every thread of the pool in large contiguous chunks.
//
// The host probe reads a buffer of its own and keeps the best of several
// passes. A benchmark on a shared host reads the very memory its model's
// weights sit in, right after each decode step: on the machine ridge was
// measured on, the bandwidth of one allocation differed from another's
// (~32 vs ~56 GB/s, the guest's memory backed by different host memory) and
// drifted from minute to minute, so neither a probe taken a minute earlier
// nor a buffer of its own is the roof a step ran under.
#include <cstdint>
#include <span>

#include "ridge/roofline/probe_kernels.h"

namespace ridge {

class ThreadPool;

class BandwidthMeter {
 public:
  // `region` must stay valid while the meter is used; reads cover its whole
  // 64-byte lines from its first 64-byte boundary, in whole chunks of at
  // least 64 KiB. Throws ridge::Error if that leaves less than 64 KiB.
  BandwidthMeter(ThreadPool& pool, std::span<const uint8_t> region);

  // Bytes per second of one pass over the region. The 64-bit little-endian
  // words read are summed (wrapping) into *word_sum if given, so a caller who
  // knows the contents can prove every byte was read.
  double ReadBytesPerSecond(uint64_t* word_sum = nullptr);
  int64_t read_bytes() const { return n_chunks_ * chunk_bytes_; }
  const uint8_t* begin() const { return begin_; }

 private:
  ThreadPool& pool_;
  probe::IsaKernels kernels_;
  const uint8_t* begin_ = nullptr;
  int64_t chunk_bytes_ = 0, n_chunks_ = 0;
};

}  // namespace ridge
