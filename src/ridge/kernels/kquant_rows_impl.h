#pragma once
// The K-quant rows path shared by matmul_kquant_avx2.cc and
// matmul_kquant_avx512.cc: the prepared activation layout, small helpers, and
// the Q2_K, Q3_K, Q5_K and IQ4_XS tiles written once against the including
// file's 256-bit integer dot D::DotAdd(acc, u8, s8) (acc + per int32 lane the
// Σ of 4 products; vpdpbusd, or vpmaddubsw + vpmaddwd where every pair sum
// must stay below 2¹⁵: all codes here are ≤ 127 against |x| ≤ 127).
//
// Include only from *_avx2.cc / *_avx512.cc, after <immintrin.h> (or
// simd_avx512.h). Everything here sits in an anonymous namespace and D is a
// type local to the including file, so each ISA file gets its own private
// copy compiled with its own flags (no shared inline code for the linker to
// mix up).
//
// Every tile computes output (row, token) with the same operations in the
// same order whatever kR and kT are (one float accumulator per pair), so the
// rows path is batch-invariant (matmul_isa.h).
#include <cstring>

#include "ridge/kernels/matmul_isa.h"

namespace ridge::kernels::internal {
namespace {

constexpr int kActBlock = 32;

int64_t Align64(int64_t n) { return (n + 63) & ~int64_t{63}; }

// One prepared activation row of n_cols (a multiple of 256):
//   q      int8  [n_cols]
//   d      float [n_blocks]          scale of each 32-block
//   dsum   float [n_blocks]          d·Σq of each 32-block (Q4_K, Q5_K mins)
//   bias   int32 [n_blocks][8]       −32·Σ of each 4-byte lane (Q6_K; Q3_K, Q2_K scale it)
struct ActLayout {
  int64_t n_blocks, d_off, dsum_off, bias_off, bytes;
  explicit ActLayout(int64_t n_cols) {
    n_blocks = n_cols / kActBlock;
    d_off = Align64(n_cols);
    dsum_off = d_off + Align64(n_blocks * 4);
    bias_off = dsum_off + Align64(n_blocks * 4);
    bytes = bias_off + n_blocks * 32;
  }
};

int64_t ActRowBytes(int64_t n_cols) { return ActLayout(n_cols).bytes; }

float F16At(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

__m256 Lane(__m256 v, int i) { return _mm256_permutevar8x32_ps(v, _mm256_set1_epi32(i)); }

// Lanes 0..3 take v's lane 2j, lanes 4..7 its lane 2j + 1 (the two 16-groups of a 32-chunk).
__m256 GroupPair(__m256 v, int j) {
  return _mm256_permutevar8x32_ps(v, _mm256_setr_epi32(2 * j, 2 * j, 2 * j, 2 * j, 2 * j + 1, 2 * j + 1, 2 * j + 1,
                                                       2 * j + 1));
}

// The 8 6-bit scales and 8 mins of a Q4_K / Q5_K super-block (ggml's get_scale_min_k4, all at once).
void Q4KScalesMins(const uint8_t* packed, uint8_t scales[8], uint8_t mins[8]) {
  constexpr uint32_t kLow6 = 0x3f3f3f3f, kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  uint32_t u[3];
  std::memcpy(u, packed, 12);
  const uint32_t sc[2] = {u[0] & kLow6, (u[2] & kLow4) | (((u[0] >> 6) & kLow2) << 4)};
  const uint32_t mn[2] = {u[1] & kLow6, ((u[2] >> 4) & kLow4) | (((u[1] >> 6) & kLow2) << 4)};
  std::memcpy(scales, sc, 8);
  std::memcpy(mins, mn, 8);
}

__m256 U8x8ToFloat(const uint8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

__m256 I8x8ToFloat(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)); }

__m256i Load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Bit `bit` of every byte of v, moved to bit `to` (0 or 1 there, the rest 0).
__m256i BitOfBytes(__m256i v, int bit, int to) {
  return _mm256_and_si256(_mm256_slli_epi16(_mm256_srli_epi16(v, bit), to), _mm256_set1_epi8(static_cast<char>(1 << to)));
}

// 2-bit field `shift` of every byte of v.
__m256i Crumbs(__m256i v, int shift) { return _mm256_and_si256(_mm256_srli_epi16(v, shift), _mm256_set1_epi8(3)); }

constexpr int kPrefetchTiles = 2;

// One token's prepared activations for one super-block (8 32-blocks).
struct SuperActs {
  const int8_t* q;      // [256]
  const float* d;       // [8]
  const float* dsum;    // [8]
  const int32_t* bias;  // [8][8]
};

// Q5_K: w = d·sc_s·q − dmin·m_s, q 5-bit (low 4 bits as Q4_K, bit 4 of
// element 32·c + l in qh[l] bit c), 8 sub-blocks of 32. Mins as Q4_K: one
// FMA of the 8 mins against d·Σq of the 8 x blocks.
struct Q5K {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ5_K);
  struct Decoded {
    __m256i q[8];
    __m256 dsc, dmn;  // d·sc and dmin·m of the 8 sub-blocks
  };
  static void Decode(const uint8_t* block, Decoded& out) {
    alignas(8) uint8_t sc[8], mn[8];
    Q4KScalesMins(block + 4, sc, mn);
    out.dsc = _mm256_mul_ps(U8x8ToFloat(sc), _mm256_set1_ps(F16At(block)));
    out.dmn = _mm256_mul_ps(U8x8ToFloat(mn), _mm256_set1_ps(F16At(block + 2)));
    const __m256i qh = Load256(block + 16), low = _mm256_set1_epi8(0x0f);
    for (int k = 0; k < 4; ++k) {
      const __m256i qs = Load256(block + 48 + 32 * k);
      out.q[2 * k] = _mm256_or_si256(_mm256_and_si256(qs, low), BitOfBytes(qh, 2 * k, 4));
      out.q[2 * k + 1] =
          _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 4), low), BitOfBytes(qh, 2 * k + 1, 4));
    }
  }
  template <typename D>
  static __m256 Accumulate(const Decoded& w, const SuperActs& x, __m256 acc) {
    const __m256 s = _mm256_mul_ps(w.dsc, _mm256_loadu_ps(x.d));
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      const __m256i dot = D::DotAdd(_mm256_setzero_si256(), w.q[c], Load256(x.q + 32 * c));
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), Lane(s, c), acc);
    }
    return _mm256_fnmadd_ps(w.dmn, _mm256_loadu_ps(x.dsum), acc);
  }
};

