// Reference dequantizers and quantizers, written from ggml's block layouts
// (ggml-quants.c: dequantize_row_*, quantize_row_*_ref). Each block is copied
// to a local struct first so that src/dst need no particular alignment.
#include "ridge/gguf/dequantize.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#include "ridge/base/error.h"
#include "ridge/base/half.h"
#include "ridge/gguf/quantize_kquants.h"

namespace ridge {
namespace {

template <typename Block>
Block LoadBlock(const uint8_t* src, int64_t i) {
  Block b;
  std::memcpy(&b, src + i * static_cast<int64_t>(sizeof(Block)), sizeof(Block));
  return b;
}

void DequantQ4_0(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK4_0) {
    auto b = LoadBlock<BlockQ4_0>(src, i);
    const float d = F16ToF32(b.d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      y[j] = static_cast<float>((b.qs[j] & 0x0F) - 8) * d;
      y[j + kQK4_0 / 2] = static_cast<float>((b.qs[j] >> 4) - 8) * d;
    }
  }
}

void DequantQ4_1(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK4_1) {
    auto b = LoadBlock<BlockQ4_1>(src, i);
    const float d = F16ToF32(b.d), m = F16ToF32(b.m);
    for (int j = 0; j < kQK4_1 / 2; ++j) {
      y[j] = static_cast<float>(b.qs[j] & 0x0F) * d + m;
      y[j + kQK4_1 / 2] = static_cast<float>(b.qs[j] >> 4) * d + m;
    }
  }
}

void DequantQ5_0(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK5_0) {
    auto b = LoadBlock<BlockQ5_0>(src, i);
    const float d = F16ToF32(b.d);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    for (int j = 0; j < kQK5_0 / 2; ++j) {
      const uint8_t xh0 = static_cast<uint8_t>(((qh >> j) << 4) & 0x10);  // bit j: high bit of element j
      const uint8_t xh1 = static_cast<uint8_t>((qh >> (j + 12)) & 0x10);  // bit j+16: of element j+16
      y[j] = static_cast<float>(((b.qs[j] & 0x0F) | xh0) - 16) * d;
      y[j + kQK5_0 / 2] = static_cast<float>(((b.qs[j] >> 4) | xh1) - 16) * d;
    }
  }
}

void DequantQ5_1(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK5_1) {
    auto b = LoadBlock<BlockQ5_1>(src, i);
    const float d = F16ToF32(b.d), m = F16ToF32(b.m);
    uint32_t qh;
    std::memcpy(&qh, b.qh, 4);
    for (int j = 0; j < kQK5_1 / 2; ++j) {
      const uint8_t xh0 = static_cast<uint8_t>(((qh >> j) << 4) & 0x10);
      const uint8_t xh1 = static_cast<uint8_t>((qh >> (j + 12)) & 0x10);
      y[j] = static_cast<float>((b.qs[j] & 0x0F) | xh0) * d + m;
      y[j + kQK5_1 / 2] = static_cast<float>((b.qs[j] >> 4) | xh1) * d + m;
    }
  }
}

void DequantIQ4_NL(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK4_NL) {
    auto b = LoadBlock<BlockIQ4_NL>(src, i);
    const float d = F16ToF32(b.d);
    for (int j = 0; j < kQK4_NL / 2; ++j) {
      y[j] = d * static_cast<float>(kIq4NlLevels[b.qs[j] & 0x0F]);
      y[j + kQK4_NL / 2] = d * static_cast<float>(kIq4NlLevels[b.qs[j] >> 4]);
    }
  }
}

// 2^(e − 128): half the E8M0 value 2^(e − 127), as the MXFP4 levels are doubled
// (ggml_e8m0_to_fp32_half; e = 0 and 1 are the subnormals 2^-128 and 2^-127).
float E8M0Half(uint8_t e) { return std::ldexp(1.0f, static_cast<int>(e) - 128); }

void DequantMXFP4(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK_MXFP4) {
    auto b = LoadBlock<BlockMXFP4>(src, i);
    const float d = E8M0Half(b.e);
    for (int j = 0; j < kQK_MXFP4 / 2; ++j) {
      y[j] = d * static_cast<float>(kMxfp4Levels[b.qs[j] & 0x0F]);
      y[j + kQK_MXFP4 / 2] = d * static_cast<float>(kMxfp4Levels[b.qs[j] >> 4]);
    }
  }
}

