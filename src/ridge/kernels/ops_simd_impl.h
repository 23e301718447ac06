#pragma once
// The small kernels (RMSNorm, RoPE rotation, softmax, SwiGLU, the entry points
// of attention over a paged KV head, KV stores) written once against a vector
// "traits" type V and instantiated by ops_avx2.cc (V = 8 floats) and
// ops_avx512.cc (16 floats). Attention's passes: attention_simd_impl.h and
// attention_keys_by_dim_impl.h.
//
// Include only from *_avx2.cc / *_avx512.cc. Everything here sits in an
// anonymous namespace, and V is a type local to the including file, so each
// ISA file gets its own private copy compiled with its own flags (no shared
// inline code for the linker to mix up). No <cmath> here either.
//
// V provides (kLanes floats per vector R):
//   Zero, Set1, Load, LoadPartial(p, n) (n < kLanes; zeros beyond, reads only
//   n elements), Store, StorePartial, KeepFirst(v, n) (lanes >= n zeroed),
//   Add, Sub, Mul, Div, Fma(a, b, c) = a·b + c, SqrtScalar, Max and Min
//   (each returns its second operand when either is NaN), Abs, CopySign(m, s)
//   (m's magnitude, s's sign), SelectBelow(a, t, x, y) (a < t ? x : y, lanewise;
//   y where a is NaN), ReduceAdd, ReduceMax,
//   ReducePair, ReduceQuad, ReduceQuads: Σ of each of kLanes vectors into one
//   vector's lanes, in three stages (see DotLanesRows), Exp (≤ 2 ulp,
//   0 below −104, ∞ above 89, NaN stays NaN), SwapPairs ([x1, x0, x3, x2, …]),
//   LoadF16 / LoadBf16 (kLanes halves → floats, exact; Partial forms too),
//   LoadQ8(p) (kLanes int8 → floats), F16Scalar (f16 bits → float),
//   StoreF16 / StoreBf16 / StoreQ8Block (bit-exact with QuantizeRow),
//   RoundBf16 (floats rounded as StoreBf16 rounds them), kBf16Dot (whether
//   the BF16 dot is there: then Pairs, LoadBf16Pairs, DotPairs, see V512).
#include <cstring>
#include <limits>
#include <vector>

#include "ridge/kernels/attention_keys_by_dim_impl.h"
#include "ridge/kernels/attention_values_by_dim_impl.h"
#include "ridge/kernels/ops_isa.h"

namespace ridge::kernels::internal {
namespace {

template <typename V>
void RmsNormImpl(const float* x, const float* weight, int64_t n, float eps, float* out) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  R acc0 = V::Zero(), acc1 = V::Zero();
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const R a = V::Load(x + i), b = V::Load(x + i + L);
    acc0 = V::Fma(a, a, acc0);
    acc1 = V::Fma(b, b, acc1);
  }
  for (; i < n; i += L) {
    const R a = n - i >= L ? V::Load(x + i) : V::LoadPartial(x + i, n - i);
    acc0 = V::Fma(a, a, acc0);
  }
  const float mean = V::ReduceAdd(V::Add(acc0, acc1)) / static_cast<float>(n);
  const R inv = V::Set1(1.0f / V::SqrtScalar(mean + eps));
  for (i = 0; i < n; i += L) {
    if (n - i >= L) {
      V::Store(out + i, V::Mul(V::Mul(V::Load(x + i), inv), V::Load(weight + i)));
    } else {
      const R r = V::Mul(V::Mul(V::LoadPartial(x + i, n - i), inv), V::LoadPartial(weight + i, n - i));
      V::StorePartial(out + i, n - i, r);
    }
  }
}

