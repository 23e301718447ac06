// Which instructions share the int8 dot product's execution pipes on this
// core. The tiles' ceilings follow from it: on a Zen 5 (2026-12-07) FMA,
// vmulps and vpmulld each take a vpdpbusd's slot and the rest (adds,
// conversions, logic, broadcasts and loads; up to one a dot) issues beside
// them, so a Q4_K 32-block (8 vpdpbusd a 16 rows and token, then a mul, an
// FMA and the mins' FNMA) can reach at most 8/11 of the int8 peak
// (docs/benchmarks.md, twenty-sixth section).
//
// BM_PipeShare/<isa>_<op>: a loop body of 12 independent dot instructions
// (avx512: vpdpbusd zmm into 12 accumulators; avx2: vpmaddubsw ymm, the
// AVX2 tiles' int8 step) with 8 independent instances of op interleaved,
// timed against the same body without them in alternate bursts on one
// thread. dot_slots_per_op = (t(with op) − t(without)) / t(without) × 12 / 8:
// 1.0 means op issues only where a dot could, 0 that it issues beside them
// (or less than 0: noise of a few hundredths). Written in assembly so that
// the compiler adds no register moves to the bodies.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace {

alignas(64) int32_t g_memory[16];

// Eight op instances (registers 12-19) between the first eight of the 12
// dots; the ops' sources are registers 30, 31 (zmm) or 14, 15 (ymm).
// avx512: the dots accumulate into zmm0-11 (12 chains of vpdpbusd). avx2:
// vpmaddubsw writes its destination without reading it, so its 12 dots take
// ymm0-3 in turn and the ops ymm4-11 (RIDGE_Y: 12-19 onto 4-11), the 16 ymm
// leaving no others.
#define RIDGE_INTERLEAVE8(D, O) D(0) O(12) D(1) O(13) D(2) O(14) D(3) O(15) D(4) O(16) D(5) O(17) D(6) O(18) D(7) O(19)
#define RIDGE_DOT512(i) "vpdpbusd %%zmm28, %%zmm29, %%zmm" #i "\n\t"
#define RIDGE_NONE(i)
#define RIDGE_BODY512(O) \
  RIDGE_INTERLEAVE8(RIDGE_DOT512, O) RIDGE_DOT512(8) RIDGE_DOT512(9) RIDGE_DOT512(10) RIDGE_DOT512(11)
#define RIDGE_CLOBBER512                                                                                               \
  "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", \
      "xmm13", "xmm14", "xmm15", "xmm16", "xmm17", "xmm18", "xmm19"

#define RIDGE_DOT256(i) "vpmaddubsw %%ymm14, %%ymm15, %%ymm" RIDGE_D_##i "\n\t"
#define RIDGE_D_0 "0"
#define RIDGE_D_1 "1"
#define RIDGE_D_2 "2"
#define RIDGE_D_3 "3"
#define RIDGE_D_4 "0"
#define RIDGE_D_5 "1"
#define RIDGE_D_6 "2"
#define RIDGE_D_7 "3"
#define RIDGE_BODY256(O) \
  RIDGE_INTERLEAVE8(RIDGE_DOT256, O) RIDGE_DOT256(0) RIDGE_DOT256(1) RIDGE_DOT256(2) RIDGE_DOT256(3)
#define RIDGE_CLOBBER256 \
  "memory", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11"

// The ops, on register r (12-19; avx2: RIDGE_Y).
#define RIDGE_Z(r) "%%zmm" #r
#define RIDGE_FMA512(r) "vfmadd231ps %%zmm30, %%zmm31, " RIDGE_Z(r) "\n\t"
#define RIDGE_MUL512(r) "vmulps %%zmm30, " RIDGE_Z(r) ", " RIDGE_Z(r) "\n\t"
#define RIDGE_PMULLD512(r) "vpmulld %%zmm30, " RIDGE_Z(r) ", " RIDGE_Z(r) "\n\t"
#define RIDGE_DPWSSD512(r) "vpdpwssd %%zmm30, %%zmm31, " RIDGE_Z(r) "\n\t"
#define RIDGE_CVT512(r) "vcvtdq2ps " RIDGE_Z(r) ", " RIDGE_Z(r) "\n\t"
#define RIDGE_ADDPS512(r) "vaddps %%zmm30, " RIDGE_Z(r) ", " RIDGE_Z(r) "\n\t"
#define RIDGE_PADDD512(r) "vpaddd %%zmm30, " RIDGE_Z(r) ", " RIDGE_Z(r) "\n\t"
#define RIDGE_SRAD512(r) "vpsrad $4, " RIDGE_Z(r) ", " RIDGE_Z(r) "\n\t"
#define RIDGE_TERNLOG512(r) "vpternlogd $0xe4, %%zmm30, %%zmm31, " RIDGE_Z(r) "\n\t"
#define RIDGE_BCAST512(r) "vpbroadcastd (%[m]), " RIDGE_Z(r) "\n\t"

