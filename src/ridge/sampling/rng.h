#pragma once
// The sampler's random numbers: std::mt19937_64 (its output sequence is fixed
// by the C++ standard) with our own conversion to [0, 1), so a seed gives the
// same draws with any standard library. std::uniform_real_distribution is not
// used on purpose: its algorithm is left to each implementation.
#include <cstdint>
#include <random>

namespace ridge::sampling {

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  // Uniform in [0, 1) with 53 random bits: the top 53 bits of one 64-bit draw.
  double Uniform() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }

  uint64_t Next() { return engine_(); }

 private:
  std::mt19937_64 engine_;
};

}  // namespace ridge::sampling