template <typename V>
void RotatePairsImpl(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dim, const float* cos,
                     const float* sin) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  // cos and ±sin spread over the pairs: out = x·[c, c] + swap(x)·[−s, s].
  constexpr int64_t kMaxDim = 512;
  alignas(64) float cc[kMaxDim], ss[kMaxDim];
  const int64_t dim = rope_dim < kMaxDim ? rope_dim : kMaxDim;
  for (int64_t i = 0; i < dim / 2; ++i) {
    cc[2 * i] = cc[2 * i + 1] = cos[i];
    ss[2 * i] = -sin[i];
    ss[2 * i + 1] = sin[i];
  }
  for (int64_t h = 0; h < n_heads; ++h) {
    float* head = x + h * head_dim;
    int64_t j = 0;
    for (; j + L <= dim; j += L) {
      const R v = V::Load(head + j);
      V::Store(head + j, V::Fma(v, V::Load(cc + j), V::Mul(V::SwapPairs(v), V::Load(ss + j))));
    }
    if (j < dim) {
      const int64_t m = dim - j;  // even
      const R v = V::LoadPartial(head + j, m);
      const R rotated = V::Fma(v, V::LoadPartial(cc + j, m), V::Mul(V::SwapPairs(v), V::LoadPartial(ss + j, m)));
      V::StorePartial(head + j, m, rotated);
    }
    for (int64_t i = dim / 2; i < rope_dim / 2; ++i) {  // beyond kMaxDim (no model has it): plain code
      const float a = head[2 * i], b = head[2 * i + 1];
      head[2 * i] = a * cos[i] - b * sin[i];
      head[2 * i + 1] = a * sin[i] + b * cos[i];
    }
  }
}

// RopeStyle::kHalves: pair i is (x[i], x[i + rope_dim / 2]) of each head.
template <typename V>
void RotateHalvesImpl(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dim, const float* cos,
                      const float* sin) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  const int64_t half = rope_dim / 2;
  // a' = a·c − b·s, b' = a·s + b·c over L pairs at a time.
  auto rotate = [](R a, R b, R c, R s, R* a_out, R* b_out) {
    *a_out = V::Fma(a, c, V::Mul(V::Sub(V::Zero(), b), s));
    *b_out = V::Fma(a, s, V::Mul(b, c));
  };
  for (int64_t h = 0; h < n_heads; ++h) {
    float* lo = x + h * head_dim;
    float* hi = lo + half;
    int64_t i = 0;
    for (; i + L <= half; i += L) {
      R a, b;
      rotate(V::Load(lo + i), V::Load(hi + i), V::Load(cos + i), V::Load(sin + i), &a, &b);
      V::Store(lo + i, a);
      V::Store(hi + i, b);
    }
    if (i < half) {
      const int64_t m = half - i;
      R a, b;
      rotate(V::LoadPartial(lo + i, m), V::LoadPartial(hi + i, m), V::LoadPartial(cos + i, m),
             V::LoadPartial(sin + i, m), &a, &b);
      V::StorePartial(lo + i, m, a);
      V::StorePartial(hi + i, m, b);
    }
  }
}

// max_i x[i] (x[0] with n <= 0 excluded by callers).
template <typename V>
float MaxOf(const float* x, int64_t n) {
  constexpr int64_t L = V::kLanes;
  typename V::R vmax = V::Set1(x[0]);
  int64_t i = 0;
  for (; i + L <= n; i += L) vmax = V::Max(V::Load(x + i), vmax);
  float max = V::ReduceMax(vmax);
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  return max;
}

// x[i] = exp(x[i] − max); returns Σ x[i] per lane (ReduceAdd gives the sum).
template <typename V>
typename V::R ExpShifted(float* x, int64_t n, float max) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  const R m = V::Set1(max);
  R sum = V::Zero();
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const R e = V::Exp(V::Sub(V::Load(x + i), m));
    V::Store(x + i, e);
    sum = V::Add(sum, e);
  }
  if (i < n) {
    const R e = V::Exp(V::Sub(V::LoadPartial(x + i, n - i), m));
    const R masked = V::KeepFirst(e, n - i);
    V::StorePartial(x + i, n - i, masked);
    sum = V::Add(sum, masked);
  }
  return sum;
}

// The sink (gpt-oss's learned logit, −∞ for none) takes part in the max and
// the sum only; its weight is dropped.
template <typename V>
void SoftmaxImpl(float* x, int64_t n, float sink) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  if (n <= 0) return;
  const float x_max = MaxOf<V>(x, n), max = sink > x_max ? sink : x_max;
  float sum = V::ReduceAdd(ExpShifted<V>(x, n, max));
  if (sink != -std::numeric_limits<float>::infinity()) sum += V::ReduceMax(V::Exp(V::Set1(sink - max)));
  const R inv = V::Set1(1.0f / sum);
  int64_t i = 0;
  for (; i + L <= n; i += L) V::Store(x + i, V::Mul(V::Load(x + i), inv));
  if (i < n) V::StorePartial(x + i, n - i, V::Mul(V::LoadPartial(x + i, n - i), inv));
}

