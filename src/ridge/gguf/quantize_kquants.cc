// Reference K-quant and IQ4_XS quantizers, written after the algorithms of
// ggml-quants.c (quantize_row_q*_K_ref, quantize_row_iq4_xs_ref): a scale
// (and, for the types with mins, an offset) is searched per sub-block to
// minimise a weighted squared or absolute error, then the sub-block scales
// are themselves quantized against one f16 super-block scale and the codes
// recomputed with the scales as stored.
//
// Results follow ggml's searches, not necessarily its exact bytes (rounding
// ties, floating-point order).
#include "ridge/gguf/quantize_kquants.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "ridge/base/half.h"
#include "ridge/gguf/ggml_type.h"

namespace ridge::kquants {
namespace {

// Below this a group is all zeros (ggml's GROUP_MAX_EPS).
constexpr float kGroupMaxEps = 1e-15f;

// Round to nearest (ties to even) for |v| < 2²², then clamp to [lo, hi].
// Infinite or NaN inputs give some value in [lo, hi], never UB.
int RoundClamp(float v, int lo, int hi) {
  const float shifted = v + 12582912.0f;  // 1.5·2²³: the integer lands in the low mantissa bits
  int32_t bits;
  std::memcpy(&bits, &shifted, 4);
  const int r = (bits & 0x007fffff) - 0x00400000;
  return std::clamp(r, lo, hi);
}

template <typename Block>
void StoreBlock(const Block& b, uint8_t* dst, int64_t i) {
  std::memcpy(dst + i * static_cast<int64_t>(sizeof(Block)), &b, sizeof(Block));
}

// The element of largest magnitude, with its sign.
float SignedMaxAbs(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  return max;
}

// Codes q in [0, n_max] with x ≈ scale·q − offset (offset ≥ 0), searched over
// n_steps candidate scales around n_max/(max − min) by weighted least squares
// (ggml's make_qkx2_quants). Returns scale, writes the offset.
float AffineScaleSearch(int n, int n_max, const float* x, const float* weights, uint8_t* codes, float* offset,
                        float r_min, float r_delta, int n_steps, bool abs_error) {
  float min = *std::min_element(x, x + n), max = *std::max_element(x, x + n);
  float sum_w = 0.0f, sum_x = 0.0f;
  for (int i = 0; i < n; ++i) {
    sum_w += weights[i];
    sum_x += weights[i] * x[i];
  }
  min = std::min(min, 0.0f);
  if (!(max > min)) {  // constant (or NaN) group
    std::fill(codes, codes + n, 0);
    *offset = -min;
    return 0.0f;
  }
  auto error = [&](float scale, float m, const uint8_t* q) {
    float total = 0.0f;
    for (int i = 0; i < n; ++i) {
      const float diff = scale * q[i] + m - x[i];
      total += weights[i] * (abs_error ? std::fabs(diff) : diff * diff);
    }
    return total;
  };
  float inv_scale = n_max / (max - min);
  float scale = 1.0f / inv_scale;
  for (int i = 0; i < n; ++i) codes[i] = static_cast<uint8_t>(RoundClamp(inv_scale * (x[i] - min), 0, n_max));
  float best_error = error(scale, min, codes);
  uint8_t trial[32];
  for (int step = 0; step <= n_steps; ++step) {
    inv_scale = (r_min + r_delta * static_cast<float>(step) + static_cast<float>(n_max)) / (max - min);
    float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = RoundClamp(inv_scale * (x[i] - min), 0, n_max);
      trial[i] = static_cast<uint8_t>(l);
      sum_l += weights[i] * l;
      sum_l2 += weights[i] * l * l;
      sum_xl += weights[i] * l * x[i];
    }
    const float det = sum_w * sum_l2 - sum_l * sum_l;
    if (!(det > 0.0f)) continue;
    float this_scale = (sum_w * sum_xl - sum_x * sum_l) / det;
    float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / det;
    if (this_min > 0.0f) {  // offsets only ever lower the codes' range: refit the scale alone
      this_min = 0.0f;
      this_scale = sum_xl / sum_l2;
    }
    const float this_error = error(this_scale, this_min, trial);
    if (this_error < best_error) {
      std::copy(trial, trial + n, codes);
      best_error = this_error;
      scale = this_scale;
      min = this_min;
    }
  }
  *offset = -min;
  return scale;
}

// Signed codes q in [−n_max, n_max − 1] stored as q + n_max, x ≈ scale·q,
// weights x² (ggml's make_qx_quants with rmse_type 1): the scale that
// maximises (Σw·x·q)²/Σw·q² over 19 candidate inverse scales.
float SymmetricScaleSearch(int n, int n_max, const float* x, uint8_t* codes) {
  const float max = SignedMaxAbs(x, n);
  std::fill(codes, codes + n, static_cast<uint8_t>(n_max));
  if (!(std::fabs(max) >= kGroupMaxEps)) return 0.0f;
  float best_scale = 0.0f, best = 0.0f;
  for (int step = 0; step <= 18; ++step) {  // step 9 is the plain n_max/max
    const float inv_scale = -(static_cast<float>(n_max) + 0.1f * static_cast<float>(step - 9)) / max;
    float sum_lx = 0.0f, sum_l2 = 0.0f;
    for (int i = 0; i < n; ++i) {
      const int l = RoundClamp(inv_scale * x[i], -n_max, n_max - 1);
      const float w = x[i] * x[i];
      sum_lx += w * x[i] * l;
      sum_l2 += w * l * l;
    }
    const bool first = step == 0;
    if (sum_l2 > 0.0f && (first || sum_lx * sum_lx > best * sum_l2)) {
      best_scale = sum_lx / sum_l2;
      best = best_scale * sum_lx;
      for (int i = 0; i < n; ++i) codes[i] = static_cast<uint8_t>(n_max + RoundClamp(inv_scale * x[i], -n_max, n_max - 1));
    }
  }
  return best_scale;
}

// Signed codes in [−n_max, n_max − 1] (stored + n_max) by the plain scale
// n_max/max, then coordinate descent on the codes with weights x² (ggml's
// make_q3_quants with do_rmse).
float SymmetricCodeDescent(int n, int n_max, const float* x, uint8_t* codes) {
  const float max = SignedMaxAbs(x, n);
  if (!(std::fabs(max) >= kGroupMaxEps)) {
    std::fill(codes, codes + n, static_cast<uint8_t>(n_max));
    return 0.0f;
  }
  const float inv_scale = -static_cast<float>(n_max) / max;
  int l[32];
  float sum_lx = 0.0f, sum_l2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    l[i] = RoundClamp(inv_scale * x[i], -n_max, n_max - 1);
    const float w = x[i] * x[i];
    sum_lx += w * x[i] * l[i];
    sum_l2 += w * l[i] * l[i];
  }
  for (int pass = 0; pass < 5; ++pass) {
    int changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i];
      float slx = sum_lx - w * x[i] * l[i];
      if (!(slx > 0.0f)) continue;
      float sl2 = sum_l2 - w * l[i] * l[i];
      const int candidate = RoundClamp(x[i] * sl2 / slx, -n_max, n_max - 1);
      if (candidate == l[i]) continue;
      slx += w * x[i] * candidate;
      sl2 += w * candidate * candidate;
      if (sl2 > 0.0f && slx * slx * sum_l2 > sum_lx * sum_lx * sl2) {
        l[i] = candidate;
        sum_lx = slx;
        sum_l2 = sl2;
        ++changed;
      }
    }
    if (changed == 0) break;
  }
  for (int i = 0; i < n; ++i) codes[i] = static_cast<uint8_t>(l[i] + n_max);
  return sum_l2 > 0.0f ? sum_lx / sum_l2 : 0.0f;
}

