#include "ridge/roofline/units.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "ridge/base/error.h"

namespace ridge {

std::string FormatCount(double n) {
  if (!std::isfinite(n)) return fmt::format("{}", n);
  const bool negative = n < 0;
  std::string digits = fmt::format("{:.0f}", std::fabs(n));
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return negative ? "-" + out : out;
}

std::string FormatBytes(double n_bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = n_bytes;
  int unit = 0;
  while (std::fabs(v) >= 1024.0 && unit < 5) {
    v /= 1024.0;
    ++unit;
  }
  if (unit == 0) return fmt::format("{:.0f} B", v);
  return fmt::format("{:.2f} {}", v, kUnits[unit]);
}

std::string FormatSi(double value, const std::string& unit) {
  static const char* kPrefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  double v = value;
  int prefix = 0;
  while (std::fabs(v) >= 1000.0 && prefix < 6) {
    v /= 1000.0;
    ++prefix;
  }
  const int decimals = std::fabs(v) >= 100 ? 1 : 2;
  return fmt::format("{:.{}f} {}{}", v, decimals, kPrefixes[prefix], unit);
}

std::string FormatSeconds(double seconds) {
  const double s = std::fabs(seconds);
  if (s < 1e-3) return fmt::format("{:.1f} µs", seconds * 1e6);
  if (s < 1.0) return fmt::format("{:.2f} ms", seconds * 1e3);
  return fmt::format("{:.3f} s", seconds);
}

double ParseByteSize(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  const char* start = text.c_str() + i;
  errno = 0;
  char* end = nullptr;
  const double number = std::strtod(start, &end);
  if (end == start || errno == ERANGE || !std::isfinite(number))
    Fail("size '{}': expected a number with an optional unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", text);
  std::string unit(end);
  unit.erase(std::remove_if(unit.begin(), unit.end(), [](unsigned char c) { return std::isspace(c); }), unit.end());
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::tolower(c); });
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "kb") scale = 1e3;
  else if (unit == "mb") scale = 1e6;
  else if (unit == "gb") scale = 1e9;
  else if (unit == "tb") scale = 1e12;
  else if (unit == "k" || unit == "kib") scale = 1024.0;
  else if (unit == "m" || unit == "mib") scale = 1024.0 * 1024.0;
  else if (unit == "g" || unit == "gib") scale = 1024.0 * 1024.0 * 1024.0;
  else if (unit == "t" || unit == "tib") scale = 1024.0 * 1024.0 * 1024.0 * 1024.0;
  else Fail("size '{}': unknown unit '{}' (B, KB, MB, GB, TB decimal; KiB, MiB, GiB, TiB or K, M, G, T binary)", text, unit);
  if (number < 0) Fail("size '{}' is negative", text);
  const double bytes = number * scale;
  if (!std::isfinite(bytes) || bytes > 1e18) Fail("size '{}' is too large", text);
  return bytes;
}

}  // namespace ridge