template <typename V>
void SoftmaxPartialImpl(float* x, int64_t n, float* max, float* sum) {
  *max = MaxOf<V>(x, n);
  *sum = V::ReduceAdd(ExpShifted<V>(x, n, *max));
}

template <typename V>
void SwiGluImpl(const float* gate, const float* up, int64_t n, float* out) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  const R one = V::Set1(1.0f), zero = V::Zero();
  auto f = [&](R g, R u) { return V::Mul(V::Div(g, V::Add(one, V::Exp(V::Sub(zero, g)))), u); };
  int64_t i = 0;
  for (; i + L <= n; i += L) V::Store(out + i, f(V::Load(gate + i), V::Load(up + i)));
  if (i < n) V::StorePartial(out + i, n - i, f(V::LoadPartial(gate + i, n - i), V::LoadPartial(up + i, n - i)));
}

// gpt-oss's clamped SwiGLU: g = min(gate, limit), u = clamp(up, ±limit),
// out = g / (1 + exp(−alpha·g)) · (u + 1). A NaN gate or up becomes limit, as
// std::fmin / std::fmax make it in the scalar twin (V::Min and V::Max return
// their second operand when either is NaN).
template <typename V>
void SwigluOaiImpl(const float* gate, const float* up, int64_t n, float alpha, float limit, float* out) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  const R one = V::Set1(1.0f), neg_alpha = V::Set1(-alpha);
  const R high = V::Set1(limit), low = V::Set1(-limit);
  auto f = [&](R g, R u) {
    g = V::Min(g, high);
    u = V::Max(V::Min(u, high), low);
    return V::Mul(V::Div(g, V::Add(one, V::Exp(V::Mul(neg_alpha, g)))), V::Add(u, one));
  };
  int64_t i = 0;
  for (; i + L <= n; i += L) V::Store(out + i, f(V::Load(gate + i), V::Load(up + i)));
  if (i < n) V::StorePartial(out + i, n - i, f(V::LoadPartial(gate + i, n - i), V::LoadPartial(up + i, n - i)));
}

// tanh(x) within ~2⁻²¹ relative: Cephes' tanhf, an odd polynomial in x below
// |x| = 0.625 (where 1 − 2/(e^2|x| + 1) would lose bits to cancellation),
// that form above it (e^2|x| overflowing to ∞ gives 1), x's sign copied back;
// NaN stays NaN.
template <typename V>
typename V::R Tanh(typename V::R x) {
  using R = typename V::R;
  const R a = V::Abs(x), one = V::Set1(1.0f);
  const R large = V::Sub(one, V::Div(V::Set1(2.0f), V::Add(V::Exp(V::Add(a, a)), one)));
  const R z = V::Mul(a, a);
  R p = V::Set1(-5.70498872745e-3f);
  p = V::Fma(p, z, V::Set1(2.06390887954e-2f));
  p = V::Fma(p, z, V::Set1(-5.37397155531e-2f));
  p = V::Fma(p, z, V::Set1(1.33314422036e-1f));
  p = V::Fma(p, z, V::Set1(-3.33332819422e-1f));
  const R small = V::Fma(V::Mul(p, z), a, a);
  return V::CopySign(V::SelectBelow(a, V::Set1(0.625f), small, large), x);
}

template <typename V>
void SoftCapImpl(float* x, int64_t n, float cap) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  const R c = V::Set1(cap);
  auto f = [&](R v) { return V::Mul(c, Tanh<V>(V::Div(v, c))); };
  int64_t i = 0;
  for (; i + L <= n; i += L) V::Store(x + i, f(V::Load(x + i)));
  if (i < n) V::StorePartial(x + i, n - i, f(V::LoadPartial(x + i, n - i)));
}