void DequantQ8_0(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, y += kQK8_0) {
    auto b = LoadBlock<BlockQ8_0>(src, i);
    const float d = F16ToF32(b.d);
    for (int j = 0; j < kQK8_0; ++j) y[j] = static_cast<float>(b.qs[j]) * d;
  }
}

// The 6-bit scale and min of sub-block j (0..7) packed in 12 bytes (ggml's get_scale_min_k4).
void ScaleMinK4(int j, const uint8_t* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *sc = static_cast<uint8_t>((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

void DequantQ4_K(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    auto b = LoadBlock<BlockQ4_K>(src, i);
    const float d = F16ToF32(b.d), dmin = F16ToF32(b.dmin);
    const uint8_t* q = b.qs;
    for (int j = 0, is = 0; j < kQK_K; j += 64, is += 2, q += 32) {
      uint8_t sc, m;
      ScaleMinK4(is, b.scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      ScaleMinK4(is + 1, b.scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0F) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

void DequantQ5_K(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    auto b = LoadBlock<BlockQ5_K>(src, i);
    const float d = F16ToF32(b.d), dmin = F16ToF32(b.dmin);
    const uint8_t* ql = b.qs;
    uint8_t u1 = 1, u2 = 2;
    for (int j = 0, is = 0; j < kQK_K; j += 64, is += 2, ql += 32) {
      uint8_t sc, m;
      ScaleMinK4(is, b.scales, &sc, &m);
      const float d1 = d * sc, m1 = dmin * m;
      ScaleMinK4(is + 1, b.scales, &sc, &m);
      const float d2 = d * sc, m2 = dmin * m;
      for (int l = 0; l < 32; ++l)
        *y++ = d1 * static_cast<float>((ql[l] & 0x0F) + ((b.qh[l] & u1) ? 16 : 0)) - m1;
      for (int l = 0; l < 32; ++l)
        *y++ = d2 * static_cast<float>((ql[l] >> 4) + ((b.qh[l] & u2) ? 16 : 0)) - m2;
      u1 = static_cast<uint8_t>(u1 << 2);
      u2 = static_cast<uint8_t>(u2 << 2);
    }
  }
}

void DequantQ6_K(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    auto b = LoadBlock<BlockQ6_K>(src, i);
    const float d = F16ToF32(b.d);
    const uint8_t* ql = b.ql;
    const uint8_t* qh = b.qh;
    const int8_t* sc = b.scales;
    for (int n = 0; n < kQK_K; n += 128, y += 128, ql += 64, qh += 32, sc += 8) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
        const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
        const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
        const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
        y[l + 0] = d * static_cast<float>(sc[is + 0]) * static_cast<float>(q1);
        y[l + 32] = d * static_cast<float>(sc[is + 2]) * static_cast<float>(q2);
        y[l + 64] = d * static_cast<float>(sc[is + 4]) * static_cast<float>(q3);
        y[l + 96] = d * static_cast<float>(sc[is + 6]) * static_cast<float>(q4);
      }
    }
  }
}

// Q2_K: 16 groups of 16, each with a 4-bit scale (low nibble) and 4-bit min
// (high nibble); w = d·sc·q − dmin·m, q 2-bit. Element 128·h + 32·j + l sits
// in qs[32·h + l] at bits 2j..2j+1, group 8·h + 2·j + l/16.
void DequantQ2_K(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    auto b = LoadBlock<BlockQ2_K>(src, i);
    const float d = F16ToF32(b.d), dmin = F16ToF32(b.dmin);
    for (int e = 0; e < kQK_K; ++e, ++y) {
      const int h = e / 128, j = (e % 128) / 32, l = e % 32;
      const uint8_t sc = b.scales[8 * h + 2 * j + l / 16];
      const int q = (b.qs[32 * h + l] >> (2 * j)) & 3;
      *y = d * static_cast<float>(sc & 0x0F) * static_cast<float>(q) - dmin * static_cast<float>(sc >> 4);
    }
  }
}

// The 16 6-bit Q3_K scales (stored biased by 32): group g's low 4 bits are
// byte g (g < 8) or byte g−8's high nibble, its high 2 bits sit in byte
// 8 + g%4 at bits 2·(g/4).
int Q3KScale(const uint8_t* packed, int g) {
  const int low = g < 8 ? packed[g] & 0x0F : packed[g - 8] >> 4;
  const int high = (packed[8 + g % 4] >> (2 * (g / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// Q3_K: w = d·sc_g·(q − 4), q 3-bit: 2 low bits as Q2_K's, the high bit of
// element e in hmask[e % 32] at bit e / 32 (set means no −4).
void DequantQ3_K(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    auto b = LoadBlock<BlockQ3_K>(src, i);
    const float d = F16ToF32(b.d);
    for (int e = 0; e < kQK_K; ++e, ++y) {
      const int h = e / 128, j = (e % 128) / 32, l = e % 32;
      const int low = (b.qs[32 * h + l] >> (2 * j)) & 3;
      const int high = (b.hmask[l] >> (e / 32)) & 1;
      *y = d * static_cast<float>(Q3KScale(b.scales, 8 * h + 2 * j + l / 16)) * static_cast<float>(low + 4 * high - 4);
    }
  }
}

// IQ4_XS: sub-block s (32 elements) has scale d·(ls − 32), ls 6-bit; its
// codes are 16 bytes, low nibbles the first 16 elements, high the next 16.
void DequantIQ4_XS(const uint8_t* src, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i) {
    auto b = LoadBlock<BlockIQ4_XS>(src, i);
    const float d = F16ToF32(b.d);
    for (int s = 0; s < kQK_K / 32; ++s, y += 32) {
      const int ls = ((b.scales_l[s / 2] >> (4 * (s % 2))) & 0x0F) | (((b.scales_h >> (2 * s)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * static_cast<float>(kIq4NlLevels[b.qs[16 * s + j] & 0x0F]);
        y[j + 16] = dl * static_cast<float>(kIq4NlLevels[b.qs[16 * s + j] >> 4]);
      }
    }
  }
}

// Float to a small integer code without UB for NaN or out-of-range values.
int ClampToInt(float v, float lo, float hi) {
  if (!(v >= lo)) v = lo;  // also catches NaN
  if (v > hi) v = hi;
  return static_cast<int>(v);
}

// The block's smallest and largest values (NaNs skipped), for Q4_1 / Q5_1.
void MinMax(const float* x, int n, float* min, float* max) {
  *min = std::numeric_limits<float>::max();
  *max = -std::numeric_limits<float>::max();
  for (int j = 0; j < n; ++j) {
    if (x[j] < *min) *min = x[j];
    if (x[j] > *max) *max = x[j];
  }
}

// The value of largest magnitude with its sign (the first one on ties).
float SignedAbsMax(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (amax < std::fabs(x[j])) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void QuantQ8_0(const float* x, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK8_0) {
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ8_0 b;
    b.d = F32ToF16(d);
    for (int j = 0; j < kQK8_0; ++j)
      b.qs[j] = static_cast<int8_t>(ClampToInt(std::round(x[j] * id), -127.0f, 127.0f));
    std::memcpy(dst + i * static_cast<int64_t>(sizeof b), &b, sizeof b);
  }
}

void QuantQ4_0(const float* x, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK4_0) {
    const float d = SignedAbsMax(x, kQK4_0) / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_0 b;
    b.d = F32ToF16(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      // ggml: MIN(15, (int8_t)(x * id + 8.5f)), truncation toward zero.
      const int q0 = ClampToInt(x[j] * id + 8.5f, 0.0f, 15.0f);
      const int q1 = ClampToInt(x[j + kQK4_0 / 2] * id + 8.5f, 0.0f, 15.0f);
      b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    std::memcpy(dst + i * static_cast<int64_t>(sizeof b), &b, sizeof b);
  }
}

// 32 codes of 5 bits: low nibbles packed as Q4_0's, bit 4 of code j in bit j of qh.
void Pack5BitCodes(const int codes[32], uint8_t qs[16], uint8_t qh_bytes[4]) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>((codes[j] & 0x0F) | ((codes[j + 16] & 0x0F) << 4));
    qh |= static_cast<uint32_t>(codes[j] >> 4) << j;
    qh |= static_cast<uint32_t>(codes[j + 16] >> 4) << (j + 16);
  }
  std::memcpy(qh_bytes, &qh, 4);
}

void QuantQ4_1(const float* x, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK4_1) {
    float min, max;
    MinMax(x, kQK4_1, &min, &max);
    const float d = (max - min) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockQ4_1 b;
    b.d = F32ToF16(d);
    b.m = F32ToF16(min);
    for (int j = 0; j < kQK4_1 / 2; ++j) {
      // ggml: MIN(15, (int8_t)((x - min) * id + 0.5f)).
      const int q0 = ClampToInt((x[j] - min) * id + 0.5f, 0.0f, 15.0f);
      const int q1 = ClampToInt((x[j + kQK4_1 / 2] - min) * id + 0.5f, 0.0f, 15.0f);
      b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    std::memcpy(dst + i * static_cast<int64_t>(sizeof b), &b, sizeof b);
  }
}

void QuantQ5_0(const float* x, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK5_0) {
    const float d = SignedAbsMax(x, kQK5_0) / -16.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int codes[kQK5_0];  // ggml: MIN(31, (int8_t)(x * id + 16.5f))
    for (int j = 0; j < kQK5_0; ++j) codes[j] = ClampToInt(x[j] * id + 16.5f, 0.0f, 31.0f);
    BlockQ5_0 b;
    b.d = F32ToF16(d);
    Pack5BitCodes(codes, b.qs, b.qh);
    std::memcpy(dst + i * static_cast<int64_t>(sizeof b), &b, sizeof b);
  }
}

void QuantQ5_1(const float* x, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK5_1) {
    float min, max;
    MinMax(x, kQK5_1, &min, &max);
    const float d = (max - min) / 31.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    int codes[kQK5_1];  // ggml: (uint8_t)((x - min) * id + 0.5f), at most 31 for finite input
    for (int j = 0; j < kQK5_1; ++j) codes[j] = ClampToInt((x[j] - min) * id + 0.5f, 0.0f, 31.0f);
    BlockQ5_1 b;
    b.d = F32ToF16(d);
    b.m = F32ToF16(min);
    Pack5BitCodes(codes, b.qs, b.qh);
    std::memcpy(dst + i * static_cast<int64_t>(sizeof b), &b, sizeof b);
  }
}

// For each integer k from level 0 to level 15 - 1: the last level <= k.
constexpr std::array<uint8_t, 240> kIq4NlLowerLevel = [] {
  std::array<uint8_t, 240> lower{};
  for (int k = kIq4NlLevels[0]; k < kIq4NlLevels[15]; ++k) {
    int i = 0;
    while (kIq4NlLevels[i + 1] <= k) ++i;
    lower[static_cast<size_t>(k - kIq4NlLevels[0])] = static_cast<uint8_t>(i);
  }
  return lower;
}();

// Index of the level nearest v (the upper one when v is midway), as ggml's
// best_index_int8: the two levels around v (the levels are integers, so
// floor(v) finds them in a table), then the nearer by ggml's own test. The
// quantizer calls this 16 times per element; a bisection's branches are
// unpredictable. NaN gives 0.
int NearestIq4NlLevel(float v) {
  const auto level = [](int i) { return static_cast<float>(kIq4NlLevels[i]); };
  if (!(v > level(0))) return 0;
  if (v >= level(15)) return 15;
  const int lo = kIq4NlLowerLevel[static_cast<size_t>(static_cast<int>(std::floor(v)) - kIq4NlLevels[0])];
  return v - level(lo) < level(lo + 1) - v ? lo : lo + 1;
}

// Σ w·q·x and Σ w·q² over a block coded with inverse scale `inv` (q the levels).
struct LevelFit {
  float sum_qx = 0.0f, sum_q2 = 0.0f;
};
LevelFit FitLevels(const float* x, const float* weight, float inv) {
  LevelFit fit;
  for (int j = 0; j < kQK4_NL; ++j) {
    const float q = static_cast<float>(kIq4NlLevels[NearestIq4NlLevel(inv * x[j])]);
    fit.sum_qx += weight[j] * q * x[j];
    fit.sum_q2 += weight[j] * q * q;
  }
  return fit;
}

// ggml's quantize_iq4_nl without an importance matrix (as llama-quantize
// writes IQ4_NL): weights x², a first scale from the largest magnitude, then
// 15 candidate inverse scales (−127 + k) / max, k = −7..7; the scale kept is
// the least-squares one of the candidate with the smallest weighted error
// (the largest (Σwqx)² / Σwq²), and the codes are the nearest levels for it.
// The code whose level · d is nearest x, the lowest code on a tie (ggml's best_index_mxfp4).
uint8_t NearestMxfp4Code(float x, float d) {
  int best = 0;
  float best_err = std::fabs(static_cast<float>(kMxfp4Levels[0]) * d - x);
  for (int i = 1; i < 16; ++i) {
    const float err = std::fabs(static_cast<float>(kMxfp4Levels[i]) * d - x);
    if (err < best_err) {
      best = i;
      best_err = err;
    }
  }
  return static_cast<uint8_t>(best);
}

// ggml's quantize_row_mxfp4_ref: the shared exponent puts the block's largest
// magnitude between levels 8 and 12 (e = floor(log2 max) + 125, so d·8 <= max);
// larger values round to ±12·d. Clamped to the byte (ggml leaves that undefined).
void QuantMXFP4(const float* x, uint8_t* dst, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, x += kQK_MXFP4) {
    float amax = 0.0f;
    for (int j = 0; j < kQK_MXFP4; ++j) amax = std::max(amax, std::fabs(x[j]));
    BlockMXFP4 b;
    b.e = amax > 0.0f ? static_cast<uint8_t>(std::clamp(std::floor(std::log2(amax)) - 2.0f + 127.0f, 0.0f, 254.0f))
                      : 0;
    const float d = E8M0Half(b.e);
    for (int j = 0; j < kQK_MXFP4 / 2; ++j)
      b.qs[j] = static_cast<uint8_t>(NearestMxfp4Code(x[j], d) | (NearestMxfp4Code(x[j + kQK_MXFP4 / 2], d) << 4));
    std::memcpy(dst + i * static_cast<int64_t>(sizeof(BlockMXFP4)), &b, sizeof(b));
  }
}

