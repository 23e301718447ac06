// The small kernels (ops_simd_impl.h) on 16-float AVX-512 vectors.
#include "ridge/kernels/ops_simd_impl.h"
#include "ridge/kernels/simd_avx512.h"

namespace ridge::kernels::internal {
namespace {

struct V512 {
  using R = __m512;
  static constexpr int64_t kLanes = 16;

  static __mmask16 Mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static R Zero() { return _mm512_setzero_ps(); }
  static R Set1(float v) { return _mm512_set1_ps(v); }
  static R Load(const float* p) { return _mm512_loadu_ps(p); }
  static R LoadPartial(const float* p, int64_t n) { return _mm512_maskz_loadu_ps(Mask(n), p); }
  static void Store(float* p, R v) { _mm512_storeu_ps(p, v); }
  static void StorePartial(float* p, int64_t n, R v) { _mm512_mask_storeu_ps(p, Mask(n), v); }
  static R KeepFirst(R v, int64_t n) { return _mm512_maskz_mov_ps(Mask(n), v); }
  static R Add(R a, R b) { return _mm512_add_ps(a, b); }
  static R Sub(R a, R b) { return _mm512_sub_ps(a, b); }
  static R Mul(R a, R b) { return _mm512_mul_ps(a, b); }
  static R Div(R a, R b) { return _mm512_div_ps(a, b); }
  static R Fma(R a, R b, R c) { return _mm512_fmadd_ps(a, b, c); }
  static R Max(R a, R b) { return _mm512_max_ps(a, b); }
  static R Min(R a, R b) { return _mm512_min_ps(a, b); }
  static R Abs(R v) { return _mm512_abs_ps(v); }
  static R CopySign(R m, R s) {  // bits: (s & sign) | (m & ~sign)
    return _mm512_castsi512_ps(
        _mm512_ternarylogic_epi32(_mm512_set1_epi32(INT32_MIN), _mm512_castps_si512(s), _mm512_castps_si512(m), 0xca));
  }
  static R SelectBelow(R a, R t, R x, R y) { return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(a, t, _CMP_LT_OQ), y, x); }
  static float SqrtScalar(float v) { return _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(v))); }
  static float ReduceAdd(R v) { return _mm512_reduce_add_ps(v); }
  static float ReduceMax(R v) { return _mm512_reduce_max_ps(v); }
  static R SwapPairs(R v) { return _mm512_permute_ps(v, 0xb1); }

  // Lane i of ReduceLanes(v) = Σ of v[i]: pairwise unpack-and-add, then across
  // the 128-bit lanes. In stages, so a caller can reduce positions as it goes
  // (the same operations, the same bits): ReducePair(v[2i], v[2i+1]) = a[i],
  // ReduceQuad(a[2j], a[2j+1]) = b[j], ReduceQuads(b) = the result.
  static R ReducePair(R x, R y) { return _mm512_add_ps(_mm512_unpacklo_ps(x, y), _mm512_unpackhi_ps(x, y)); }
  static R ReduceQuad(R a0, R a1) {
    const __m512d x = _mm512_castps_pd(a0), y = _mm512_castps_pd(a1);
    return _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
  }
  static R ReduceQuads(const R b[4]) {
    // b[j], 128-bit lane L: partial sums of v[4j..4j+3] over lane L.
    const R c0 = _mm512_add_ps(_mm512_shuffle_f32x4(b[0], b[1], 0x88), _mm512_shuffle_f32x4(b[0], b[1], 0xdd));
    const R c1 = _mm512_add_ps(_mm512_shuffle_f32x4(b[2], b[3], 0x88), _mm512_shuffle_f32x4(b[2], b[3], 0xdd));
    return _mm512_add_ps(_mm512_shuffle_f32x4(c0, c1, 0x88), _mm512_shuffle_f32x4(c0, c1, 0xdd));
  }

  // Cephes' expf: 2^n · p(r), r = x − n·ln2 in two parts; vscalefps handles
  // overflow to ∞ and underflow to 0 (the clamps keep r finite).
  static R Exp(R x) {
    x = _mm512_max_ps(_mm512_set1_ps(-104.0f), x);  // NaN stays (second operand)
    x = _mm512_min_ps(_mm512_set1_ps(89.0f), x);
    const R n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    R r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    R p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
    return _mm512_scalef_ps(p, n);
  }

  static R LoadF16(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static R LoadF16Partial(const uint8_t* p, int64_t n) { return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(Mask(n), p)); }
  static R Bf16Bits(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
  static R LoadBf16(const uint8_t* p) { return Bf16Bits(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))); }
  static R LoadBf16Partial(const uint8_t* p, int64_t n) { return Bf16Bits(_mm256_maskz_loadu_epi16(Mask(n), p)); }
  // The BF16 dot (vdpbf16ps): a Pairs vector holds kLanes pairs of bf16, lane
  // j's low half from a[j] and its high half from b[j] (zero without b); lane
  // j of DotPairs(acc, x, pair) = acc[j] + x[j].high · pair.high + x[j].low ·
  // pair.low, each product exact (the hardware adds them in FP32).
  static constexpr bool kBf16Dot = true;
  using Pairs = __m512i;
  static Pairs LoadBf16Pairs(const uint8_t* a, const uint8_t* b, int64_t n) {
    const __m256i lo = n == kLanes ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a))
                                   : _mm256_maskz_loadu_epi16(Mask(n), a);
    if (b == nullptr) return _mm512_cvtepu16_epi32(lo);
    const __m256i hi = n == kLanes ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b))
                                   : _mm256_maskz_loadu_epi16(Mask(n), b);
    // Halves j of lo and hi (elements j and 16 + j of both) to elements 2j and 2j + 1.
    const __m512i interleave = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7,
                                                22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(interleave, _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1));
  }
  static R DotPairs(R acc, Pairs x, uint32_t pair) {
    const __m512i broadcast = _mm512_set1_epi32(static_cast<int>(pair));
    return _mm512_dpbf16_ps(acc, reinterpret_cast<__m512bh>(x), reinterpret_cast<__m512bh>(broadcast));
  }
  static R LoadQ8(const uint8_t* p) {
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  static float F16Scalar(uint16_t h) { return _cvtsh_ss(h); }

  static void StoreF16(const float* x, int64_t n, uint8_t* dst) {
    const __m256i h = _mm512_cvtps_ph(LoadPartial(x, n), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_mask_storeu_epi16(dst, Mask(n), h);
  }
  // F32ToBf16's rounding (nearest even; NaN stays NaN) on integers: the bf16
  // bits in the low half of each 32-bit lane.
  static __m512i Bf16Rounded(R x) {
    const __m512i bits = _mm512_castps_si512(x);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    const __m512i rounded =
        _mm512_srli_epi32(_mm512_add_epi32(bits, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
    const __m512i quiet = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff)),
                                                   _mm512_set1_epi32(0x7f800000));
    return _mm512_mask_mov_epi32(rounded, nan, quiet);
  }
  static R RoundBf16(R x) { return _mm512_castsi512_ps(_mm512_slli_epi32(Bf16Rounded(x), 16)); }
  static void StoreBf16(const float* x, int64_t n, uint8_t* dst) {
    _mm256_mask_storeu_epi16(dst, Mask(n), _mm512_cvtepi32_epi16(Bf16Rounded(LoadPartial(x, n))));
  }
  // QuantizeRow's Q8_0 (ggml's reference): d = max|x| / 127 ignoring NaN,
  // q = round half away from zero of x / d, clamped to ±127 (NaN → −127).
  static void StoreQ8Block(const float* x, uint8_t* dst) {
    const R lo = Load(x), hi = Load(x + 16);
    const R sign = _mm512_set1_ps(-0.0f);
    const R abs_lo = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(lo, lo, _CMP_ORD_Q), _mm512_andnot_ps(sign, lo));
    const R abs_hi = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(hi, hi, _CMP_ORD_Q), _mm512_andnot_ps(sign, hi));
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(abs_lo, abs_hi));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t d16 = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    std::memcpy(dst, &d16, 2);
    const __m128i q_lo = _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(RoundAwayClamp(_mm512_mul_ps(lo, Set1(id)))));
    const __m128i q_hi = _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(RoundAwayClamp(_mm512_mul_ps(hi, Set1(id)))));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 2), q_lo);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + 18), q_hi);
  }
  static R RoundAwayClamp(R v) {
    const R t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    const R frac = _mm512_sub_ps(v, t);  // exact
    const __mmask16 away = _mm512_cmp_ps_mask(_mm512_abs_ps(frac), Set1(0.5f), _CMP_GE_OQ);
    const R step = _mm512_or_ps(Set1(1.0f), _mm512_and_ps(v, Set1(-0.0f)));  // ±1 with v's sign
    const R r = _mm512_mask_add_ps(t, away, t, step);
    return _mm512_min_ps(_mm512_max_ps(r, Set1(-127.0f)), Set1(127.0f));  // max: NaN → −127
  }
};

constexpr OpsKernels kOps{RmsNormImpl<V512>,        RotatePairsImpl<V512>, RotateHalvesImpl<V512>, SoftmaxImpl<V512>,
                          SoftmaxPartialImpl<V512>, SwiGluImpl<V512>,      GeGluImpl<V512>,        SwigluOaiImpl<V512>,
                          SoftCapImpl<V512>,        RowsScoresImpl<V512>,  RowsValuesImpl<V512>,   StoreKvImpl<V512>};

}  // namespace

const OpsKernels& Avx512Ops() { return kOps; }

}  // namespace ridge::kernels::internal
