#pragma once
// Human-readable quantities for the roofline and KV reports, and the parser
// for sizes given on the command line.
#include <cstdint>
#include <string>

namespace ridge {

// "524,288" (thousands separators; rounds to the nearest integer).
std::string FormatCount(double n);
// Binary units: "512.00 KiB", "2.00 GiB", "100.00 GiB"; plain "B" under 1 KiB.
std::string FormatBytes(double n_bytes);
// Decimal SI with a unit suffix: FormatSi(3.35e12, "B/s") → "3.35 TB/s".
std::string FormatSi(double value, const std::string& unit);
// Seconds as "812 µs", "12.3 ms", "1.25 s".
std::string FormatSeconds(double seconds);

// "80GB" (decimal: 80e9), "80GiB" or "80G" (binary), "512MiB", "1.5TB",
// "123456" (bytes); case-insensitive, optional space before the unit.
// Throws ridge::Error for anything else, a negative size or an overflow.
double ParseByteSize(const std::string& text);

}  // namespace ridge