// gelu_tanh(g) = g · ½(1 + tanh(u)) = g / (1 + exp(−2u)), u = √(2/π)·(g + 0.044715·g³).
template <typename V>
void GeGluImpl(const float* gate, const float* up, int64_t n, float* out) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  const R one = V::Set1(1.0f), zero = V::Zero();
  const R two_c = V::Set1(2.0f * 0.7978845608f), cubic = V::Set1(0.044715f);
  auto f = [&](R g, R u) {
    const R two_arg = V::Mul(two_c, V::Fma(V::Mul(cubic, V::Mul(g, g)), g, g));  // 2u
    return V::Mul(V::Div(g, V::Add(one, V::Exp(V::Sub(zero, two_arg)))), u);
  };
  int64_t i = 0;
  for (; i + L <= n; i += L) V::Store(out + i, f(V::Load(gate + i), V::Load(up + i)));
  if (i < n) V::StorePartial(out + i, n - i, f(V::LoadPartial(gate + i, n - i), V::LoadPartial(up + i, n - i)));
}

// ---- attention entry points ----------------------------------------------

// Calls f(std::integral_constant-like tag) for the KV type, compile-time.
template <GgmlType kType>
struct KvTypeTag {
  static constexpr GgmlType value = kType;
};

template <typename F>
void WithKvType(GgmlType type, F f) {
  switch (type) {
    case GgmlType::kF32: return f(KvTypeTag<GgmlType::kF32>{});
    case GgmlType::kF16: return f(KvTypeTag<GgmlType::kF16>{});
    case GgmlType::kBF16: return f(KvTypeTag<GgmlType::kBF16>{});
    default: return f(KvTypeTag<GgmlType::kQ8_0>{});
  }
}

// x[0, n) rounded to BF16 (nearest even; AttendHead's contract for BF16 keys
// and values): into `rounded` as the floats they now are, and/or into `pairs`
// as bf16 pairs, ⌈n / 2⌉ of them (the BF16 dot's operand; the high half past
// an odd n is 0). Both from x: no load waits on a store just made.
template <typename V>
void RoundRowToBf16(const float* x, int64_t n, float* rounded, uint32_t* pairs) {
  constexpr int64_t L = V::kLanes;
  auto* halves = reinterpret_cast<uint8_t*>(pairs);
  for (int64_t c = 0; c < n; c += L) {
    const int64_t m = n - c < L ? n - c : L;
    if (pairs != nullptr) V::StoreBf16(x + c, m, halves + 2 * c);
    if (rounded == nullptr) continue;
    if (m == L) {
      V::Store(rounded + c, V::RoundBf16(V::Load(x + c)));
    } else {
      V::StorePartial(rounded + c, m, V::RoundBf16(V::LoadPartial(x + c, m)));
    }
  }
  if (pairs != nullptr && n % 2 == 1) {
    const uint16_t zero = 0;
    std::memcpy(halves + 2 * n, &zero, 2);
  }
}

// BF16 keys: each row's q rounded (RoundRowToBf16), as floats (rounded[r],
// the rows to use) and as bf16 pairs, ⌈head_dim / 2⌉ a row, returned.
template <typename V>
const uint32_t* RoundQueriesToBf16(const AttentionRow* rows, int64_t n_rows, int64_t head_dim,
                                   AttentionRow* rounded) {
  thread_local std::vector<uint32_t> pairs;
  thread_local std::vector<float> floats;
  const int64_t n_pairs = (head_dim + 1) / 2;
  pairs.resize(static_cast<size_t>(n_rows * n_pairs));
  floats.resize(static_cast<size_t>(n_rows * head_dim));
  for (int64_t r = 0; r < n_rows; ++r) {
    RoundRowToBf16<V>(rows[r].q, head_dim, floats.data() + r * head_dim, pairs.data() + r * n_pairs);
    rounded[r] = rows[r];
    rounded[r].q = floats.data() + r * head_dim;
  }
  return pairs.data();
}

template <typename V>
bool RowsScoresImpl(const AttentionRow* rows, int64_t n_rows, int64_t head_dim, const KvHeadView& k, float scale,
                    float* scores, int64_t scores_stride) {
  if (!KvTypeSupported(k.type, head_dim) || n_rows > kMaxAttentionRows) return false;
  AttentionRow rounded[kMaxAttentionRows];
  const uint32_t* q_pairs = nullptr;
  if (k.type == GgmlType::kBF16) {
    q_pairs = RoundQueriesToBf16<V>(rows, n_rows, head_dim, rounded);
    rows = rounded;
  }
  if (k.dim_stride_bytes != 0) {
    auto by_dim = [&](auto tag) {
      RowsScoresByDim<V, decltype(tag)::value>(rows, n_rows, head_dim, k, q_pairs, scale, scores, scores_stride);
    };
    switch (k.type) {
      case GgmlType::kF32: by_dim(KvTypeTag<GgmlType::kF32>{}); break;
      case GgmlType::kF16: by_dim(KvTypeTag<GgmlType::kF16>{}); break;
      case GgmlType::kBF16: by_dim(KvTypeTag<GgmlType::kBF16>{}); break;
      default: return false;  // Q8_0 keys are never laid out by dimension
    }
    return true;
  }
  WithKvType(k.type, [&](auto tag) {
    RowsScores<V, decltype(tag)::value>(rows, n_rows, head_dim, k, scale, scores, scores_stride);
  });
  return true;
}

