#include "ridge/bench/arrivals.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "ridge/base/error.h"

namespace ridge::bench {

std::vector<double> ArrivalOffsets(int64_t n_requests, double rate_per_s, double burstiness, BenchRng& rng) {
  if (n_requests < 0) Fail("arrival schedule: negative request count {}", n_requests);
  if (!(rate_per_s > 0)) Fail("request rate must be > 0 requests/s (or inf), got {}", rate_per_s);
  if (!(burstiness > 0) || !std::isfinite(burstiness))
    Fail("burstiness must be a finite number > 0, got {}", burstiness);
  std::vector<double> offsets_s(static_cast<size_t>(n_requests), 0.0);
  if (std::isinf(rate_per_s)) return offsets_s;
  const double scale_s = 1.0 / (rate_per_s * burstiness);
  for (size_t i = 1; i < offsets_s.size(); ++i) offsets_s[i] = offsets_s[i - 1] + rng.Gamma(burstiness, scale_s);
  return offsets_s;
}

double ParseRequestRate(const std::string& text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "inf" || lower == "infinity" || lower == "+inf") return std::numeric_limits<double>::infinity();
  errno = 0;
  char* end = nullptr;
  const double rate = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(rate))
    Fail("--request-rate '{}': expected a number of requests per second or 'inf'", text);
  if (!(rate > 0)) Fail("--request-rate '{}': must be > 0 (use 'inf' to send everything at once)", text);
  return rate;
}

}  // namespace ridge::bench
