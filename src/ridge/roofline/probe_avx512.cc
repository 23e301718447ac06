// AVX-512 probe loops (compiled with the AVX-512 flags; called only when
// the CPU runs avx512, which includes VNNI and BF16 in ridge's definition).
#include <immintrin.h>

#include "ridge/roofline/probe_kernels.h"

namespace ridge::probe {
namespace {

// 12 chains × 16 lanes × 2 FLOPs.
double Fp32Fma(int64_t iterations, float one) {
  const __m512 v = _mm512_set1_ps(one);
  __m512 acc[kProbeChains];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (auto& a : acc) __asm__ volatile("" : "+v"(a));  // opaque: no merging of equal chains
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kProbeChains; ++c) acc[c] = _mm512_fmadd_ps(acc[c], v, v);
  }
  double sum = 0;
  for (auto& a : acc) sum += _mm512_cvtss_f32(a);
  return sum;
}

// 12 chains × 16 FP32 lanes × (2 products + 2 sums).
double Bf16Dot(int64_t iterations, float one) {
  const __m512 f = _mm512_set1_ps(one);
  const __m512bh v = _mm512_cvtne2ps_pbh(f, f);
  __m512 acc[kProbeChains];
  for (auto& a : acc) a = _mm512_setzero_ps();
  for (auto& a : acc) __asm__ volatile("" : "+v"(a));  // opaque: no merging of equal chains
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kProbeChains; ++c) acc[c] = _mm512_dpbf16_ps(acc[c], v, v);
  }
  double sum = 0;
  for (auto& a : acc) sum += _mm512_cvtss_f32(a);
  return sum;
}

// 12 chains × 16 int32 lanes × 4 u8·s8 products × 2 ops.
double Int8Dot(int64_t iterations, float one) {
  const __m512i v = _mm512_set1_epi8(static_cast<char>(static_cast<int>(one)));
  __m512i acc[kProbeChains];
  for (auto& a : acc) a = _mm512_setzero_si512();
  for (auto& a : acc) __asm__ volatile("" : "+v"(a));
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kProbeChains; ++c) acc[c] = _mm512_dpbusd_epi32(acc[c], v, v);
  }
  double sum = 0;
  alignas(64) int32_t lanes[16];
  for (auto& a : acc) {
    _mm512_store_si512(lanes, a);
    sum += static_cast<double>(lanes[0]);
  }
  return sum;
}

uint64_t ReadSum(const uint8_t* data, size_t n_bytes) {
  __m512i acc[8];
  for (auto& a : acc) a = _mm512_setzero_si512();
  const __m512i* p = reinterpret_cast<const __m512i*>(data);
  const size_t n_vectors = n_bytes / 64;
  size_t i = 0;
  for (; i + 8 <= n_vectors; i += 8) {
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) acc[k] = _mm512_add_epi64(acc[k], _mm512_load_si512(p + i + k));
  }
  for (; i < n_vectors; ++i) acc[0] = _mm512_add_epi64(acc[0], _mm512_load_si512(p + i));
  __m512i total = acc[0];
  for (int k = 1; k < 8; ++k) total = _mm512_add_epi64(total, acc[k]);
  alignas(64) uint64_t lanes[8];
  _mm512_store_si512(lanes, total);
  uint64_t sum = 0;
  for (uint64_t lane : lanes) sum += lane;
  return sum;
}

}  // namespace

IsaKernels Avx512ProbeKernels() {
  IsaKernels k;
  k.fp32_fma = {"avx512 vfmadd231ps", kProbeChains * 16 * 2.0, Fp32Fma};
  k.bf16_dot = {"avx512 vdpbf16ps", kProbeChains * 16 * 4.0, Bf16Dot};
  k.int8_dot = {"avx512 vpdpbusd", kProbeChains * 16 * 4 * 2.0, Int8Dot};
  k.read_sum = ReadSum;
  return k;
}

}  // namespace ridge::probe
