#pragma once
// Memory read bandwidth right now: a buffer far larger than the caches
// (in 2 MiB pages, first touched by the pool that reads it), read once per
// call by every thread of the pool in large contiguous chunks.
//
// The host probe takes the best of several passes. A benchmark on a shared
// host also pairs each measured repetition with a read just before and just
// after it: here the bandwidth drifted between 33 and 58 GB/s from one minute
// to the next (other tenants), so a probe taken a minute earlier is not the
// roof a repetition ran under.
#include <cstdint>
#include <memory>

#include "ridge/roofline/probe_kernels.h"

namespace ridge {

class ThreadPool;

class BandwidthMeter {
 public:
  // Throws ridge::Error if the buffer (requested_bytes, at least 1 MiB,
  // rounded down to whole chunks) cannot be allocated.
  BandwidthMeter(ThreadPool& pool, int64_t requested_bytes);
  ~BandwidthMeter();
  BandwidthMeter(const BandwidthMeter&) = delete;
  BandwidthMeter& operator=(const BandwidthMeter&) = delete;

  // Bytes per second of one pass over the buffer. Checks that every byte was
  // read (the sum of the words is known), so the read cannot be elided.
  double ReadBytesPerSecond();
  int64_t buffer_bytes() const { return n_chunks_ * chunk_bytes_; }

 private:
  ThreadPool& pool_;
  probe::IsaKernels kernels_;
  int64_t chunk_bytes_ = 0, n_chunks_ = 0;
  uint64_t expected_sum_ = 0;
  struct Buffer;
  std::unique_ptr<Buffer> buffer_;
};

}  // namespace ridge