// The 16 6-bit Q3_K scales, unbiased (ggml's kmask1/kmask2 unpacking).
__m128i Q3KScales(const uint8_t* packed) {
  constexpr uint32_t kLow4 = 0x0f0f0f0f, kLow2 = 0x03030303;
  uint32_t u[3];
  std::memcpy(u, packed, 12);
  const uint32_t s[4] = {(u[0] & kLow4) | ((u[2] & kLow2) << 4), (u[1] & kLow4) | (((u[2] >> 2) & kLow2) << 4),
                         ((u[0] >> 4) & kLow4) | (((u[2] >> 4) & kLow2) << 4),
                         ((u[1] >> 4) & kLow4) | (((u[2] >> 6) & kLow2) << 4)};
  __m128i v;
  std::memcpy(&v, s, 16);
  return _mm_sub_epi8(v, _mm_set1_epi8(32));
}

// Q3_K: w = d·sc_g·(q − 4), q 3-bit in 16 groups of 16. Chunk c = 4·h + j
// (32 elements) is qs[32h..32h+31] at bits 2j plus hmask bit c as bit 2; its
// two groups are 2c and 2c + 1. −4·Σx per lane (the Q6_K bias / 8) starts the dot.
struct Q3K {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ3_K);
  struct Decoded {
    __m256i q[8];
    __m256 scale[8];  // per lane: d·sc of its group
  };
  static void Decode(const uint8_t* block, Decoded& out) {
    const __m128i sc = Q3KScales(block + 96);
    const __m256 d = _mm256_set1_ps(F16At(block + 108));
    const __m256 sc_half[2] = {_mm256_mul_ps(I8x8ToFloat(sc), d), _mm256_mul_ps(I8x8ToFloat(_mm_srli_si128(sc, 8)), d)};
    const __m256i hmask = Load256(block);
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = Load256(block + 32 + 32 * h);
      for (int j = 0; j < 4; ++j) {
        const int c = 4 * h + j;
        out.q[c] = _mm256_or_si256(Crumbs(qs, 2 * j), BitOfBytes(hmask, c, 2));
        out.scale[c] = GroupPair(sc_half[h], j);
      }
    }
  }
  template <typename D>
  static __m256 Accumulate(const Decoded& w, const SuperActs& x, __m256 acc) {
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      const __m256i minus_4_sum = _mm256_srai_epi32(Load256(x.bias + 8 * c), 3);
      const __m256i dot = D::DotAdd(minus_4_sum, w.q[c], Load256(x.q + 32 * c));
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(w.scale[c], _mm256_set1_ps(x.d[c])), acc);
    }
    return acc;
  }
};