// Q4_K / Q5_K share their scale packing: 8 6-bit scales and 8 6-bit mins in 12 bytes.
void PackScalesMins6(const uint8_t scales[8], const uint8_t mins[8], uint8_t packed[kKScaleBytes]) {
  std::memset(packed, 0, kKScaleBytes);
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      packed[j] = scales[j];
      packed[j + 4] = mins[j];
    } else {
      packed[j + 4] = static_cast<uint8_t>((scales[j] & 0x0F) | ((mins[j] & 0x0F) << 4));
      packed[j - 4] |= static_cast<uint8_t>((scales[j] >> 4) << 6);
      packed[j] |= static_cast<uint8_t>((mins[j] >> 4) << 6);
    }
  }
}

// One super-block of Q4_K (n_max 15) or Q5_K (31): 8 sub-blocks of 32 with a
// scale and a min each, both quantized to 6 bits against d and dmin.
// Writes d, dmin (f16 bits), the packed scales and codes[256] in [0, n_max].
void AffineSuperBlock(const float* x, int n_max, float r_min, int n_steps, uint16_t* d_bits, uint16_t* dmin_bits,
                      uint8_t packed[kKScaleBytes], uint8_t codes[kQK_K]) {
  float scales[8], mins[8], weights[32];
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + 32 * j;
    float sum_x2 = 0.0f;
    for (int l = 0; l < 32; ++l) sum_x2 += xs[l] * xs[l];
    const float rms = std::sqrt(sum_x2 / 32.0f);
    for (int l = 0; l < 32; ++l) weights[l] = rms + std::fabs(xs[l]);
    scales[j] = AffineScaleSearch(32, n_max, xs, weights, codes + 32 * j, &mins[j], r_min, 0.1f, n_steps, false);
  }
  const float max_scale = *std::max_element(scales, scales + 8), max_min = *std::max_element(mins, mins + 8);
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  uint8_t ls[8], lm[8];
  for (int j = 0; j < 8; ++j) {
    ls[j] = static_cast<uint8_t>(RoundClamp(inv_scale * scales[j], 0, 63));
    lm[j] = static_cast<uint8_t>(RoundClamp(inv_min * mins[j], 0, 63));
  }
  PackScalesMins6(ls, lm, packed);
  *d_bits = F32ToF16(max_scale / 63.0f);
  *dmin_bits = F32ToF16(max_min / 63.0f);
  const float d = F16ToF32(*d_bits), dmin = F16ToF32(*dmin_bits);
  for (int j = 0; j < 8; ++j) {
    const float dl = d * ls[j];
    if (dl == 0.0f) continue;
    const float ml = dmin * lm[j];
    for (int l = 0; l < 32; ++l)
      codes[32 * j + l] = static_cast<uint8_t>(RoundClamp((x[32 * j + l] + ml) / dl, 0, n_max));
  }
}

