// ridge cpu: the SIMD features detected and the kernel target in use.
#include <cstdio>

#include "ridge/base/cpu_features.h"
#include "ridge/base/thread_pool.h"
#include "ridge/command.h"

namespace ridge::app {
namespace {

CommandRegistration kCpu{{"cpu", "Show the CPU features ridge detected and the kernel target it uses",
  [](CLI::App&) -> std::function<int()> {
    return [] {
      const CpuFeatures& f = DetectedCpuFeatures();
      std::printf("threads      %d\n", HardwareThreads());
      std::printf("avx2 %d  fma %d  f16c %d\n", f.avx2, f.fma, f.f16c);
      std::printf("avx512 f %d bw %d vl %d dq %d vnni %d bf16 %d  gfni %d  avx-vnni %d\n", f.avx512f, f.avx512bw,
                  f.avx512vl, f.avx512dq, f.avx512vnni, f.avx512bf16, f.gfni, f.avx_vnni);
      std::printf("amx tile %d int8 %d bf16 %d\n", f.amx_tile, f.amx_int8, f.amx_bf16);
      std::printf("kernel target: %s (hardware best: %s)\n", IsaName(ActiveIsa()), IsaName(HardwareIsa()));
      if (f.amx_tile) std::printf("amx tiles permitted by the OS: %d\n", f.amx_permitted);
      if (ActiveIsa() == Isa::kAmx) {
        std::printf("note: Q8_0 prefill (32 tokens on) runs on the AMX int8 tiles and `ridge roofline --probe` "
                    "measures their int8 peak; BF16 stays the AVX-512 dot's (no ridge kernel uses AMX BF16)\n");
      } else if (f.amx_tile && (f.amx_int8 || f.amx_bf16)) {
        std::printf("note: the %s target uses none of this CPU's AMX tiles, so `ridge roofline --probe` measures "
                    "the vector dots' int8 and BF16 peaks, not AMX's (far higher), and every %% of roofline is "
                    "against those\n", IsaName(ActiveIsa()));
      }
      return 0;
    };
  }}};

}  // namespace
}  // namespace ridge::app