void QuantIQ4_NL(const float* x, uint8_t* dst, int64_t nb) {
  constexpr float kAllZero = 1e-15f;  // ggml's GROUP_MAX_EPS
  constexpr int kTries = 7;
  for (int64_t i = 0; i < nb; ++i, x += kQK4_NL) {
    float weight[kQK4_NL];
    for (int j = 0; j < kQK4_NL; ++j) weight[j] = x[j] * x[j];
    const float max = SignedAbsMax(x, kQK4_NL);
    float d = 0.0f;
    if (std::fabs(max) >= kAllZero) {
      const float first_d = max / -static_cast<float>(kIq4NlLevels[0]);
      LevelFit fit = FitLevels(x, weight, 1.0f / first_d);
      d = fit.sum_q2 > 0.0f ? fit.sum_qx / fit.sum_q2 : 0.0f;
      float best = d * fit.sum_qx;
      for (int k = -kTries; k <= kTries; ++k) {
        fit = FitLevels(x, weight, static_cast<float>(k + kIq4NlLevels[0]) / max);
        if (fit.sum_q2 > 0.0f && fit.sum_qx * fit.sum_qx > best * fit.sum_q2) {
          d = fit.sum_qx / fit.sum_q2;
          best = d * fit.sum_qx;
        }
      }
    }
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    BlockIQ4_NL b;
    b.d = F32ToF16(d);
    for (int j = 0; j < kQK4_NL / 2; ++j) {
      const int q0 = NearestIq4NlLevel(id * x[j]);
      const int q1 = NearestIq4NlLevel(id * x[j + kQK4_NL / 2]);
      b.qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
    std::memcpy(dst + i * static_cast<int64_t>(sizeof b), &b, sizeof b);
  }
}

}  // namespace

