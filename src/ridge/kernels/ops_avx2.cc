// The small kernels (ops_simd_impl.h) on 8-float AVX2 (+ FMA, F16C) vectors.
#include <immintrin.h>

#include "ridge/kernels/ops_simd_impl.h"

namespace ridge::kernels::internal {
namespace {

struct V256 {
  using R = __m256;
  static constexpr int64_t kLanes = 8;

  // Lanes < n all ones (for maskload / maskstore and blends).
  static __m256i Mask(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static constexpr bool kBf16Dot = false;  // no BF16 dot on AVX2: BF16 keys take FP32 FMAs
  static R Zero() { return _mm256_setzero_ps(); }
  static R Set1(float v) { return _mm256_set1_ps(v); }
  static R Load(const float* p) { return _mm256_loadu_ps(p); }
  static R LoadPartial(const float* p, int64_t n) { return _mm256_maskload_ps(p, Mask(n)); }
  static void Store(float* p, R v) { _mm256_storeu_ps(p, v); }
  static void StorePartial(float* p, int64_t n, R v) { _mm256_maskstore_ps(p, Mask(n), v); }
  static R KeepFirst(R v, int64_t n) { return _mm256_and_ps(v, _mm256_castsi256_ps(Mask(n))); }
  static R Add(R a, R b) { return _mm256_add_ps(a, b); }
  static R Sub(R a, R b) { return _mm256_sub_ps(a, b); }
  static R Mul(R a, R b) { return _mm256_mul_ps(a, b); }
  static R Div(R a, R b) { return _mm256_div_ps(a, b); }
  static R Fma(R a, R b, R c) { return _mm256_fmadd_ps(a, b, c); }
  static R Max(R a, R b) { return _mm256_max_ps(a, b); }
  static R Min(R a, R b) { return _mm256_min_ps(a, b); }
  static R Abs(R v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }
  static R CopySign(R m, R s) {
    const R sign = _mm256_set1_ps(-0.0f);
    return _mm256_or_ps(_mm256_and_ps(sign, s), _mm256_andnot_ps(sign, m));
  }
  static R SelectBelow(R a, R t, R x, R y) { return _mm256_blendv_ps(y, x, _mm256_cmp_ps(a, t, _CMP_LT_OQ)); }
  static float SqrtScalar(float v) { return _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(v))); }
  static float ReduceAdd(R v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static float ReduceMax(R v) {
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
  static R SwapPairs(R v) { return _mm256_permute_ps(v, 0xb1); }

  // Lane i of ReduceLanes(v) = Σ of v[i], in stages (V512's ReducePair, ReduceQuad, ReduceQuads).
  static R ReducePair(R x, R y) { return _mm256_add_ps(_mm256_unpacklo_ps(x, y), _mm256_unpackhi_ps(x, y)); }
  static R ReduceQuad(R t0, R t1) {
    const __m256d x = _mm256_castps_pd(t0), y = _mm256_castps_pd(t1);
    return _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(x, y)), _mm256_castpd_ps(_mm256_unpackhi_pd(x, y)));
  }
  static R ReduceQuads(const R u[2]) {
    return _mm256_add_ps(_mm256_permute2f128_ps(u[0], u[1], 0x20), _mm256_permute2f128_ps(u[0], u[1], 0x31));
  }