// Q2_K: w = d·sc_g·q − dmin·m_g, q 2-bit in 16 groups of 16 (4-bit sc, m).
// Chunk c = 4·h + j is qs[32h..32h+31] at bits 2j. The mins meet the lane
// sums of x: −Σx = bias/32.
struct Q2K {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ2_K);
  struct Decoded {
    __m256i q[8];
    __m256 scale[8];  // per lane: d·sc of its group
    __m256 min[8];    // per lane: dmin·m/32 of its group
  };
  static void Decode(const uint8_t* block, Decoded& out) {
    const __m128i sm = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block));
    const __m128i sc = _mm_and_si128(sm, _mm_set1_epi8(0x0f));
    const __m128i mn = _mm_and_si128(_mm_srli_epi16(sm, 4), _mm_set1_epi8(0x0f));
    const __m256 d = _mm256_set1_ps(F16At(block + 80));
    const __m256 dmin = _mm256_set1_ps(F16At(block + 82) * (1.0f / 32.0f));
    const __m256 sc_half[2] = {_mm256_mul_ps(I8x8ToFloat(sc), d), _mm256_mul_ps(I8x8ToFloat(_mm_srli_si128(sc, 8)), d)};
    const __m256 mn_half[2] = {_mm256_mul_ps(I8x8ToFloat(mn), dmin),
                               _mm256_mul_ps(I8x8ToFloat(_mm_srli_si128(mn, 8)), dmin)};
    for (int h = 0; h < 2; ++h) {
      const __m256i qs = Load256(block + 16 + 32 * h);
      for (int j = 0; j < 4; ++j) {
        const int c = 4 * h + j;
        out.q[c] = Crumbs(qs, 2 * j);
        out.scale[c] = GroupPair(sc_half[h], j);
        out.min[c] = GroupPair(mn_half[h], j);
      }
    }
  }
  template <typename D>
  static __m256 Accumulate(const Decoded& w, const SuperActs& x, __m256 acc) {
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      const __m256 xd = _mm256_set1_ps(x.d[c]);
      const __m256i dot = D::DotAdd(_mm256_setzero_si256(), w.q[c], Load256(x.q + 32 * c));
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(w.scale[c], xd), acc);
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(Load256(x.bias + 8 * c)), _mm256_mul_ps(w.min[c], xd), acc);
    }
    return acc;
  }
};

// IQ4_XS: w = d·(ls_s − 32)·level[q], 8 sub-blocks of 32, q 4-bit indexing
// the IQ4_NL levels (signed: the dot takes |level| against x with level's sign).
struct IQ4XS {
  static constexpr int64_t kBlockBytes = sizeof(BlockIQ4_XS);
  struct Decoded {
    __m256i magnitude[8], level[8];
    __m256 dsc;  // d·(ls − 32) of the 8 sub-blocks
  };
  static void Decode(const uint8_t* block, Decoded& out) {
    uint16_t scales_h;
    std::memcpy(&scales_h, block + 2, 2);
    alignas(32) float sc[8];
    const float d = F16At(block);
    for (int s = 0; s < 8; ++s) {
      const int ls = ((block[4 + s / 2] >> (4 * (s % 2))) & 0x0f) | (((scales_h >> (2 * s)) & 3) << 4);
      sc[s] = d * static_cast<float>(ls - 32);
    }
    out.dsc = _mm256_load_ps(sc);
    const __m256i levels =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4NlLevels)));
    const __m128i low = _mm_set1_epi8(0x0f);
    for (int s = 0; s < 8; ++s) {
      const __m128i codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 8 + 16 * s));
      const __m256i idx = _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(codes, 4), low), _mm_and_si128(codes, low));
      out.level[s] = _mm256_shuffle_epi8(levels, idx);
      out.magnitude[s] = _mm256_abs_epi8(out.level[s]);
    }
  }
  template <typename D>
  static __m256 Accumulate(const Decoded& w, const SuperActs& x, __m256 acc) {
    const __m256 s = _mm256_mul_ps(w.dsc, _mm256_loadu_ps(x.d));
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
      const __m256i signed_x = _mm256_sign_epi8(Load256(x.q + 32 * c), w.level[c]);
      const __m256i dot = D::DotAdd(_mm256_setzero_si256(), w.magnitude[c], signed_x);
      acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), Lane(s, c), acc);
    }
    return acc;
  }
};

