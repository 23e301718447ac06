#pragma once
// The scales of a Q3_K, Q2_K or IQ4_XS weight-panel super-block
// (weight_panels.h, q3k, q2k, iq4xs), decoded for 32 rows at once into the
// int8 layout of Q6_K's panel scales, [16 groups g][32 rows j] (and Q2_K's
// mins, as floats): shared by the AVX2 and AVX-512 panel kernels of the
// 16-group K-quants (matmul_q6k_avx2.cc, matmul_q6k_avx512.cc), which read the
// same layouts.
// 256-bit AVX2 operations only, so both ISAs compile it.
//
// Include only from *_avx2.cc / *_avx512.cc, after <immintrin.h> (or
// simd_avx512.h). It sits in an anonymous namespace so each ISA file gets its
// own copy compiled with its own flags (as kquant_rows_impl.h).
#include <cstdint>

#include "ridge/kernels/weight_panels.h"

namespace ridge::kernels::internal {
namespace {

// One super-block's decoded scales: sc[g·32 + j] of group g, row j; Q2_K
// also mins[g·32 + j] = dmin·m (exact in float: an f16 times a 4-bit m).
struct GroupScales {
  alignas(64) int8_t sc[16 * panels::kRows];
  alignas(64) float mins[16 * panels::kRows];
};

// Q3_K: sc = the group's 6-bit scale minus 32; its low 4 bits are bits
// 4·(g / 8) .. of byte g % 8, its high 2 bits 2·(g / 4) .. of byte 8 + g % 4
// (ggml's Q3_K packing). 16-bit shifts move bits across bytes only into
// positions the masks drop.
inline __attribute__((always_inline)) void DecodeQ3KScales(const uint8_t* super, GroupScales& out) {
  using namespace panels::q3k;
  __m256i b[kScaleBytes];
  for (int i = 0; i < kScaleBytes; ++i)
    b[i] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(super + kScaleOffset + i * panels::kRows));
  const __m256i m4 = _mm256_set1_epi8(0x0f), top2 = _mm256_set1_epi8(0x30), bias = _mm256_set1_epi8(32);
  for (int g = 0; g < 16; ++g) {
    const __m256i low = g < 8 ? b[g] : _mm256_srli_epi16(b[g - 8], 4);
    const __m256i hb = b[8 + g % 4];
    const int hs = g / 4;  // the high bits at 2·hs, moved to 4
    const __m256i high = hs == 0   ? _mm256_slli_epi16(hb, 4)
                         : hs == 1 ? _mm256_slli_epi16(hb, 2)
                         : hs == 2 ? hb
                                   : _mm256_srli_epi16(hb, 2);
    const __m256i v = _mm256_or_si256(_mm256_and_si256(low, m4), _mm256_and_si256(high, top2));
    _mm256_store_si256(reinterpret_cast<__m256i*>(out.sc + g * panels::kRows), _mm256_sub_epi8(v, bias));
  }
}

// Q2_K: a group's byte holds its 4-bit scale (low nibble) and min (high).
inline __attribute__((always_inline)) void DecodeQ2KScales(const uint8_t* super, GroupScales& out) {
  using namespace panels::q2k;
  const __m256i m4 = _mm256_set1_epi8(0x0f);
  __m256 dmin[4];  // rows 8q .. 8q + 7
  for (int q = 0; q < 4; ++q)
    dmin[q] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(super + kDminOffset + 16 * q)));
  for (int g = 0; g < 16; ++g) {
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(super + kScaleOffset + g * panels::kRows));
    _mm256_store_si256(reinterpret_cast<__m256i*>(out.sc + g * panels::kRows), _mm256_and_si256(b, m4));
    const __m256i m = _mm256_and_si256(_mm256_srli_epi16(b, 4), m4);
    const __m128i lo = _mm256_castsi256_si128(m), hi = _mm256_extracti128_si256(m, 1);
    const __m128i rows[4] = {lo, _mm_srli_si128(lo, 8), hi, _mm_srli_si128(hi, 8)};  // 8 rows' m each
    for (int q = 0; q < 4; ++q) {
      const __m256 mf = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(rows[q]));
      _mm256_store_ps(out.mins + g * panels::kRows + 8 * q, _mm256_mul_ps(mf, dmin[q]));
    }
  }
}

