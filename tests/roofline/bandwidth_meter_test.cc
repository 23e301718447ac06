#include "ridge/roofline/bandwidth_meter.h"

#include <gtest/gtest.h>

#include "ridge/base/error.h"
#include "ridge/base/thread_pool.h"

namespace ridge {
namespace {

// Each call reads the whole buffer (the meter checks the word sum itself) and
// gives a plausible rate; the buffer is whole chunks, never more than asked.
TEST(BandwidthMeter, EveryPassReadsTheWholeBuffer) {
  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    BandwidthMeter meter(pool, (8 << 20) + 12345);
    EXPECT_GT(meter.buffer_bytes(), 7 << 20);
    EXPECT_LE(meter.buffer_bytes(), (8 << 20) + 12345);
    for (int pass = 0; pass < 3; ++pass) EXPECT_GT(meter.ReadBytesPerSecond(), 1e8);
  }
}

TEST(BandwidthMeter, RefusesABufferBelowOneMebibyte) {
  ThreadPool pool(1);
  EXPECT_THROW(BandwidthMeter(pool, 1000), Error);
}

}  // namespace
}  // namespace ridge
