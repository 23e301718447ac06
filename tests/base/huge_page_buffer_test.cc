#include "ridge/base/huge_page_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

namespace ridge {
namespace {

// The memory is zero, writable, 2 MiB aligned, and counted in huge pages no
// more than it holds; moving hands it over.
TEST(HugePageBuffer, ZeroFilledAlignedAndMovable) {
  for (bool prefault : {false, true}) {
    for (size_t n_bytes : {size_t{1}, size_t{4096} + 3, (size_t{5} << 20) + 17}) {
      HugePageBuffer b = HugePageBuffer::Allocate(n_bytes, prefault, "a test buffer");
      ASSERT_NE(b.data(), nullptr);
      EXPECT_EQ(b.size_bytes(), n_bytes);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % (size_t{2} << 20), 0u);
      uint64_t sum = 0;
      for (size_t i = 0; i < n_bytes; ++i) sum += b.data()[i];
      EXPECT_EQ(sum, 0u);
      b.data()[n_bytes - 1] = 7;
      EXPECT_LE(HugePageBytes(b.data(), b.size_bytes()), b.size_bytes());
      HugePageBuffer moved = std::move(b);
      EXPECT_EQ(moved.data()[n_bytes - 1], 7);
      EXPECT_EQ(b.data(), nullptr);  // NOLINT(bugprone-use-after-move): the state after a move is specified
      moved.MakeReadOnly();
      EXPECT_EQ(moved.data()[n_bytes - 1], 7);  // still readable
    }
  }
  EXPECT_EQ(HugePageBuffer::Allocate(0, true, "nothing").data(), nullptr);
  EXPECT_EQ(HugePageBytes(nullptr, 100), 0u);
}

}  // namespace
}  // namespace ridge
