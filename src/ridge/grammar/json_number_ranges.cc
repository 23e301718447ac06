#include "ridge/grammar/json_number_ranges.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/grammar/gbnf_writer.h"

namespace ridge::grammar {
namespace {

std::string Alternatives(const std::vector<std::string>& alts) {
  if (alts.empty()) return "";
  if (alts.size() == 1) return alts[0];
  std::string out;
  for (const auto& a : alts) out += (out.empty() ? "" : " | ") + a;
  return "(" + out + ")";
}

std::string DigitClass(char lo, char hi) {
  return lo == hi ? GbnfLiteral(std::string(1, lo)) : GbnfCharClass(CodePointSet::Range(lo, hi));
}

std::string AnyDigits(size_t n) { return n == 0 ? "" : GbnfRepeat("[0-9]", n, n); }

std::string Concat(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + " " + b;
}

// Digit strings of equal length n between a and b (a <= b), leading zeros allowed.
std::string SameLength(const std::string& a, const std::string& b) {
  if (a.empty()) return "";
  if (a == b) return GbnfLiteral(a);
  const size_t n = a.size() - 1;
  const std::string a_rest = a.substr(1), b_rest = b.substr(1);
  if (a[0] == b[0]) return Concat(GbnfLiteral(a.substr(0, 1)), SameLength(a_rest, b_rest));
  const bool lower_full = a_rest == std::string(n, '0');
  const bool upper_full = b_rest == std::string(n, '9');
  std::vector<std::string> alts;
  if (!lower_full) alts.push_back(Concat(GbnfLiteral(a.substr(0, 1)), SameLength(a_rest, std::string(n, '9'))));
  const char mid_lo = lower_full ? a[0] : static_cast<char>(a[0] + 1);
  const char mid_hi = upper_full ? b[0] : static_cast<char>(b[0] - 1);
  if (mid_lo <= mid_hi) alts.push_back(Concat(DigitClass(mid_lo, mid_hi), AnyDigits(n)));
  if (!upper_full) alts.push_back(Concat(GbnfLiteral(b.substr(0, 1)), SameLength(std::string(n, '0'), b_rest)));
  return Alternatives(alts);
}

int64_t Pow10(size_t k) {
  int64_t p = 1;
  while (k--) p *= 10;
  return p;
}

// Non-negative integers in [a, b], without leading zeros.
std::string NonNegativeRange(int64_t a, int64_t b) {
  const std::string sa = std::to_string(a), sb = std::to_string(b);
  std::vector<std::string> alts;
  const size_t la = sa.size(), lb = sb.size();
  if (la == lb) return SameLength(sa, sb);
  alts.push_back(SameLength(sa, std::string(la, '9')));
  // Every length strictly between: [1-9] then any digits.
  if (lb > la + 1) alts.push_back(Concat("[1-9]", GbnfRepeat("[0-9]", la, lb - 2)));
  alts.push_back(SameLength(std::to_string(Pow10(lb - 1)), sb));
  return Alternatives(alts);
}

// An integral double (or ±inf) clamped to ±kMaxJsonInteger. (10^16 - 1 is not
// a double: the comparison is made on 10^16, then in integers.)
int64_t ClampToRange(double v) {
  if (v >= 1e16) return kMaxJsonInteger;
  if (v <= -1e16) return -kMaxJsonInteger;
  return std::clamp(static_cast<int64_t>(v), -kMaxJsonInteger, kMaxJsonInteger);
}

const std::string kFraction = "\".\" " + GbnfRepeat("[0-9]", 1, kMaxFractionDigits);

}  // namespace

bool IntegerBounds(const NumericBounds& b, int64_t* lo, int64_t* hi) {
  double l = -INFINITY, h = INFINITY;
  if (b.minimum) l = std::max(l, std::ceil(*b.minimum));
  if (b.exclusive_minimum) l = std::max(l, std::floor(*b.exclusive_minimum) + 1);
  if (b.maximum) h = std::min(h, std::floor(*b.maximum));
  if (b.exclusive_maximum) h = std::min(h, std::ceil(*b.exclusive_maximum) - 1);
  if (l > h || l > static_cast<double>(kMaxJsonInteger) || h < -static_cast<double>(kMaxJsonInteger)) return false;
  *lo = ClampToRange(l), *hi = ClampToRange(h);
  return true;
}

std::string IntegerRangeGbnf(int64_t lo, int64_t hi) {
  RIDGE_CHECK(-kMaxJsonInteger <= lo && lo <= hi && hi <= kMaxJsonInteger);
  std::vector<std::string> alts;
  if (lo < 0) alts.push_back("\"-\" " + GbnfGroup(NonNegativeRange(hi < 0 ? -hi : 1, -lo)));
  if (hi >= 0) alts.push_back(NonNegativeRange(std::max<int64_t>(lo, 0), hi));
  return Alternatives(alts);
}

std::string BoundedNumberGbnf(const NumericBounds& b) {
  std::vector<std::string> alts;
  int64_t lo = 0, hi = 0;
  if (IntegerBounds(b, &lo, &hi)) alts.push_back(IntegerRangeGbnf(lo, hi));

  const double inf = INFINITY;
  // Lower and upper bounds as one number each; `strict` when exclusive.
  double a = -inf, c = inf;
  bool a_strict = false, c_strict = false;
  if (b.minimum) a = *b.minimum;
  if (b.exclusive_minimum && *b.exclusive_minimum >= a) a = *b.exclusive_minimum, a_strict = true;
  if (b.maximum) c = *b.maximum;
  if (b.exclusive_maximum && *b.exclusive_maximum <= c) c = *b.exclusive_maximum, c_strict = true;

  // n.fff with n >= 0 lies in [n, n+1): needs n >= a (n > a if strict) and n + 1 <= c.
  const double n_lo = std::max(0.0, a_strict ? std::floor(a) + 1 : std::ceil(a));
  const double n_hi = std::floor(c) - 1;
  if (n_lo <= n_hi && n_lo <= static_cast<double>(kMaxJsonInteger))
    alts.push_back(GbnfGroup(NonNegativeRange(ClampToRange(n_lo), ClampToRange(n_hi))) + " " + kFraction);
  // -m.fff lies in (-(m+1), -m]: needs -(m+1) >= a and -m <= c (-m < c if strict).
  const double m_lo = std::max(0.0, c_strict ? std::floor(-c) + 1 : std::ceil(-c));
  const double m_hi = std::floor(-a) - 1;
  if (m_lo <= m_hi && m_lo <= static_cast<double>(kMaxJsonInteger))
    alts.push_back("\"-\" " + GbnfGroup(NonNegativeRange(ClampToRange(m_lo), ClampToRange(m_hi))) + " " + kFraction);
  // At an exclusive integral bound, the bound's own integer part takes a
  // fraction with a non-zero digit: exclusiveMinimum 0 allows 0.5, not 0.0.
  const std::string non_zero_fraction = "\".\" " + GbnfRepeat("[0-9]", 0, kMaxFractionDigits - 1) + " [1-9]";
  if (a_strict && a >= 0 && std::floor(a) == a && a + 1 <= c && a <= static_cast<double>(kMaxJsonInteger))
    alts.push_back(GbnfLiteral(std::to_string(ClampToRange(a))) + " " + non_zero_fraction);
  if (c_strict && c <= 0 && std::floor(c) == c && c - 1 >= a && -c <= static_cast<double>(kMaxJsonInteger))
    alts.push_back("\"-\" " + GbnfLiteral(std::to_string(ClampToRange(-c))) + " " + non_zero_fraction);
  return Alternatives(alts);
}

}  // namespace ridge::grammar
