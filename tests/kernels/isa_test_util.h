#pragma once
// What the small-kernel tests (ops_test.cc, attention_test.cc) share: every
// dispatch target in turn, random inputs, and the roundoff units their
// tolerances are written in.
#include <cstdint>
#include <random>
#include <vector>

#include "ridge/base/cpu_features.h"

namespace ridge::kernels::isa_test {

// u = 2⁻²⁴ (float's unit roundoff), and the vector expf's relative error bound
// (Cephes polynomial, within 2⁻²¹ of std::exp: Exp.VectorExpWithinStatedError).
constexpr double kU = 1.0 / (1 << 24);
constexpr double kExpRel = 1.0 / (1 << 21);

// Runs body(isa) once per dispatch target, with that target forced.
template <typename Body>
void ForEachIsa(Body body) {
  for (Isa isa : SupportedIsas()) {
    SetIsaOverride(isa);
    body(isa);
    ClearIsaOverride();
  }
}

// n floats uniform in [lo, hi).
inline std::vector<float> Random(std::mt19937& rng, int64_t n, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = dist(rng);
  return v;
}

}  // namespace ridge::kernels::isa_test
