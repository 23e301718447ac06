#include "ridge/bench/random.h"

#include <cmath>
#include <limits>

#include "ridge/base/error.h"

namespace ridge::bench {

double BenchRng::Uniform01() {
  return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
}

double BenchRng::Normal() {
  if (has_spare_normal_) {
    has_spare_normal_ = false;
    return spare_normal_;
  }
  double u = 0, v = 0, s = 0;
  do {
    u = 2.0 * Uniform01() - 1.0;
    v = 2.0 * Uniform01() - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  const double factor = std::sqrt(-2.0 * std::log(s) / s);
  spare_normal_ = v * factor;
  has_spare_normal_ = true;
  return u * factor;
}

double BenchRng::Gamma(double shape, double scale) {
  if (!(shape > 0) || !std::isfinite(shape)) Fail("gamma distribution: shape must be finite and > 0, got {}", shape);
  if (!(scale > 0) || !std::isfinite(scale)) Fail("gamma distribution: scale must be finite and > 0, got {}", scale);
  if (shape < 1.0) {
    // Gamma(k) = Gamma(k + 1) · U^(1/k) (Marsaglia & Tsang, section 6).
    double u = 0;
    do u = Uniform01();
    while (u == 0.0);
    return Gamma(shape + 1.0, scale) * std::pow(u, 1.0 / shape);
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x = 0, v = 0;
    do {
      x = Normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = Uniform01();
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v * scale;
    if (u > 0.0 && std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v * scale;
  }
}

int64_t BenchRng::UniformInt(int64_t lo, int64_t hi) {
  if (lo > hi) Fail("uniform integer: empty range [{}, {}]", lo, hi);
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo);  // wraps correctly
  if (span == std::numeric_limits<uint64_t>::max()) return static_cast<int64_t>(engine_());
  const uint64_t n = span + 1;
  // Reject the top partial block so every value is equally likely.
  const uint64_t limit = std::numeric_limits<uint64_t>::max() - std::numeric_limits<uint64_t>::max() % n;
  uint64_t r = 0;
  do r = engine_();
  while (r >= limit);
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + r % n);
}

}  // namespace ridge::bench
