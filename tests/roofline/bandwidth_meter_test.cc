#include "ridge/roofline/bandwidth_meter.h"

#include <gtest/gtest.h>

#include <vector>

#include "ridge/base/error.h"
#include "ridge/base/thread_pool.h"

namespace ridge {
namespace {

// Each call reads every word of the region's whole chunks exactly once (the
// sum of distinct words proves it) and gives a plausible rate; the read starts
// at the first 64-byte boundary and never runs past the region.
TEST(BandwidthMeter, EveryPassReadsEveryWordOnce) {
  std::vector<uint64_t> words((8 << 20) / 8 + 100);
  for (size_t i = 0; i < words.size(); ++i) words[i] = i * 2654435761u;
  const auto* bytes = reinterpret_cast<const uint8_t*>(words.data()) + 3;  // misaligned on purpose
  const size_t n_bytes = words.size() * 8 - 3;
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    BandwidthMeter meter(pool, {bytes, n_bytes});
    EXPECT_EQ(reinterpret_cast<uintptr_t>(meter.begin()) % 64, 0u);
    EXPECT_GE(meter.begin(), bytes);
    EXPECT_GT(meter.read_bytes(), 7 << 20);
    EXPECT_LE(meter.begin() + meter.read_bytes(), bytes + n_bytes);
    uint64_t expected = 0;
    const auto* first = reinterpret_cast<const uint64_t*>(meter.begin());
    for (int64_t i = 0; i < meter.read_bytes() / 8; ++i) expected += first[i];
    for (int pass = 0; pass < 3; ++pass) {
      uint64_t sum = 0;
      EXPECT_GT(meter.ReadBytesPerSecond(&sum), 1e8);
      EXPECT_EQ(sum, expected);
    }
  }
}

TEST(BandwidthMeter, RefusesARegionBelowOneChunk) {
  ThreadPool pool(1);
  std::vector<uint8_t> small(60 << 10);
  EXPECT_THROW(BandwidthMeter(pool, {small.data(), small.size()}), Error);
  EXPECT_THROW(BandwidthMeter(pool, {}), Error);
}

}  // namespace
}  // namespace ridge
