// Code-point ranges as UTF-8 byte-range sequences, checked against a brute
// force over every code point of ranges at the encoded-length boundaries.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ridge/grammar/utf8_ranges.h"
#include "ridge/tokenizer/utf8.h"

namespace ridge::grammar {
namespace {

bool Covered(const std::vector<Utf8Sequence>& seqs, const std::string& bytes) {
  for (const Utf8Sequence& s : seqs) {
    if (s.n_bytes != static_cast<int>(bytes.size())) continue;
    bool all = true;
    for (int i = 0; i < s.n_bytes; ++i) {
      const auto b = static_cast<uint8_t>(bytes[i]);
      all = all && b >= s.first[i] && b <= s.last[i];
    }
    if (all) return true;
  }
  return false;
}

TEST(Utf8RangesTest, ExactlyTheEncodingsOfTheRange) {
  const CodePointRange ranges[] = {{0, 0x7F}, {0x41, 0x5A}, {0x7E, 0x801}, {0x7FF, 0x10001},
                                   {0xD000, 0xE100}, {0xFFF0, 0x10FFFF}, {0x1F600, 0x1F64F}, {0x12345, 0x54321}};
  for (const CodePointRange& r : ranges) {
    const std::vector<Utf8Sequence> seqs = Utf8Sequences(r.first, r.last);
    // Every code point near each boundary and every 97th elsewhere: inside iff in range and not a surrogate.
    for (uint32_t cp = 0; cp <= kMaxCodePoint; cp += (cp % 0x10000 < 0x900 || cp % 0x10000 > 0xCF00) ? 1 : 97) {
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      std::string bytes;
      utf8::AppendCodepoint(cp, &bytes);
      EXPECT_EQ(Covered(seqs, bytes), cp >= r.first && cp <= r.last) << std::hex << "cp " << cp << " range " << r.first
                                                                      << "-" << r.last;
    }
    // Surrogate encodings (ED A0..BF xx) are never produced.
    EXPECT_FALSE(Covered(seqs, "\xED\xA0\x80"));
    EXPECT_FALSE(Covered(seqs, "\xED\xBF\xBF"));
  }
}

TEST(Utf8RangesTest, NormalizeMergesAndComplements) {
  const auto merged = NormalizeRanges({{10, 20}, {0, 5}, {6, 8}, {15, 30}}, false);
  ASSERT_EQ(merged.size(), 2u);
  EXPECT_EQ(merged[0].first, 0u);
  EXPECT_EQ(merged[0].last, 8u);
  EXPECT_EQ(merged[1].first, 10u);
  EXPECT_EQ(merged[1].last, 30u);
  const auto complement = NormalizeRanges({{10, 20}, {0, 5}}, true);
  ASSERT_EQ(complement.size(), 2u);
  EXPECT_EQ(complement[0].first, 6u);
  EXPECT_EQ(complement[0].last, 9u);
  EXPECT_EQ(complement[1].first, 21u);
  EXPECT_EQ(complement[1].last, kMaxCodePoint);
  EXPECT_TRUE(NormalizeRanges({{0, kMaxCodePoint}}, true).empty());
}

}  // namespace
}  // namespace ridge::grammar
