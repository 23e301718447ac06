// Baseline (x86-64 SSE2) probe loops, for CPUs without AVX2 or when
// RIDGE_ISA=scalar: what the compiler makes of plain C++.
#include "ridge/roofline/probe_kernels.h"

namespace ridge::probe {
namespace {

double Fp32MulAdd(int64_t iterations, float one) {
  float acc[kProbeChains] = {};
  // Opaque starting values: otherwise the compiler sees twelve equal chains and keeps one.
  for (float& a : acc) __asm__ volatile("" : "+x"(a));
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kProbeChains; ++c) acc[c] = acc[c] * one + one;
  }
  double sum = 0;
  for (float a : acc) sum += a;
  return sum;
}

uint64_t ReadSum(const uint8_t* data, size_t n_bytes) {
  const uint64_t* p = reinterpret_cast<const uint64_t*>(data);
  const size_t n_words = n_bytes / 8;
  uint64_t acc[8] = {};
  for (size_t i = 0; i + 8 <= n_words; i += 8)
    for (int k = 0; k < 8; ++k) acc[k] += p[i + k];
  uint64_t total = 0;
  for (uint64_t a : acc) total += a;
  return total;
}

}  // namespace

IsaKernels ScalarProbeKernels() {
  IsaKernels k;
  k.fp32_fma = {"baseline mul+add (compiler, SSE)", kProbeChains * 2.0, Fp32MulAdd};
  k.read_sum = ReadSum;
  return k;
}

IsaKernels KernelsFor(Isa isa) {
  switch (isa) {
    case Isa::kAmx: return AmxProbeKernels();
    case Isa::kAvx512: return Avx512ProbeKernels();
    case Isa::kAvx2: return Avx2ProbeKernels();
    case Isa::kScalar: break;
  }
  return ScalarProbeKernels();
}

}  // namespace ridge::probe
