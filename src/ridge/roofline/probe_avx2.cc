// AVX2 probe loops (compiled with the AVX2 flags; called only when the CPU
// runs avx2). AVX2 has no BF16 dot; its int8 dot is the vpmaddubsw (u8·s8
// pairs → s16) + vpmaddwd (pairs → s32) + vpaddd sequence of ggml's kernels.
#include <immintrin.h>

#include <initializer_list>

#include "ridge/roofline/probe_kernels.h"

namespace ridge::probe {
namespace {

constexpr int kInt8Chains = 8;

// 12 chains × 8 lanes × 2 FLOPs.
double Fp32Fma(int64_t iterations, float one) {
  const __m256 v = _mm256_set1_ps(one);
  __m256 acc[kProbeChains];
  for (auto& a : acc) a = _mm256_setzero_ps();
  for (auto& a : acc) __asm__ volatile("" : "+x"(a));  // opaque: no merging of equal chains
  for (int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kProbeChains; ++c) acc[c] = _mm256_fmadd_ps(acc[c], v, v);
  }
  double sum = 0;
  for (auto& a : acc) sum += _mm256_cvtss_f32(a);
  return sum;
}

// 8 chains × 32 u8·s8 products × 2 ops. The products do not depend on the
// accumulators, so a compiler would compute them once outside the loop: the
// sequence is written in assembly to keep every instruction in the loop.
double Int8Dot(int64_t iterations, float one) {
  const __m256i v = _mm256_set1_epi8(static_cast<char>(static_cast<int>(one)));
  const __m256i ones16 = _mm256_set1_epi16(1);
  __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  __m256i t0, t1, t2, t3;
  for (int64_t i = 0; i < iterations; ++i) {
    __asm__ volatile(
        "vpmaddubsw %[v], %[v], %[t0]\n\t"
        "vpmaddubsw %[v], %[v], %[t1]\n\t"
        "vpmaddubsw %[v], %[v], %[t2]\n\t"
        "vpmaddubsw %[v], %[v], %[t3]\n\t"
        "vpmaddwd %[o], %[t0], %[t0]\n\t"
        "vpmaddwd %[o], %[t1], %[t1]\n\t"
        "vpmaddwd %[o], %[t2], %[t2]\n\t"
        "vpmaddwd %[o], %[t3], %[t3]\n\t"
        "vpaddd %[t0], %[a0], %[a0]\n\t"
        "vpaddd %[t1], %[a1], %[a1]\n\t"
        "vpaddd %[t2], %[a2], %[a2]\n\t"
        "vpaddd %[t3], %[a3], %[a3]\n\t"
        "vpmaddubsw %[v], %[v], %[t0]\n\t"
        "vpmaddubsw %[v], %[v], %[t1]\n\t"
        "vpmaddubsw %[v], %[v], %[t2]\n\t"
        "vpmaddubsw %[v], %[v], %[t3]\n\t"
        "vpmaddwd %[o], %[t0], %[t0]\n\t"
        "vpmaddwd %[o], %[t1], %[t1]\n\t"
        "vpmaddwd %[o], %[t2], %[t2]\n\t"
        "vpmaddwd %[o], %[t3], %[t3]\n\t"
        "vpaddd %[t0], %[a4], %[a4]\n\t"
        "vpaddd %[t1], %[a5], %[a5]\n\t"
        "vpaddd %[t2], %[a6], %[a6]\n\t"
        "vpaddd %[t3], %[a7], %[a7]\n\t"
        : [a0] "+x"(a0), [a1] "+x"(a1), [a2] "+x"(a2), [a3] "+x"(a3), [a4] "+x"(a4), [a5] "+x"(a5),
          [a6] "+x"(a6), [a7] "+x"(a7), [t0] "=&x"(t0), [t1] "=&x"(t1), [t2] "=&x"(t2), [t3] "=&x"(t3)
        : [v] "x"(v), [o] "x"(ones16));
  }
  double sum = 0;
  for (__m256i a : {a0, a1, a2, a3, a4, a5, a6, a7}) sum += static_cast<double>(_mm256_extract_epi32(a, 0));
  // Keep the sum in the same units as the other kernels: 12 chains' worth.
  return sum * kProbeChains / kInt8Chains;
}

uint64_t ReadSum(const uint8_t* data, size_t n_bytes) {
  __m256i acc[8];
  for (auto& a : acc) a = _mm256_setzero_si256();
  const __m256i* p = reinterpret_cast<const __m256i*>(data);
  const size_t n_vectors = n_bytes / 32;
  size_t i = 0;
  for (; i + 8 <= n_vectors; i += 8) {
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) acc[k] = _mm256_add_epi64(acc[k], _mm256_load_si256(p + i + k));
  }
  for (; i < n_vectors; ++i) acc[0] = _mm256_add_epi64(acc[0], _mm256_load_si256(p + i));
  __m256i total = acc[0];
  for (int k = 1; k < 8; ++k) total = _mm256_add_epi64(total, acc[k]);
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), total);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

}  // namespace

IsaKernels Avx2ProbeKernels() {
  IsaKernels k;
  k.fp32_fma = {"avx2 vfmadd231ps", kProbeChains * 8 * 2.0, Fp32Fma};
  k.int8_dot = {"avx2 vpmaddubsw+vpmaddwd", kInt8Chains * 32 * 2.0, Int8Dot};
  k.read_sum = ReadSum;
  return k;
}

}  // namespace ridge::probe