// Nearest of the 16 IQ4_NL levels to v (levels ascending).
int NearestLevel(float v) {
  if (!(v > kIq4NlLevels[0])) return 0;
  if (v >= kIq4NlLevels[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    (v < kIq4NlLevels[mid] ? hi : lo) = mid;
  }
  return v - kIq4NlLevels[lo] < kIq4NlLevels[hi] - v ? lo : hi;
}

}  // namespace

void QuantizeQ2_K(const float* x, uint8_t* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, x += kQK_K) {
    uint8_t codes[kQK_K];
    float scales[16], mins[16], weights[16];
    for (int g = 0; g < 16; ++g) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * g + l]);
      scales[g] = AffineScaleSearch(16, 3, x + 16 * g, weights, codes + 16 * g, &mins[g], -0.5f, 0.1f, 15, true);
    }
    const float max_scale = *std::max_element(scales, scales + 16), max_min = *std::max_element(mins, mins + 16);
    BlockQ2_K b{};
    const float inv_scale = max_scale > 0.0f ? 15.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0.0f ? 15.0f / max_min : 0.0f;
    for (int g = 0; g < 16; ++g) {
      const int ls = RoundClamp(inv_scale * scales[g], 0, 15), lm = RoundClamp(inv_min * mins[g], 0, 15);
      b.scales[g] = static_cast<uint8_t>(ls | (lm << 4));
    }
    b.d = F32ToF16(max_scale / 15.0f);
    b.dmin = F32ToF16(max_min / 15.0f);
    const float d = F16ToF32(b.d), dmin = F16ToF32(b.dmin);
    for (int g = 0; g < 16; ++g) {
      const float dl = d * static_cast<float>(b.scales[g] & 0x0F);
      if (dl == 0.0f) continue;
      const float ml = dmin * static_cast<float>(b.scales[g] >> 4);
      for (int l = 0; l < 16; ++l) codes[16 * g + l] = static_cast<uint8_t>(RoundClamp((x[16 * g + l] + ml) / dl, 0, 3));
    }
    // Element 128·h + 32·j + l goes to qs[32·h + l], bits 2j.
    for (int e = 0; e < kQK_K; ++e)
      b.qs[32 * (e / 128) + e % 32] |= static_cast<uint8_t>(codes[e] << (2 * ((e % 128) / 32)));
    StoreBlock(b, dst, i);
  }
}

