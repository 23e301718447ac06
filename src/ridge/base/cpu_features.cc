#include "ridge/base/cpu_features.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include "ridge/base/error.h"

namespace ridge {
namespace {

CpuFeatures Detect() {
  __builtin_cpu_init();
  CpuFeatures f;
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512vnni = __builtin_cpu_supports("avx512vnni");
  f.avx512bf16 = __builtin_cpu_supports("avx512bf16");
  f.gfni = __builtin_cpu_supports("gfni");
  // f16c, avx-vnni and AMX have no __builtin_cpu_supports name in g++ 12: read CPUID.
  unsigned eax, ebx, ecx, edx;
  __asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(1), "c"(0));
  f.f16c = (ecx >> 29) & 1u;
  const bool osxsave = (ecx >> 27) & 1u;
  // AMX counts only where the OS saves its tile state (XCR0 bits 17 and 18),
  // as Linux's /proc/cpuinfo flags do.
  unsigned xcr0 = 0, xcr0_high = 0;
  if (osxsave) __asm__ volatile("xgetbv" : "=a"(xcr0), "=d"(xcr0_high) : "c"(0));
  const bool os_tiles = (xcr0 & (3u << 17)) == (3u << 17);
  __asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(7), "c"(0));
  f.amx_bf16 = os_tiles && ((edx >> 22) & 1u);
  f.amx_tile = os_tiles && ((edx >> 24) & 1u);
  f.amx_int8 = os_tiles && ((edx >> 25) & 1u);
  __asm__ volatile("cpuid" : "=a"(eax), "=b"(ebx), "=c"(ecx), "=d"(edx) : "a"(7), "c"(1));
  f.avx_vnni = (eax >> 4) & 1u;
  // Linux (5.16 on) hands out the 8 KiB tile state per process on request;
  // without it the first tile instruction faults.
  constexpr long kArchReqXcompPerm = 0x1023;
  constexpr long kXfeatureXtiledata = 18;
  f.amx_permitted = f.amx_tile && syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  return f;
}

std::atomic<int> g_override{-1};

Isa IsaFromEnvironment(Isa hardware) {
  const char* env = std::getenv("RIDGE_ISA");
  if (!env || !*env) return hardware;
  Isa wanted = ParseIsa(env);
  if (static_cast<int>(wanted) > static_cast<int>(hardware))
    Fail("RIDGE_ISA={} but this CPU supports at most {}", env, IsaName(hardware));
  return wanted;
}

}  // namespace

const CpuFeatures& DetectedCpuFeatures() {
  static const CpuFeatures features = Detect();
  return features;
}

Isa HardwareIsa() {
  const CpuFeatures& f = DetectedCpuFeatures();
  // Every CPU with AVX-512 BF16 has GFNI but Intel's Cooper Lake, which runs avx2.
  if (f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512vnni && f.avx512bf16 && f.gfni && f.fma &&
      f.f16c)
    return f.amx_tile && f.amx_int8 && f.amx_permitted ? Isa::kAmx : Isa::kAvx512;
  if (f.avx2 && f.fma && f.f16c) return Isa::kAvx2;
  return Isa::kScalar;
}

std::vector<Isa> SupportedIsas() {
  std::vector<Isa> isas;
  for (int i = 0; i <= static_cast<int>(HardwareIsa()); ++i) isas.push_back(static_cast<Isa>(i));
  return isas;
}

Isa ActiveIsa() {
  int forced = g_override.load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<Isa>(forced);
  static const Isa from_env = IsaFromEnvironment(HardwareIsa());
  return from_env;
}

void SetIsaOverride(Isa isa) {
  if (static_cast<int>(isa) > static_cast<int>(HardwareIsa()))
    Fail("cannot force ISA {}: this CPU supports at most {}", IsaName(isa), IsaName(HardwareIsa()));
  g_override.store(static_cast<int>(isa));
}

void ClearIsaOverride() { g_override.store(-1); }

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
    case Isa::kAmx: return "amx";
  }
  return "?";
}

Isa ParseIsa(const std::string& name) {
  if (name == "scalar") return Isa::kScalar;
  if (name == "avx2") return Isa::kAvx2;
  if (name == "avx512") return Isa::kAvx512;
  if (name == "amx") return Isa::kAmx;
  Fail("unknown ISA '{}': expected scalar, avx2, avx512 or amx", name);
}

}  // namespace ridge
