#pragma once
// Which SIMD kernels this CPU can run. Detected once; RIDGE_ISA=scalar|avx2|avx512|amx
// (or SetIsaOverride, e.g. from a --isa flag) forces a lower target for testing
// and benchmarking. The targets are nested: amx is avx512 plus the AMX int8
// tiles for the kernels that have a tile path (Q8_0 prefill).
#include <string>
#include <vector>

namespace ridge {

enum class Isa { kScalar = 0, kAvx2 = 1, kAvx512 = 2, kAmx = 3 };

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
  // Intel AMX tiles and their int8 / BF16 products, where the OS saves the
  // tile state (as /proc/cpuinfo says).
  bool amx_tile = false;
  bool amx_int8 = false;
  bool amx_bf16 = false;
  // Linux granted this process the tile data state (arch_prctl
  // ARCH_REQ_XCOMP_PERM): only then may a thread use the tiles.
  bool amx_permitted = false;
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
// "scalar", "avx2", "avx512", "amx"; throws ridge::Error on anything else.
Isa ParseIsa(const std::string& name);

}  // namespace ridge