void QuantizeQ3_K(const float* x, uint8_t* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, x += kQK_K) {
    uint8_t codes[kQK_K];
    float scales[16];
    for (int g = 0; g < 16; ++g) scales[g] = SymmetricCodeDescent(16, 4, x + 16 * g, codes + 16 * g);
    const float max_scale = SignedMaxAbs(scales, 16);
    BlockQ3_K b{};
    float d = 0.0f;
    if (max_scale != 0.0f) {
      const float inv_scale = -32.0f / max_scale;
      for (int g = 0; g < 16; ++g) {
        const int l = RoundClamp(inv_scale * scales[g], -32, 31) + 32;
        b.scales[g % 8] |= static_cast<uint8_t>((l & 0x0F) << (g < 8 ? 0 : 4));
        b.scales[8 + g % 4] |= static_cast<uint8_t>((l >> 4) << (2 * (g / 4)));
      }
      d = 1.0f / inv_scale;
    }
    b.d = F32ToF16(d);
    const float d_stored = F16ToF32(b.d);
    for (int g = 0; g < 16; ++g) {
      const int packed_scale = ((g < 8 ? b.scales[g] & 0x0F : b.scales[g - 8] >> 4) |
                                (((b.scales[8 + g % 4] >> (2 * (g / 4))) & 3) << 4)) - 32;
      const float dl = d_stored * static_cast<float>(packed_scale);
      if (dl == 0.0f) continue;
      for (int l = 0; l < 16; ++l) codes[16 * g + l] = static_cast<uint8_t>(RoundClamp(x[16 * g + l] / dl, -4, 3) + 4);
    }
    for (int e = 0; e < kQK_K; ++e) {
      if (codes[e] > 3) b.hmask[e % 32] |= static_cast<uint8_t>(1 << (e / 32));
      b.qs[32 * (e / 128) + e % 32] |= static_cast<uint8_t>((codes[e] & 3) << (2 * ((e % 128) / 32)));
    }
    StoreBlock(b, dst, i);
  }
}

void QuantizeQ4_K(const float* x, uint8_t* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, x += kQK_K) {
    BlockQ4_K b{};
    uint8_t codes[kQK_K];
    AffineSuperBlock(x, 15, -1.0f, 20, &b.d, &b.dmin, b.scales, codes);
    // Element 64·k + l (l < 32) is qs[32·k + l]'s low nibble, 64·k + 32 + l its high one.
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 32; ++l)
        b.qs[32 * k + l] = static_cast<uint8_t>(codes[64 * k + l] | (codes[64 * k + 32 + l] << 4));
    StoreBlock(b, dst, i);
  }
}

void QuantizeQ5_K(const float* x, uint8_t* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, x += kQK_K) {
    BlockQ5_K b{};
    uint8_t codes[kQK_K];
    AffineSuperBlock(x, 31, -0.5f, 15, &b.d, &b.dmin, b.scales, codes);
    // As Q4_K for the low 4 bits; bit 4 of element 32·c + l is qh[l]'s bit c.
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 32; ++l)
        b.qs[32 * k + l] = static_cast<uint8_t>((codes[64 * k + l] & 0x0F) | ((codes[64 * k + 32 + l] & 0x0F) << 4));
    for (int e = 0; e < kQK_K; ++e) b.qh[e % 32] |= static_cast<uint8_t>((codes[e] >> 4) << (e / 32));
    StoreBlock(b, dst, i);
  }
}

