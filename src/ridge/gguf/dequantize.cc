// Reference dequantizers and quantizers, written from ggml's block layouts
// (ggml-quants.c: dequantize_row_*, quantize_row_*_ref). Each block is copied
// to a local struct first so that src/dst need no particular alignment.
#include "ridge/gguf/dequantize.h"

#include <cmath>
#include <cstring>

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
    float amax = 0.0f, max = 0.0f;  // the value of largest magnitude, with its sign
    for (int j = 0; j < kQK4_0; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
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
    case GgmlType::kQ4_K: return DequantQ4_K(src, dst, nb);
    case GgmlType::kQ5_K: return DequantQ5_K(src, dst, nb);
    case GgmlType::kQ6_K: return DequantQ6_K(src, dst, nb);
    case GgmlType::kQ2_K: return DequantQ2_K(src, dst, nb);
    case GgmlType::kQ3_K: return DequantQ3_K(src, dst, nb);
    case GgmlType::kIQ4_XS: return DequantIQ4_XS(src, dst, nb);
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
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K:
    case GgmlType::kIQ4_XS:
      return true;
    default:
      return false;
  }
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
    case GgmlType::kQ2_K: return kquants::QuantizeQ2_K(src, dst, nb);
    case GgmlType::kQ3_K: return kquants::QuantizeQ3_K(src, dst, nb);
    case GgmlType::kQ4_K: return kquants::QuantizeQ4_K(src, dst, nb);
    case GgmlType::kQ5_K: return kquants::QuantizeQ5_K(src, dst, nb);
    case GgmlType::kQ6_K: return kquants::QuantizeQ6_K(src, dst, nb);
    case GgmlType::kIQ4_XS: return kquants::QuantizeIQ4_XS(src, dst, nb);
    default: CheckFailed("QuantizeRow: type has a quantizer", __FILE__, __LINE__);
  }
}

}  // namespace ridge