void DequantizeRow(GgmlType type, const void* src_void, float* dst, int64_t n) {
  const GgmlTypeTraits& traits = TraitsOf(type);
  RIDGE_CHECK(traits.can_dequantize);
  RIDGE_CHECK(n >= 0 && n % traits.block_elems == 0);
  const auto* src = static_cast<const uint8_t*>(src_void);
  const int64_t nb = n / traits.block_elems;
  switch (type) {
    case GgmlType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case GgmlType::kF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = F16ToF32(h);
      }
      return;
    case GgmlType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = Bf16ToF32(h);
      }
      return;
    case GgmlType::kQ4_0: return DequantQ4_0(src, dst, nb);
    case GgmlType::kQ4_1: return DequantQ4_1(src, dst, nb);
    case GgmlType::kQ5_0: return DequantQ5_0(src, dst, nb);
    case GgmlType::kQ5_1: return DequantQ5_1(src, dst, nb);
    case GgmlType::kQ8_0: return DequantQ8_0(src, dst, nb);
    case GgmlType::kIQ4_NL: return DequantIQ4_NL(src, dst, nb);
    case GgmlType::kQ4_K: return DequantQ4_K(src, dst, nb);
    case GgmlType::kQ5_K: return DequantQ5_K(src, dst, nb);
    case GgmlType::kQ6_K: return DequantQ6_K(src, dst, nb);
    case GgmlType::kQ2_K: return DequantQ2_K(src, dst, nb);
    case GgmlType::kQ3_K: return DequantQ3_K(src, dst, nb);
    case GgmlType::kIQ4_XS: return DequantIQ4_XS(src, dst, nb);
    case GgmlType::kMXFP4: return DequantMXFP4(src, dst, nb);
    default: CheckFailed("DequantizeRow: type has a dequantizer", __FILE__, __LINE__);
  }
}

