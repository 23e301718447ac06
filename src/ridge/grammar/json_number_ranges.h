#pragma once
// GBNF for JSON numbers within bounds (JSON Schema's minimum / maximum /
// exclusiveMinimum / exclusiveMaximum), built as a finite automaton over the
// decimal digits: [lo, hi] is split by digit count, and each count into the
// classic prefix ranges (e.g. 37..512 = 3[7-9] | [4-9][0-9] | [1-4][0-9][0-9]
// | 50[0-9] | 51[0-2]), so no integer outside the bounds can be written.
//
// Integers have at most kMaxIntegerDigits digits (an unbounded integer could
// otherwise keep a model writing digits forever), so every range is clamped
// to ±(10^16 - 1).
//
// Numbers (non-integers) with bounds are an under-approximation: no exponent,
// and a fractional part is allowed only on an integer part n whose whole unit
// interval [n, n+1) (or (-(n+1), -n]) lies within the bounds, and, at an
// exclusive integral bound b, on b itself with a non-zero digit (b.[0-9]*[1-9]).
// With minimum 0.5, 0.7 is refused but 1 and 1.25 are not; with
// exclusiveMinimum 0, 0.5 is allowed and 0.50 is not.
#include <cstdint>
#include <optional>
#include <string>

namespace ridge::grammar {

inline constexpr int kMaxIntegerDigits = 16;
inline constexpr int64_t kMaxJsonInteger = 9'999'999'999'999'999;  // 10^16 - 1
inline constexpr int kMaxFractionDigits = 16;

// Bounds as JSON Schema states them; nullopt = absent.
struct NumericBounds {
  std::optional<double> minimum, maximum, exclusive_minimum, exclusive_maximum;
  bool any() const { return minimum || maximum || exclusive_minimum || exclusive_maximum; }
};

// The integers the bounds allow, clamped to ±kMaxJsonInteger: [*lo, *hi].
// False when there are none.
bool IntegerBounds(const NumericBounds& bounds, int64_t* lo, int64_t* hi);

// GBNF expression for the integers in [lo, hi] written as JSON writes them
// (no leading zeros, no "-0"). Requires -kMaxJsonInteger <= lo <= hi <= kMaxJsonInteger.
std::string IntegerRangeGbnf(int64_t lo, int64_t hi);

// GBNF expression for numbers within the bounds (see the header comment), or
// "" when none can be written.
std::string BoundedNumberGbnf(const NumericBounds& bounds);

}  // namespace ridge::grammar
