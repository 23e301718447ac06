#pragma once
// The probe's inner loops, one set per ISA (probe_avx512.cc, probe_avx2.cc,
// scalar ones in probe_kernels.cc). Each compute kernel runs `iterations`
// rounds of kProbeChains independent accumulator chains and returns the sum of
// one lane of every accumulator, which is exact and known in advance:
//   FMA  acc = acc × one + one          → iterations per lane
//   BF16 acc += 1·1 + 1·1               → 2 × iterations per lane
//   int8 acc += 1·1 + 1·1 + 1·1 + 1·1   → 4 × iterations per lane
// so a test can prove every instruction ran (and the compiler kept them).
// `one` comes in at run time so that nothing can be folded away.
#include <cstddef>
#include <cstdint>

#include "ridge/base/cpu_features.h"

namespace ridge::probe {

constexpr int kProbeChains = 12;

struct ComputeKernel {
  const char* name = "none";   // "avx512 vdpbf16ps"
  double ops_per_iteration = 0;  // FLOPs (or int8 ops) per round of all chains
  double (*run)(int64_t iterations, float one) = nullptr;
};

struct IsaKernels {
  ComputeKernel fp32_fma;
  ComputeKernel bf16_dot;  // run == nullptr when the ISA has none
  ComputeKernel int8_dot;
  // Sum of the n_bytes / 8 little-endian uint64 words at `data` (n_bytes a
  // multiple of 64, data 64-byte aligned), wrapping modulo 2^64.
  uint64_t (*read_sum)(const uint8_t* data, size_t n_bytes) = nullptr;
};

IsaKernels ScalarProbeKernels();
IsaKernels Avx2ProbeKernels();    // call only if the CPU runs avx2
IsaKernels Avx512ProbeKernels();  // call only if the CPU runs avx512
IsaKernels AmxProbeKernels();     // call only if the CPU runs amx
// The set for `isa` (one of the above).
IsaKernels KernelsFor(Isa isa);

}  // namespace ridge::probe
