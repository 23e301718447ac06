#pragma once
// Which SIMD kernels this CPU can run. Detected once; RIDGE_ISA=scalar|avx2|avx512
// (or SetIsaOverride, e.g. from a --isa flag) forces a lower target for testing
// and benchmarking.
#include <string>
#include <vector>

namespace ridge {

enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2 };

struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512dq = false;
  bool avx512vnni = false;
  bool avx512bf16 = false;
  bool gfni = false;  // GF(2) affine byte maps (the avx512 target's Q5_K kernels)
  bool avx_vnni = false;
  // Intel AMX tiles and their int8 / BF16 products. No ridge kernel uses them:
  // where they exist, the machine's int8 and BF16 peaks are far above the
  // AVX-512 dots the probe measures, and `ridge cpu` says so.
  bool amx_tile = false;
  bool amx_int8 = false;
  bool amx_bf16 = false;
};

const CpuFeatures& DetectedCpuFeatures();

// The best target the hardware supports.
Isa HardwareIsa();
// Every target the hardware supports, lowest first.
std::vector<Isa> SupportedIsas();
// The target kernels use now: the override if set (clamped to the hardware), else HardwareIsa().
Isa ActiveIsa();
// Throws ridge::Error if the CPU cannot run `isa`.
void SetIsaOverride(Isa isa);
void ClearIsaOverride();

const char* IsaName(Isa isa);
// "scalar", "avx2", "avx512"; throws ridge::Error on anything else.
Isa ParseIsa(const std::string& name);

}  // namespace ridge