#define RIDGE_Y(r) "%%ymm" RIDGE_Y_##r
#define RIDGE_Y_12 "4"
#define RIDGE_Y_13 "5"
#define RIDGE_Y_14 "6"
#define RIDGE_Y_15 "7"
#define RIDGE_Y_16 "8"
#define RIDGE_Y_17 "9"
#define RIDGE_Y_18 "10"
#define RIDGE_Y_19 "11"
#define RIDGE_FMA256(r) "vfmadd231ps %%ymm14, %%ymm15, " RIDGE_Y(r) "\n\t"
#define RIDGE_MUL256(r) "vmulps %%ymm14, " RIDGE_Y(r) ", " RIDGE_Y(r) "\n\t"
#define RIDGE_PMULLD256(r) "vpmulld %%ymm14, " RIDGE_Y(r) ", " RIDGE_Y(r) "\n\t"
#define RIDGE_PMADDWD256(r) "vpmaddwd %%ymm14, " RIDGE_Y(r) ", " RIDGE_Y(r) "\n\t"
#define RIDGE_CVT256(r) "vcvtdq2ps " RIDGE_Y(r) ", " RIDGE_Y(r) "\n\t"
#define RIDGE_PADDW256(r) "vpaddw %%ymm14, " RIDGE_Y(r) ", " RIDGE_Y(r) "\n\t"
#define RIDGE_PADDD256(r) "vpaddd %%ymm14, " RIDGE_Y(r) ", " RIDGE_Y(r) "\n\t"
#define RIDGE_BCAST256(r) "vpbroadcastd (%[m]), " RIDGE_Y(r) "\n\t"

constexpr int64_t kBodiesPerBurst = 4096;

using Burst = void (*)();

// isa: the bodies' target ("avx512f": they clobber xmm16-19, registers only
// an AVX-512 target has; "avx2").
#define RIDGE_BURST(name, isa, body, clobbers)                                                         \
  __attribute__((target(isa))) void name() {                                                           \
    for (int64_t k = 0; k < kBodiesPerBurst; ++k) asm volatile(body : : [m] "r"(g_memory) : clobbers); \
  }

RIDGE_BURST(Dots512, "avx512f", RIDGE_BODY512(RIDGE_NONE), RIDGE_CLOBBER512)
RIDGE_BURST(Fma512, "avx512f", RIDGE_BODY512(RIDGE_FMA512), RIDGE_CLOBBER512)
RIDGE_BURST(Mul512, "avx512f", RIDGE_BODY512(RIDGE_MUL512), RIDGE_CLOBBER512)
RIDGE_BURST(Pmulld512, "avx512f", RIDGE_BODY512(RIDGE_PMULLD512), RIDGE_CLOBBER512)
RIDGE_BURST(Dpwssd512, "avx512f", RIDGE_BODY512(RIDGE_DPWSSD512), RIDGE_CLOBBER512)
RIDGE_BURST(Cvt512, "avx512f", RIDGE_BODY512(RIDGE_CVT512), RIDGE_CLOBBER512)
RIDGE_BURST(Addps512, "avx512f", RIDGE_BODY512(RIDGE_ADDPS512), RIDGE_CLOBBER512)
RIDGE_BURST(Paddd512, "avx512f", RIDGE_BODY512(RIDGE_PADDD512), RIDGE_CLOBBER512)
RIDGE_BURST(Srad512, "avx512f", RIDGE_BODY512(RIDGE_SRAD512), RIDGE_CLOBBER512)
RIDGE_BURST(Ternlog512, "avx512f", RIDGE_BODY512(RIDGE_TERNLOG512), RIDGE_CLOBBER512)
RIDGE_BURST(Bcast512, "avx512f", RIDGE_BODY512(RIDGE_BCAST512), RIDGE_CLOBBER512)

