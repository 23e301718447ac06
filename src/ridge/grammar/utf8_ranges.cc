#include "ridge/grammar/utf8_ranges.h"

#include <algorithm>

#include "ridge/base/error.h"
#include "ridge/tokenizer/utf8.h"

namespace ridge::grammar {
namespace {

constexpr uint32_t kSurrogateFirst = 0xD800;
constexpr uint32_t kSurrogateLast = 0xDFFF;
// Largest code point of each encoded length (1 to 4 bytes).
constexpr uint32_t kMaxOfLength[4] = {0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};

int EncodedLength(uint32_t cp) {
  for (int n = 0; n < 4; ++n) {
    if (cp <= kMaxOfLength[n]) return n + 1;
  }
  RIDGE_CHECK(false);
}

// [first, last] lies within one encoded length and contains no surrogate.
void SplitSameLength(uint32_t first, uint32_t last, std::vector<Utf8Sequence>* out) {
  const int n = EncodedLength(first);
  // Split until, for every continuation suffix, either the whole suffix range
  // is covered or the prefixes are equal: then each byte varies alone.
  for (int i = 1; i < n; ++i) {
    const uint32_t suffix_mask = (uint32_t{1} << (6 * i)) - 1;
    if ((first & ~suffix_mask) != (last & ~suffix_mask)) {
      if ((first & suffix_mask) != 0) {
        SplitSameLength(first, first | suffix_mask, out);
        SplitSameLength((first | suffix_mask) + 1, last, out);
        return;
      }
      if ((last & suffix_mask) != suffix_mask) {
        SplitSameLength(first, (last & ~suffix_mask) - 1, out);
        SplitSameLength(last & ~suffix_mask, last, out);
        return;
      }
    }
  }
  std::string lo, hi;
  utf8::AppendCodepoint(first, &lo);
  utf8::AppendCodepoint(last, &hi);
  Utf8Sequence seq;
  seq.n_bytes = n;
  for (int i = 0; i < n; ++i) {
    seq.first[i] = static_cast<uint8_t>(lo[i]);
    seq.last[i] = static_cast<uint8_t>(hi[i]);
  }
  out->push_back(seq);
}

}  // namespace

std::vector<Utf8Sequence> Utf8Sequences(uint32_t first, uint32_t last) {
  RIDGE_CHECK(first <= last && last <= kMaxCodePoint);
  std::vector<Utf8Sequence> out;
  // Cut out the surrogates, then cut at each encoded-length boundary.
  std::vector<CodePointRange> pieces;
  if (first < kSurrogateFirst) pieces.push_back({first, std::min(last, kSurrogateFirst - 1)});
  if (last > kSurrogateLast) pieces.push_back({std::max(first, kSurrogateLast + 1), last});
  for (CodePointRange piece : pieces) {
    uint32_t lo = piece.first;
    while (lo <= piece.last) {
      const uint32_t hi = std::min(piece.last, kMaxOfLength[EncodedLength(lo) - 1]);
      SplitSameLength(lo, hi, &out);
      lo = hi + 1;
    }
  }
  return out;
}

std::vector<CodePointRange> NormalizeRanges(std::vector<CodePointRange> ranges, bool negate) {
  std::sort(ranges.begin(), ranges.end(),
            [](const CodePointRange& a, const CodePointRange& b) { return a.first < b.first; });
  std::vector<CodePointRange> merged;
  for (const CodePointRange& r : ranges) {
    if (!merged.empty() && r.first <= merged.back().last + 1) {
      merged.back().last = std::max(merged.back().last, r.last);
    } else {
      merged.push_back(r);
    }
  }
  if (!negate) return merged;
  std::vector<CodePointRange> complement;
  uint32_t next = 0;
  for (const CodePointRange& r : merged) {
    if (r.first > next) complement.push_back({next, r.first - 1});
    next = r.last + 1;
  }
  if (next <= kMaxCodePoint) complement.push_back({next, kMaxCodePoint});
  return complement;
}

}  // namespace ridge::grammar