void QuantizeQ6_K(const float* x, uint8_t* dst, int64_t n_blocks) {
  for (int64_t i = 0; i < n_blocks; ++i, x += kQK_K) {
    uint8_t codes[kQK_K];
    float scales[16];
    for (int g = 0; g < 16; ++g) scales[g] = SymmetricScaleSearch(16, 32, x + 16 * g, codes + 16 * g);
    const float max_scale = SignedMaxAbs(scales, 16);
    BlockQ6_K b{};
    if (!(std::fabs(max_scale) >= kGroupMaxEps)) {  // all zeros
      StoreBlock(b, dst, i);
      continue;
    }
    const float inv_scale = -128.0f / max_scale;
    for (int g = 0; g < 16; ++g) b.scales[g] = static_cast<int8_t>(RoundClamp(inv_scale * scales[g], -128, 127));
    b.d = F32ToF16(1.0f / inv_scale);
    const float d = F16ToF32(b.d);
    for (int g = 0; g < 16; ++g) {
      const float dl = d * static_cast<float>(b.scales[g]);
      if (dl == 0.0f) continue;
      for (int l = 0; l < 16; ++l) codes[16 * g + l] = static_cast<uint8_t>(RoundClamp(x[16 * g + l] / dl, -32, 31) + 32);
    }
    // Per half h (128 elements): element 128h + 32q + l has its low 4 bits in
    // ql[64h + l + 32·(q % 2)] (low nibble for q < 2, high for q ≥ 2) and its
    // high 2 bits in qh[32h + l] at bits 2q.
    for (int e = 0; e < kQK_K; ++e) {
      const int h = e / 128, q = (e % 128) / 32, l = e % 32;
      b.ql[64 * h + l + 32 * (q % 2)] |= static_cast<uint8_t>((codes[e] & 0x0F) << (q < 2 ? 0 : 4));
      b.qh[32 * h + l] |= static_cast<uint8_t>((codes[e] >> 4) << (2 * q));
    }
    StoreBlock(b, dst, i);
  }
}

void QuantizeIQ4_XS(const float* x, uint8_t* dst, int64_t n_blocks) {
  constexpr int kTries = 7;
  for (int64_t i = 0; i < n_blocks; ++i, x += kQK_K) {
    float scales[8];
    for (int s = 0; s < 8; ++s) {
      const float* xs = x + 32 * s;
      const float max = SignedMaxAbs(xs, 32);
      scales[s] = 0.0f;
      if (!(std::fabs(max) >= kGroupMaxEps)) continue;
      // Candidate inverse scales: max onto the top level's magnitude (+127), or onto the bottom level −127
      // moved by up to ±kTries; keep the best least-squares fit.
      float best = 0.0f;
      for (int t = -kTries - 1; t <= kTries; ++t) {
        const float level = t < -kTries ? -kIq4NlLevels[0] : static_cast<float>(t + kIq4NlLevels[0]);
        const float inv = level / max;
        float sum_qx = 0.0f, sum_q2 = 0.0f;
        for (int l = 0; l < 32; ++l) {
          const float q = kIq4NlLevels[NearestLevel(inv * xs[l])];
          const float w = xs[l] * xs[l];
          sum_qx += w * q * xs[l];
          sum_q2 += w * q * q;
        }
        if (sum_q2 > 0.0f && (scales[s] == 0.0f || sum_qx * sum_qx > best * sum_q2)) {
          scales[s] = sum_qx / sum_q2;
          best = scales[s] * sum_qx;
        }
      }
    }
    const float max_scale = SignedMaxAbs(scales, 8);
    BlockIQ4_XS b{};
    b.d = F32ToF16(-max_scale / 32.0f);
    const float d = F16ToF32(b.d);
    const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
    for (int s = 0; s < 8; ++s) {
      const int l = RoundClamp(inv_d * scales[s], -32, 31);
      const float dl = d * static_cast<float>(l);
      const float inv_dl = dl != 0.0f ? 1.0f / dl : 0.0f;
      const int ls = l + 32;
      b.scales_l[s / 2] |= static_cast<uint8_t>((ls & 0x0F) << (4 * (s % 2)));
      b.scales_h |= static_cast<uint16_t>((ls >> 4) << (2 * s));
      for (int j = 0; j < 16; ++j) {
        const int lo = NearestLevel(inv_dl * x[32 * s + j]), hi = NearestLevel(inv_dl * x[32 * s + 16 + j]);
        b.qs[16 * s + j] = static_cast<uint8_t>(lo | (hi << 4));
      }
    }
    StoreBlock(b, dst, i);
  }
}

}  // namespace ridge::kquants