template <typename Kind, typename D, int kR, int kT>
void KQuantTile(const MatView& w, const ActLayout& layout, const ActView& acts, int64_t r, float* y,
                int64_t y_stride) {
  constexpr int kPrefetchLines = (kR * Kind::kBlockBytes + 63) / 64;
  const uint8_t* base = w.data + r * w.row_bytes;
  const uint8_t* ahead = base + kPrefetchTiles * kR * w.row_bytes;
  const int64_t n_super = w.n_cols / kQK_K;
  const uint8_t* token[kT];
  for (int t = 0; t < kT; ++t) token[t] = acts.data + t * acts.row_stride;
  __m256 acc[kR][kT];
  for (int i = 0; i < kR; ++i)
    for (int t = 0; t < kT; ++t) acc[i][t] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
#pragma GCC unroll 8
    for (int p = 0; p < kPrefetchLines; ++p)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + sb * kR * Kind::kBlockBytes + p * 64), _MM_HINT_T1);
    SuperActs x[kT];
    for (int t = 0; t < kT; ++t) {
      x[t].q = reinterpret_cast<const int8_t*>(token[t]) + sb * kQK_K;
      x[t].d = reinterpret_cast<const float*>(token[t] + layout.d_off) + sb * 8;
      x[t].dsum = reinterpret_cast<const float*>(token[t] + layout.dsum_off) + sb * 8;
      x[t].bias = reinterpret_cast<const int32_t*>(token[t] + layout.bias_off) + sb * 64;
    }
#pragma GCC unroll 4
    for (int i = 0; i < kR; ++i) {
      typename Kind::Decoded decoded;
      Kind::Decode(base + i * w.row_bytes + sb * Kind::kBlockBytes, decoded);
#pragma GCC unroll 4
      for (int t = 0; t < kT; ++t) acc[i][t] = Kind::template Accumulate<D>(decoded, x[t], acc[i][t]);
    }
  }
  for (int i = 0; i < kR; ++i)
    for (int t = 0; t < kT; ++t) y[t * y_stride + r + i] = HorizontalSum(acc[i][t]);
}

template <typename Kind, typename D, int kT>
void KQuantRowsForTokens(const MatView& w, const ActView& acts, int64_t r_begin, int64_t r_end, float* y,
                         int64_t y_stride) {
  constexpr int kR = kT == 1 ? 4 : 2;
  const ActLayout layout(w.n_cols);
  int64_t r = r_begin;
  for (; r + kR <= r_end; r += kR) KQuantTile<Kind, D, kR, kT>(w, layout, acts, r, y, y_stride);
  for (; r < r_end; ++r) KQuantTile<Kind, D, 1, kT>(w, layout, acts, r, y, y_stride);
}

// TypeKernels::rows for Kind, up to 4 tokens per pass.
template <typename Kind, typename D>
void KQuantRows(const MatView& w, const ActView& acts, int64_t n_tokens, int64_t r_begin, int64_t r_end, float* y,
                int64_t y_stride) {
  switch (n_tokens) {
    case 1: return KQuantRowsForTokens<Kind, D, 1>(w, acts, r_begin, r_end, y, y_stride);
    case 2: return KQuantRowsForTokens<Kind, D, 2>(w, acts, r_begin, r_end, y, y_stride);
    case 3: return KQuantRowsForTokens<Kind, D, 3>(w, acts, r_begin, r_end, y, y_stride);
    default: return KQuantRowsForTokens<Kind, D, 4>(w, acts, r_begin, r_end, y, y_stride);
  }
}

}  // namespace
}  // namespace ridge::kernels::internal