bool CanQuantizeTo(GgmlType type) {
  switch (type) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16:
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
    case GgmlType::kIQ4_NL:
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K:
    case GgmlType::kIQ4_XS:
    case GgmlType::kMXFP4:
      return true;
    default:
      return false;
  }
}

std::string QuantizableTypeNames() {
  std::string names;
  for (uint32_t raw = 0; raw < 64; ++raw) {
    const auto traits = FindGgmlType(raw);
    if (!traits || !CanQuantizeTo(static_cast<GgmlType>(raw))) continue;
    if (!names.empty()) names += ", ";
    names += traits->name;
  }
  return names;
}

void QuantizeRow(GgmlType type, const float* src, void* dst_void, int64_t n) {
  RIDGE_CHECK(CanQuantizeTo(type));
  const GgmlTypeTraits& traits = TraitsOf(type);
  RIDGE_CHECK(n >= 0 && n % traits.block_elems == 0);
  auto* dst = static_cast<uint8_t*>(dst_void);
  const int64_t nb = n / traits.block_elems;
  switch (type) {
    case GgmlType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case GgmlType::kF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = F32ToF16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    case GgmlType::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t h = F32ToBf16(src[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
      return;
    case GgmlType::kQ8_0: return QuantQ8_0(src, dst, nb);
    case GgmlType::kQ4_0: return QuantQ4_0(src, dst, nb);
    case GgmlType::kQ4_1: return QuantQ4_1(src, dst, nb);
    case GgmlType::kQ5_0: return QuantQ5_0(src, dst, nb);
    case GgmlType::kQ5_1: return QuantQ5_1(src, dst, nb);
    case GgmlType::kIQ4_NL: return QuantIQ4_NL(src, dst, nb);
    case GgmlType::kQ2_K: return kquants::QuantizeQ2_K(src, dst, nb);
    case GgmlType::kQ3_K: return kquants::QuantizeQ3_K(src, dst, nb);
    case GgmlType::kQ4_K: return kquants::QuantizeQ4_K(src, dst, nb);
    case GgmlType::kQ5_K: return kquants::QuantizeQ5_K(src, dst, nb);
    case GgmlType::kQ6_K: return kquants::QuantizeQ6_K(src, dst, nb);
    case GgmlType::kIQ4_XS: return kquants::QuantizeIQ4_XS(src, dst, nb);
    case GgmlType::kMXFP4: return QuantMXFP4(src, dst, nb);
    default: CheckFailed("QuantizeRow: type has a quantizer", __FILE__, __LINE__);
  }
}

}  // namespace ridge