template <typename V>
bool RowsValuesImpl(const AttentionRow* rows, int64_t n_rows, const float* weights, int64_t scores_stride,
                    const KvHeadView& v, int64_t head_dim) {
  if (!KvTypeSupported(v.type, head_dim) || n_rows > kMaxAttentionRows) return false;
  const bool by_dim = v.dim_stride_bytes != 0;
  if (by_dim && v.type == GgmlType::kQ8_0) return false;  // Q8_0 values are never laid out by dimension
  if (v.type == GgmlType::kBF16) {  // the weights rounded to BF16 first (AttendHead's contract)
    int64_t longest = 0;
    for (int64_t r = 0; r < n_rows; ++r) longest = rows[r].n_positions > longest ? rows[r].n_positions : longest;
    if constexpr (V::kBf16Dot) {
      if (!by_dim) {
        thread_local std::vector<uint32_t> pairs;
        const int64_t stride = (longest + 1) / 2;
        pairs.resize(static_cast<size_t>(n_rows * stride));
        for (int64_t r = 0; r < n_rows; ++r)
          RoundRowToBf16<V>(weights + r * scores_stride, rows[r].n_positions, nullptr, pairs.data() + r * stride);
        RowsValues<V, GgmlType::kBF16>(rows, n_rows, pairs.data(), stride, v, head_dim);
        return true;
      }
    }
    thread_local std::vector<float> floats;
    floats.resize(static_cast<size_t>(n_rows * longest));
    for (int64_t r = 0; r < n_rows; ++r)
      RoundRowToBf16<V>(weights + r * scores_stride, rows[r].n_positions, floats.data() + r * longest, nullptr);
    if (by_dim) {
      RowsValuesByDim<V, GgmlType::kBF16>(rows, n_rows, floats.data(), longest, v, head_dim);
    } else {
      RowsValues<V, GgmlType::kBF16>(rows, n_rows, floats.data(), longest, v, head_dim);
    }
    return true;
  }
  WithKvType(v.type, [&](auto tag) {
    constexpr GgmlType kType = decltype(tag)::value;
    if constexpr (kType != GgmlType::kQ8_0) {
      if (by_dim) return RowsValuesByDim<V, kType>(rows, n_rows, weights, scores_stride, v, head_dim);
    }
    RowsValues<V, kType>(rows, n_rows, weights, scores_stride, v, head_dim);
  });
  return true;
}

// ---- KV stores -------------------------------------------------------------

template <typename V>
bool StoreKvImpl(const float* x, int64_t head_dim, GgmlType type, uint8_t* dst) {
  constexpr int64_t L = V::kLanes;
  switch (type) {
    case GgmlType::kF32:
      std::memcpy(dst, x, static_cast<size_t>(head_dim) * 4);
      return true;
    case GgmlType::kF16:
    case GgmlType::kBF16: {
      const bool f16 = type == GgmlType::kF16;
      for (int64_t c = 0; c < head_dim; c += L) {
        const int64_t n = head_dim - c < L ? head_dim - c : L;
        if (f16) {
          V::StoreF16(x + c, n, dst + 2 * c);
        } else {
          V::StoreBf16(x + c, n, dst + 2 * c);
        }
      }
      return true;
    }
    case GgmlType::kQ8_0:
      if (head_dim % 32 != 0) return false;
      for (int64_t b = 0; b < head_dim / 32; ++b)
        V::StoreQ8Block(x + 32 * b, dst + b * static_cast<int64_t>(sizeof(BlockQ8_0)));
      return true;
    default: return false;
  }
}

}  // namespace
}  // namespace ridge::kernels::internal