RIDGE_BURST(Dots256, "avx2", RIDGE_BODY256(RIDGE_NONE), RIDGE_CLOBBER256)
RIDGE_BURST(Fma256, "avx2", RIDGE_BODY256(RIDGE_FMA256), RIDGE_CLOBBER256)
RIDGE_BURST(Mul256, "avx2", RIDGE_BODY256(RIDGE_MUL256), RIDGE_CLOBBER256)
RIDGE_BURST(Pmulld256, "avx2", RIDGE_BODY256(RIDGE_PMULLD256), RIDGE_CLOBBER256)
RIDGE_BURST(Pmaddwd256, "avx2", RIDGE_BODY256(RIDGE_PMADDWD256), RIDGE_CLOBBER256)
RIDGE_BURST(Cvt256, "avx2", RIDGE_BODY256(RIDGE_CVT256), RIDGE_CLOBBER256)
RIDGE_BURST(Paddw256, "avx2", RIDGE_BODY256(RIDGE_PADDW256), RIDGE_CLOBBER256)
RIDGE_BURST(Paddd256, "avx2", RIDGE_BODY256(RIDGE_PADDD256), RIDGE_CLOBBER256)
RIDGE_BURST(Bcast256, "avx2", RIDGE_BODY256(RIDGE_BCAST256), RIDGE_CLOBBER256)

double Seconds(Burst burst) {
  const auto t0 = std::chrono::steady_clock::now();
  burst();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Bursts of the dots alone and with the op alternated; the best of each.
void BM_PipeShare(benchmark::State& state, bool avx512, Burst with_op) {
  if (avx512 ? !__builtin_cpu_supports("avx512vnni") : !__builtin_cpu_supports("avx2")) {
    state.SkipWithError(avx512 ? "this CPU has no AVX-512 VNNI" : "this CPU has no AVX2");
    return;
  }
  const Burst dots = avx512 ? Dots512 : Dots256;
  double best_dots = 1e30, best_op = 1e30;
  for (auto _ : state) {
    best_dots = std::min(best_dots, Seconds(dots));
    best_op = std::min(best_op, Seconds(with_op));
  }
  state.counters["dot_slots_per_op"] = (best_op - best_dots) / best_dots * 12.0 / 8.0;
  state.counters["dots_G/s"] = 12.0 * kBodiesPerBurst / best_dots / 1e9;
}

BENCHMARK_CAPTURE(BM_PipeShare, avx512_vfmadd231ps, true, Fma512);
BENCHMARK_CAPTURE(BM_PipeShare, avx512_vmulps, true, Mul512);
BENCHMARK_CAPTURE(BM_PipeShare, avx512_vpmulld, true, Pmulld512);
BENCHMARK_CAPTURE(BM_PipeShare, avx512_vpdpwssd, true, Dpwssd512);
BENCHMARK_CAPTURE(BM_PipeShare, avx512_vcvtdq2ps, true, Cvt512);
BENCHMARK_CAPTURE(BM_PipeShare, avx512_vaddps, true, Addps512);
BENCHMARK_CAPTURE(BM_PipeShare, avx512_vpaddd, true, Paddd512);
BENCHMARK_CAPTURE(BM_PipeShare, avx512_vpsrad, true, Srad512);
BENCHMARK_CAPTURE(BM_PipeShare, avx512_vpternlogd, true, Ternlog512);
BENCHMARK_CAPTURE(BM_PipeShare, avx512_vpbroadcastd_mem, true, Bcast512);
BENCHMARK_CAPTURE(BM_PipeShare, avx2_vfmadd231ps, false, Fma256);
BENCHMARK_CAPTURE(BM_PipeShare, avx2_vmulps, false, Mul256);
BENCHMARK_CAPTURE(BM_PipeShare, avx2_vpmulld, false, Pmulld256);
BENCHMARK_CAPTURE(BM_PipeShare, avx2_vpmaddwd, false, Pmaddwd256);
BENCHMARK_CAPTURE(BM_PipeShare, avx2_vcvtdq2ps, false, Cvt256);
BENCHMARK_CAPTURE(BM_PipeShare, avx2_vpaddw, false, Paddw256);
BENCHMARK_CAPTURE(BM_PipeShare, avx2_vpaddd, false, Paddd256);
BENCHMARK_CAPTURE(BM_PipeShare, avx2_vpbroadcastd_mem, false, Bcast256);

}  // namespace
