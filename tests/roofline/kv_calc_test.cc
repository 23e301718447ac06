#include "ridge/roofline/kv_calc.h"

#include <gtest/gtest.h>

#include "ridge/base/error.h"
#include "ridge/kv/kv_formula.h"
#include "ridge/roofline/units.h"

namespace ridge {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The reference's worked example (inference-basics.md §2).
TEST(KvCalc, ReferenceWorkedExample) {
  const KvShape mha{32, 32, 32, 128};
  const KvSizing s = SizeKv(mha, KvElementBytes(GgmlType::kF16), 4096, 50, 80 * kGiB);
  EXPECT_EQ(s.bytes_per_token, 524288.0);
  EXPECT_EQ(FormatCount(s.bytes_per_token), "524,288");
  EXPECT_EQ(s.bytes_per_request, 2 * kGiB);
  EXPECT_EQ(s.bytes_for_batch, 100 * kGiB);
  EXPECT_EQ(FormatBytes(s.bytes_for_batch), "100.00 GiB");
  // More than an 80 GB GPU: only 40 such requests fit.
  EXPECT_EQ(*s.max_requests, 40);
  EXPECT_EQ(*s.max_tokens, 40 * 4096);

  // 32 query heads sharing 8 KV heads: a quarter of the cache.
  const KvShape gqa{32, 32, 8, 128};
  const KvSizing q = SizeKv(gqa, 2.0, 4096, 50);
  EXPECT_EQ(q.bytes_per_token, s.bytes_per_token / 4);
  EXPECT_EQ(q.bytes_for_batch, 25 * kGiB);
  EXPECT_FALSE(q.max_requests.has_value());
}

TEST(KvCalc, UsesTheSharedFormula) {
  const KvShape shape{22, 32, 4, 64};  // tinyllama
  EXPECT_EQ(SizeKv(shape, 2.0, 1, 1).bytes_per_token, KvBytesPerToken(22, 4, 64, 2.0));
  EXPECT_EQ(SizeKv(shape, 2.0, 1, 1).bytes_per_token, 22528.0);  // 2 × 22 × 4 × 64 × 2
}

TEST(KvCalc, ElementTypes) {
  EXPECT_EQ(KvElementBytes(GgmlType::kF32), 4.0);
  EXPECT_EQ(KvElementBytes(GgmlType::kF16), 2.0);
  EXPECT_EQ(KvElementBytes(GgmlType::kBF16), 2.0);
  EXPECT_EQ(KvElementBytes(GgmlType::kQ8_0), 34.0 / 32.0);
  EXPECT_THROW(KvElementBytes(GgmlType::kQ4_0), Error);
}

TEST(KvCalc, AttentionVariantsSideBySide) {
  // MHA model: MHA (its own), GQA-8, MQA.
  auto v = AttentionVariants({32, 32, 32, 128}, 2.0, 4096, 1);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[0].label, "MHA");
  EXPECT_TRUE(v[0].is_model);
  EXPECT_EQ(v[1].label, "GQA-8");
  EXPECT_EQ(v[1].sizing.bytes_per_token, v[0].sizing.bytes_per_token / 4);
  EXPECT_EQ(v[2].label, "MQA");
  EXPECT_EQ(v[2].sizing.bytes_per_token, v[0].sizing.bytes_per_token / 32);
  // GQA model: its own grouping is the middle row.
  v = AttentionVariants({22, 32, 4, 64}, 2.0, 2048, 8, 1 * kGiB);
  ASSERT_EQ(v.size(), 3u);
  EXPECT_EQ(v[1].label, "GQA-4");
  EXPECT_TRUE(v[1].is_model);
  EXPECT_FALSE(v[0].is_model);
  EXPECT_EQ(*v[1].sizing.max_requests, static_cast<int64_t>(kGiB / (22528.0 * 2048)));
  EXPECT_THROW(AttentionVariants({32, 0, 8, 128}, 2.0, 1, 1), Error);   // query heads unknown
  EXPECT_THROW(AttentionVariants({32, 32, 5, 128}, 2.0, 1, 1), Error);  // 5 does not divide 32
}

TEST(KvCalc, RejectsBadSizes) {
  EXPECT_THROW(SizeKv({0, 32, 32, 128}, 2.0, 1, 1), Error);
  EXPECT_THROW(SizeKv({32, 32, 32, 128}, 2.0, 0, 1), Error);
  EXPECT_THROW(SizeKv({32, 32, 32, 128}, 2.0, 1, 0), Error);
  EXPECT_THROW(SizeKv({32, 32, 32, 128}, 2.0, 1, 1, -5.0), Error);
  EXPECT_EQ(*SizeKv({32, 32, 32, 128}, 2.0, 4096, 1, 0.0).max_requests, 0);
}

TEST(Units, FormatsAndParses) {
  EXPECT_EQ(FormatCount(0), "0");
  EXPECT_EQ(FormatCount(999), "999");
  EXPECT_EQ(FormatCount(1000), "1,000");
  EXPECT_EQ(FormatCount(107374182400.0), "107,374,182,400");
  EXPECT_EQ(FormatCount(-1234567), "-1,234,567");
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(524288), "512.00 KiB");
  EXPECT_EQ(FormatBytes(2 * kGiB), "2.00 GiB");
  EXPECT_EQ(FormatSi(3.35e12, "B/s"), "3.35 TB/s");
  EXPECT_EQ(FormatSi(989e12, "FLOP/s"), "989.0 TFLOP/s");
  EXPECT_EQ(FormatSeconds(0.0123), "12.30 ms");
  EXPECT_EQ(ParseByteSize("80GB"), 80e9);
  EXPECT_EQ(ParseByteSize("80 GiB"), 80 * kGiB);
  EXPECT_EQ(ParseByteSize("80g"), 80 * kGiB);
  EXPECT_EQ(ParseByteSize("1.5TB"), 1.5e12);
  EXPECT_EQ(ParseByteSize("512MiB"), 512.0 * 1024 * 1024);
  EXPECT_EQ(ParseByteSize("123456"), 123456.0);
  for (const char* bad : {"", "GB", "80XB", "-1GB", "1e30GB", "nan", "12 34"}) EXPECT_THROW(ParseByteSize(bad), Error) << bad;
}

}  // namespace
}  // namespace ridge