  // Cephes' expf: 2^n · p(r). 2^(n−1) is built in the exponent field (times
  // 2p), so x is clamped to where n − 1 is a normal exponent; below −86.6 the
  // result is 0 (true value < 2.4e−38), above ln(FLT_MAX) ∞.
  static R Exp(R x) {
    const R lo = _mm256_set1_ps(-86.6f), hi = _mm256_set1_ps(88.7228391f);
    const R under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ), over = _mm256_cmp_ps(x, hi, _CMP_GT_OQ);
    x = _mm256_min_ps(hi, _mm256_max_ps(lo, x));  // NaN stays (second operand)
    const R n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    R r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    R p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(126)), 23);
    R result = _mm256_mul_ps(_mm256_add_ps(p, p), _mm256_castsi256_ps(e));
    result = _mm256_andnot_ps(under, result);
    return _mm256_blendv_ps(result, _mm256_set1_ps(__builtin_inff()), over);
  }

  static R LoadF16(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static __m128i LoadHalves(const uint8_t* p, int64_t n) {
    alignas(16) uint8_t buf[16] = {};
    std::memcpy(buf, p, static_cast<size_t>(n) * 2);
    return _mm_load_si128(reinterpret_cast<const __m128i*>(buf));
  }
  static R LoadF16Partial(const uint8_t* p, int64_t n) { return _mm256_cvtph_ps(LoadHalves(p, n)); }
  static R Bf16Bits(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
  static R LoadBf16(const uint8_t* p) { return Bf16Bits(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static R LoadBf16Partial(const uint8_t* p, int64_t n) { return Bf16Bits(LoadHalves(p, n)); }
  static R LoadQ8(const uint8_t* p) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
  }
  static float F16Scalar(uint16_t h) { return _cvtsh_ss(h); }

  static void StoreHalves(__m128i h, int64_t n, uint8_t* dst) {
    alignas(16) uint8_t buf[16];
    _mm_store_si128(reinterpret_cast<__m128i*>(buf), h);
    std::memcpy(dst, buf, static_cast<size_t>(n) * 2);
  }
  static void StoreF16(const float* x, int64_t n, uint8_t* dst) {
    StoreHalves(_mm256_cvtps_ph(LoadPartial(x, n), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), n, dst);
  }
  // F32ToBf16's rounding (nearest even; NaN stays NaN) on integers.
  // F32ToBf16's rounding (nearest even; NaN stays NaN) on integers: the bf16
  // bits in the low half of each 32-bit lane.
  static __m256i Bf16Rounded(R x) {
    const __m256i bits = _mm256_castps_si256(x);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    const __m256i rounded =
        _mm256_srli_epi32(_mm256_add_epi32(bits, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
    // |bits| > 0x7f800000 as signed compare is safe: both sides are below 2^31.
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff)),
                                           _mm256_set1_epi32(0x7f800000));
    return _mm256_blendv_epi8(rounded, quiet, nan);  // values < 2^16
  }
  static R RoundBf16(R x) { return _mm256_castsi256_ps(_mm256_slli_epi32(Bf16Rounded(x), 16)); }
  static void StoreBf16(const float* x, int64_t n, uint8_t* dst) {
    const __m256i h32 = Bf16Rounded(LoadPartial(x, n));
    const __m256i h16 = _mm256_permute4x64_epi64(_mm256_packus_epi32(h32, h32), 0x08);
    StoreHalves(_mm256_castsi256_si128(h16), n, dst);
  }
  // QuantizeRow's Q8_0: d = max|x| / 127 ignoring NaN, q = round half away
  // from zero of x / d, clamped to ±127 (NaN → −127).
  static void StoreQ8Block(const float* x, uint8_t* dst) {
    R v[4];
    R amax = Zero();
    const R sign = Set1(-0.0f);
    for (int i = 0; i < 4; ++i) {
      v[i] = Load(x + 8 * i);
      amax = _mm256_max_ps(_mm256_andnot_ps(sign, v[i]), amax);  // NaN lanes keep amax (second operand)
    }
    const float d = ReduceMax(amax) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t d16 = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    std::memcpy(dst, &d16, 2);
    __m256i q[4];
    for (int i = 0; i < 4; ++i) q[i] = _mm256_cvttps_epi32(RoundAwayClamp(_mm256_mul_ps(v[i], Set1(id))));
    const __m256i q16a = _mm256_packs_epi32(q[0], q[1]), q16b = _mm256_packs_epi32(q[2], q[3]);
    const __m256i q8 = _mm256_permutevar8x32_epi32(_mm256_packs_epi16(q16a, q16b),
                                                   _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 2), q8);
  }
  static R RoundAwayClamp(R v) {
    const R t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const R frac = _mm256_sub_ps(v, t);  // exact
    const R away = _mm256_cmp_ps(_mm256_andnot_ps(Set1(-0.0f), frac), Set1(0.5f), _CMP_GE_OQ);
    const R step = _mm256_or_ps(Set1(1.0f), _mm256_and_ps(v, Set1(-0.0f)));  // ±1 with v's sign
    const R r = _mm256_add_ps(t, _mm256_and_ps(away, step));
    return _mm256_min_ps(_mm256_max_ps(r, Set1(-127.0f)), Set1(127.0f));  // max: NaN → −127
  }
};

constexpr OpsKernels kOps{RmsNormImpl<V256>,        RotatePairsImpl<V256>, RotateHalvesImpl<V256>, SoftmaxImpl<V256>,
                          SoftmaxPartialImpl<V256>, SwiGluImpl<V256>,      GeGluImpl<V256>,        SwigluOaiImpl<V256>,
                          SoftCapImpl<V256>,        RowsScoresImpl<V256>,  RowsValuesImpl<V256>,   StoreKvImpl<V256>};

}  // namespace

const OpsKernels& Avx2Ops() { return kOps; }

}  // namespace ridge::kernels::internal