// IQ4_XS: both groups of sub-block s take ls_s − 32, ls_s's
// low 4 bits at 4·(s % 2) of scales_l byte s / 2, its high 2 at 2·(s % 4) of
// scales_h byte s / 4.
inline __attribute__((always_inline)) void DecodeIQ4XSScales(const uint8_t* super, GroupScales& out) {
  using namespace panels::iq4xs;
  const auto row_bytes = [&](int64_t offset) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(super + offset));
  };
  const __m256i m4 = _mm256_set1_epi8(0x0f), top2 = _mm256_set1_epi8(0x30), bias = _mm256_set1_epi8(32);
  for (int s = 0; s < 8; ++s) {
    const __m256i l = row_bytes(kScaleLOffset + (s / 2) * panels::kRows);
    const __m256i h = row_bytes(kScaleHOffset + (s / 4) * panels::kRows);
    const __m256i low = s % 2 == 0 ? l : _mm256_srli_epi16(l, 4);
    const int hs = s % 4;  // the high bits at 2·hs, moved to 4
    const __m256i high = hs == 0   ? _mm256_slli_epi16(h, 4)
                         : hs == 1 ? _mm256_slli_epi16(h, 2)
                         : hs == 2 ? h
                                   : _mm256_srli_epi16(h, 2);
    const __m256i sc =
        _mm256_sub_epi8(_mm256_or_si256(_mm256_and_si256(low, m4), _mm256_and_si256(high, top2)), bias);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out.sc + 2 * s * panels::kRows), sc);
    _mm256_store_si256(reinterpret_cast<__m256i*>(out.sc + (2 * s + 1) * panels::kRows), sc);
  }
}

// What the panel kernels of both ISAs know of each type's panels: a
// super-block's bytes, −z·Σx of a group from the activations' gbias
// (−32·Σx), where a super-block's int8 scales [16 groups][32 rows] are
// (Q6_K: in the panel; the others: decoded beside the codes), whether mins
// follow, and (the 2- and 3-bit codes) the chunks a code comes from: qs half
// h and (Q3_K) the hmask, of group k. Each ISA file adds its codes, decode
// and one-token tiles.
struct Q6KPanelFacts {
  static constexpr int64_t kSuperBytes = panels::q6k::kSuperBytes;
  static constexpr bool kMins = false;
  static int32_t Bias(int32_t gbias) { return gbias; }
  static const int8_t* Scales(const uint8_t* super, const GroupScales& /*decoded*/) {
    return reinterpret_cast<const int8_t*>(super + panels::q6k::kScaleOffset);
  }
};
struct Q3KPanelFacts {
  static constexpr int64_t kSuperBytes = panels::q3k::kSuperBytes;
  static constexpr bool kMins = false;
  static int32_t Bias(int32_t gbias) { return gbias >> 3; }  // −4·Σx: exact
  static const int8_t* Scales(const uint8_t* /*super*/, const GroupScales& decoded) { return decoded.sc; }
  static constexpr auto DecodeScales = DecodeQ3KScales;
  static constexpr int64_t kNextGroup = 3 * panels::q3k::kGroupBytes;  // qs halves and hmask of a group
  static constexpr int64_t QsAt(int h, int k) { return panels::q3k::QuantAt(h, k); }
  static constexpr int64_t HmAt(int /*h*/, int k) { return panels::q3k::QuantAt(2, k); }  // both halves'
};
struct Q2KPanelFacts {
  static constexpr int64_t kSuperBytes = panels::q2k::kSuperBytes;
  static constexpr bool kMins = true;
  static int32_t Bias(int32_t /*gbias*/) { return 0; }
  static const int8_t* Scales(const uint8_t* /*super*/, const GroupScales& decoded) { return decoded.sc; }
  static constexpr auto DecodeScales = DecodeQ2KScales;
  static constexpr int64_t kNextGroup = 2 * panels::q2k::kGroupBytes;
  static constexpr int64_t QsAt(int h, int k) { return panels::q2k::QuantAt(h, k); }
  static constexpr int64_t HmAt(int h, int k) { return panels::q2k::QuantAt(h, k); }  // no hmask: qs again
};
struct IQ4XSPanelFacts {
  static constexpr int64_t kSuperBytes = panels::iq4xs::kSuperBytes;
  static constexpr bool kMins = false;
  static const int8_t* Scales(const uint8_t* /*super*/, const GroupScales& decoded) { return decoded.sc; }
};

}  // namespace
}  // namespace ridge::kernels::internal
