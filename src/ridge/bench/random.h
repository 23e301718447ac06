#pragma once
// Seeded random numbers for the serving benchmark's dataset and arrival times.
// The engine is std::mt19937_64, whose output sequence the standard fixes; the
// transformations (uniform, normal, gamma, integers) are our own, so one seed
// gives the same prompts and the same schedule with any standard library
// (std::gamma_distribution and friends are implementation-defined).
#include <cstdint>
#include <random>

namespace ridge::bench {

class BenchRng {
 public:
  explicit BenchRng(uint64_t seed) : engine_(seed) {}

  // [0, 1), 53 random bits.
  double Uniform01();
  // Standard normal (Marsaglia's polar method; the spare value is kept).
  double Normal();
  // Gamma(shape k, scale θ): mean kθ, variance kθ². Marsaglia–Tsang for
  // k >= 1, boosted as Gamma(k + 1)·U^(1/k) for k < 1. Throws ridge::Error
  // unless shape and scale are finite and > 0.
  double Gamma(double shape, double scale);
  // Uniform over the integers lo..hi inclusive, unbiased (rejection).
  // Throws ridge::Error if lo > hi.
  int64_t UniformInt(int64_t lo, int64_t hi);

 private:
  std::mt19937_64 engine_;
  bool has_spare_normal_ = false;
  double spare_normal_ = 0;
};

}  // namespace ridge::bench
