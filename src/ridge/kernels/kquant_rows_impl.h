#pragma once
// The K-quant rows path shared by the K-quant kernels of both ISAs: the
// prepared activation layout, small helpers, and the file-layout rows tile
// of Q6_K, Q3_K, Q2_K and IQ4_XS (at the end) written against the including
// file's steps S (its 256-bit integer dot S::DotAdd and shuffles).
//
// Include only from *_avx2.cc / *_avx512.cc, after <immintrin.h> (or
// simd_avx512.h). Everything here sits in an anonymous namespace and S is a
// type local to the including file, so each ISA file gets its own private
// copy compiled with its own flags (no shared inline code for the linker to
// mix up).
//
// Every tile computes output (row, token) with the same operations in the
// same order whatever kR and kT are (one float accumulator per pair), so the
// rows path is batch-invariant (matmul_isa.h).
#include <cstring>

#include "ridge/gguf/ggml_type.h"
#include "ridge/kernels/matmul_isa.h"

namespace ridge::kernels::internal {
namespace {

constexpr int kActBlock = 32;

int64_t Align64(int64_t n) { return (n + 63) & ~int64_t{63}; }

// One prepared activation row of n_cols (a multiple of 256):
//   q      int8  [n_cols]
//   d      float [n_blocks]          scale of each 32-block
//   dsum   float [n_blocks]          d·Σq of each 32-block (Q4_K, Q5_K mins)
//   bias   int32 [n_blocks][8]       −32·Σ of each 4-byte lane (Q6_K, Q3_K)
//   gsum   float [n_blocks][2]       d·Σq of each 16 elements (Q2_K's mins)
//   gbias  int32 [n_blocks][2]       −32·Σq of each 16 elements (Q6_K's and Q3_K's weight panels)
struct ActLayout {
  int64_t n_blocks, d_off, dsum_off, bias_off, gsum_off, gbias_off, bytes;
  explicit ActLayout(int64_t n_cols) {
    n_blocks = n_cols / kActBlock;
    d_off = Align64(n_cols);
    dsum_off = d_off + Align64(n_blocks * 4);
    bias_off = dsum_off + Align64(n_blocks * 4);
    gsum_off = bias_off + n_blocks * 32;
    gbias_off = gsum_off + n_blocks * 8;
    bytes = gbias_off + n_blocks * 8;  // n_cols is a multiple of 256: a multiple of 64
  }
};

// One token's prepared activation row (ActLayout), its parts found.
struct TokenActs {
  const int8_t* q = nullptr;
  const float* d = nullptr;
  const float* dsum = nullptr;
  const int32_t* bias = nullptr;
  const float* gsum = nullptr;
  const int32_t* gbias = nullptr;
  TokenActs() = default;
  TokenActs(const uint8_t* row, const ActLayout& layout)
      : q(reinterpret_cast<const int8_t*>(row)),
        d(reinterpret_cast<const float*>(row + layout.d_off)),
        dsum(reinterpret_cast<const float*>(row + layout.dsum_off)),
        bias(reinterpret_cast<const int32_t*>(row + layout.bias_off)),
        gsum(reinterpret_cast<const float*>(row + layout.gsum_off)),
        gbias(reinterpret_cast<const int32_t*>(row + layout.gbias_off)) {}
};

// gsum[0], gsum[1] and gbias[0], gbias[1] of one 32-block from its 8 lane
// sums (4 elements each) and scale.
[[maybe_unused]] void StoreGroupSums(__m256i lane_sums, float scale, float* gsum, int32_t* gbias) {
  __m128i s = _mm_hadd_epi32(_mm256_castsi256_si128(lane_sums), _mm256_extracti128_si256(lane_sums, 1));
  s = _mm_hadd_epi32(s, s);  // [Σ lanes 0..3, Σ lanes 4..7, …]
  const int32_t lo = _mm_cvtsi128_si32(s), hi = _mm_extract_epi32(s, 1);
  gsum[0] = scale * static_cast<float>(lo);
  gsum[1] = scale * static_cast<float>(hi);
  gbias[0] = -32 * lo;
  gbias[1] = -32 * hi;
}

[[maybe_unused]] int64_t ActRowBytes(int64_t n_cols) { return ActLayout(n_cols).bytes; }

float F16At(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// The 8 6-bit scales and 8 mins of a Q4_K / Q5_K super-block, as floats
// (ggml's get_scale_min_k4, all at once, in vector registers: scalar pieces
// stored and reloaded wider would stall store forwarding). Reads the 16
// bytes from `packed` (the 12 scale bytes and 4 after them in the block).
[[maybe_unused]] void Q4KScalesMins(const uint8_t* packed, __m256* scales, __m256* mins) {
  const __m128i u = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed));  // words u0, u1, u2
  const __m128i x = _mm_shuffle_epi32(u, _MM_SHUFFLE(2, 1, 2, 0));              // u0, u2, u1, u2
  const __m128i y = _mm_shuffle_epi32(u, _MM_SHUFFLE(1, 1, 0, 0));              // u0, u0, u1, u1
  // Words: scales 0..3 = u0 & 63, scales 4..7 = (u2 & 15) | (u0 >> 6 & 3) << 4, mins likewise from u1 and u2 >> 4.
  const __m128i low = _mm_and_si128(_mm_srlv_epi32(x, _mm_setr_epi32(0, 0, 0, 4)),
                                    _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f));
  const __m128i high = _mm_and_si128(_mm_srlv_epi32(y, _mm_setr_epi32(0, 6, 0, 6)),
                                     _mm_setr_epi32(0, 0x03030303, 0, 0x03030303));
  const __m128i bytes = _mm_or_si128(low, _mm_slli_epi32(high, 4));
  *scales = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
  *mins = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(bytes, 8)));
}

__m256 I8x8ToFloat(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)); }

__m256i Load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

// Bit `bit` of every byte of v, moved to bit `to` (the rest 0). A 16-bit
// shift by at most 7 moves no bit across a byte into the kept position.
__m256i BitOfBytes(__m256i v, int bit, int to) {
  const __m256i moved = bit >= to ? _mm256_srli_epi16(v, bit - to) : _mm256_slli_epi16(v, to - bit);
  return _mm256_and_si256(moved, _mm256_set1_epi8(static_cast<char>(1 << to)));
}

// 2-bit field `shift` of every byte of v.
__m256i Crumbs(__m256i v, int shift) {
  const __m256i three = _mm256_set1_epi8(3);
  return shift == 0 ? _mm256_and_si256(v, three) : _mm256_and_si256(_mm256_srli_epi16(v, shift), three);
}

constexpr int kPrefetchTiles = 2;

// The 16 6-bit Q3_K scales, unbiased, as int8 (group g's low 4 bits in byte
// g % 8 at bit 4·(g / 8), its high 2 bits in byte 8 + g % 4 at bit 2·(g / 4)).
// In vector registers: scalar pieces stored and reloaded wider would stall
// store forwarding. Reads the 16 bytes 94..109 of the block (scales at 96).
__m128i Q3KScales(const uint8_t* block) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 94));
  const __m128i low_words = _mm_shuffle_epi8(v, _mm_setr_epi8(2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5, 6, 7, 8, 9));
  const __m128i high_word = _mm_shuffle_epi8(v, _mm_setr_epi8(10, 11, 12, 13, 10, 11, 12, 13, 10, 11, 12, 13, 10,
                                                              11, 12, 13));
  const __m128i low = _mm_and_si128(_mm_srlv_epi32(low_words, _mm_setr_epi32(0, 0, 4, 4)), _mm_set1_epi8(0x0f));
  const __m128i high = _mm_and_si128(_mm_srlv_epi32(high_word, _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
  return _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi32(high, 4)), _mm_set1_epi8(32));
}

// IQ4_XS's ls_s − 32 of its 8 sub-blocks s, as int32 (ls_s: 4 bits of
// scales_l at bit 4s, 2 of scales_h at bit 2s).
__m256i IQ4XSSubScales(const uint8_t* block) {
  uint16_t scales_h;
  uint32_t scales_l;
  std::memcpy(&scales_h, block + 2, 2);
  std::memcpy(&scales_l, block + 4, 4);
  const __m256i low = _mm256_and_si256(
      _mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(scales_l)), _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28)),
      _mm256_set1_epi32(0x0f));
  const __m256i high =
      _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(scales_h), _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                       _mm256_set1_epi32(3));
  return _mm256_sub_epi32(_mm256_or_si256(low, _mm256_slli_epi32(high, 4)), _mm256_set1_epi32(32));
}

// The IQ4_NL levels in both 128-bit lanes (vpshufb's table).
__m256i IQ4Levels256() {
  return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4NlLevels)));
}

// ---- Q6_K, Q3_K, Q2_K and IQ4_XS, file layout ---------------------------------
// The rows tile of matmul_q6k_avx512.cc and matmul_q6k_avx2.cc, in the float
// steps every path of both ISAs takes for the four types (the same bits,
// file layout or weight panels): w = d·sc_g·(c − z) − dmin·m_g in 16 groups g
// of 16, int8 sc_g (m_g: Q2_K's only); per (row, token) and x's 32-block b
// in order,
//   I_b = sc_2b·S_2b + sc_2b+1·S_2b+1   (exact int32, S_g = Σ(c − z)·x)
//   acc = fma(float(I_b), d·d_x(b), acc)
//   acc = fnmadd(dmin·m_g, gsum_g, acc), g = 2b, 2b + 1  (Q2_K; gsum_g = d_x·Σx of g)
// F: the type's form (Q6KForm: c 6-bit, z = 32; Q3KForm: c 3-bit, z = 4;
// Q2KForm: c 2-bit, z = 0, with mins; IQ4XSForm: the level, + 128 on VNNI).
// S: the including file's steps (DotAdd(acc, c, x): acc + per int32 lane the
// Σ of 4 products c·x; the 8-vector SumHalvesOf8 and Transpose8x8 of its
// ISA's simd header).
//
// Rows [r, r + kR) × kT tokens, a row at a time in the file's order, kR ≤ 8
// (rows past kR are copies of row kR − 1, not stored). Per super-block and
// row: each 32-block's dot lanes (4 elements each, lanes 0-3 group 2b, 4-7
// group 2b + 1, from their bias −z·Σx) for the 8 blocks reduced at once
// (SumHalvesOf8: lane b = S_2b, S_2b+1), scaled to I_b; then the tile's 8
// rows of float(I_b) transposed to a register per block, rows in lanes, for
// the fma over b in order. Measured on AVX-512 (BM_Decode/Q6_K, 2 threads, Zen 4, load ~7): 8
// rows in lanes with one reduction per block decoded at 30-32 GB/s, 16 rows
// in zmm pairs at 19-20, this order with a scalar fma chain per row 30-36,
// and with the transpose 43-44, as the per-lane float kernel before them.

// The scales of groups 2b (even) and 2b + 1 (odd), b = 0..7, of 16 int8 in group order, as int32.
void EvenOddScales(__m128i sc, __m256i* even, __m256i* odd) {
  const __m128i split = _mm_shuffle_epi8(sc, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
  *even = _mm256_cvtepi8_epi32(split);
  *odd = _mm256_cvtepi8_epi32(_mm_srli_si128(split, 8));
}

// Q6_K: ql[128], qh[64], scales[16], d; c = the 4 bits of ql with 2 of qh, z = 32.
struct Q6KForm {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ6_K);
  static constexpr int64_t kDOffset = 208;
  static constexpr bool kMins = false;
  static void Scales(const uint8_t* block, __m256i* even, __m256i* odd) {
    EvenOddScales(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block + 192)), even, odd);
  }
  // The codes of 32-blocks 4h .. 4h + 3 of the super-block.
  static void Codes(const uint8_t* block, int h, __m256i q[4]) {
    const __m256i m4 = _mm256_set1_epi8(0x0f), m2 = _mm256_set1_epi8(0x30);
    const __m256i a = Load256(block + 64 * h), b = Load256(block + 64 * h + 32), hb = Load256(block + 128 + 32 * h);
    q[0] = _mm256_or_si256(_mm256_and_si256(a, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 4), m2));
    q[1] = _mm256_or_si256(_mm256_and_si256(b, m4), _mm256_and_si256(_mm256_slli_epi16(hb, 2), m2));
    q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), m4), _mm256_and_si256(hb, m2));
    q[3] =
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), m4), _mm256_and_si256(_mm256_srli_epi16(hb, 2), m2));
  }
  // −z·Σx of 8 4-byte lanes from the activations' −32·Σx.
  static __m256i Bias(const int32_t* bias32) { return Load256(bias32); }
};

// Q3_K: hmask[32], qs[64], scales[12], d; c = 2 bits of qs with a bit of hmask above, z = 4.
struct Q3KForm {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ3_K);
  static constexpr int64_t kDOffset = 108;
  static constexpr bool kMins = false;
  static void Scales(const uint8_t* block, __m256i* even, __m256i* odd) { EvenOddScales(Q3KScales(block), even, odd); }
  static void Codes(const uint8_t* block, int h, __m256i q[4]) {
    const __m256i hmask = Load256(block), qs = Load256(block + 32 + 32 * h);
    for (int j = 0; j < 4; ++j) q[j] = _mm256_or_si256(Crumbs(qs, 2 * j), BitOfBytes(hmask, 4 * h + j, 2));
  }
  static __m256i Bias(const int32_t* bias32) { return _mm256_srai_epi32(Load256(bias32), 3); }  // exact: 32 | bias
};

// Q2_K: scales[16] (sc | m << 4), qs[64], d, dmin; c = 2 bits of qs, z = 0, and the mins.
struct Q2KForm {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ2_K);
  static constexpr int64_t kDOffset = 80;
  static constexpr bool kMins = true;
  static void Scales(const uint8_t* block, __m256i* even, __m256i* odd) {
    EvenOddScales(_mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block)), _mm_set1_epi8(0x0f)), even,
                  odd);
  }
  static void Codes(const uint8_t* block, int h, __m256i q[4]) {
    const __m256i qs = Load256(block + 16 + 32 * h);
    for (int j = 0; j < 4; ++j) q[j] = Crumbs(qs, 2 * j);
  }
  static __m256i Bias(const int32_t* /*bias32*/) { return _mm256_setzero_si256(); }
  // dmin·m of groups 0..7 and 8..15.
  static void Mins(const uint8_t* block, __m256 mins[2]) {
    const __m128i m = _mm_and_si128(_mm_srli_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(block)), 4),
                                    _mm_set1_epi8(0x0f));
    const __m256 dmin = _mm256_set1_ps(F16At(block + 82));
    mins[0] = _mm256_mul_ps(I8x8ToFloat(m), dmin);
    mins[1] = _mm256_mul_ps(I8x8ToFloat(_mm_srli_si128(m, 8)), dmin);
  }
};

// IQ4_XS: ls_s 6-bit (low 4 bits in scales_l, high 2 in scales_h), sc of
// both groups of sub-block s = ls_s − 32, c = its IQ4_NL level + kOffset:
// 128 for VNNI (c up to 241 unsigned, z = 128; vpmaddubsw's pairs would
// saturate on it), 0 for AVX2 (c the signed level, z = 0, for a dot that
// gives x c's sign and multiplies |c|). Either way S_g = Σ level·x exactly.
template <int kOffset>
struct IQ4XSForm {
  static_assert(kOffset == 0 || kOffset == 128);
  static constexpr int64_t kBlockBytes = sizeof(BlockIQ4_XS);
  static constexpr int64_t kDOffset = 0;
  static constexpr bool kMins = false;
  static void Scales(const uint8_t* block, __m256i* even, __m256i* odd) { *even = *odd = IQ4XSSubScales(block); }
  // Sub-blocks 4h .. 4h + 3: each 16 code bytes, low nibbles elements 0-15, high 16-31.
  static void Codes(const uint8_t* block, int h, __m256i q[4]) {
    const __m256i levels = _mm256_add_epi8(IQ4Levels256(), _mm256_set1_epi8(static_cast<char>(kOffset)));
    const __m256i nibble = _mm256_set1_epi8(0x0f);
    for (int p = 0; p < 2; ++p) {  // sub-blocks 4h + 2p and 4h + 2p + 1
      const __m256i codes = Load256(block + 8 + 64 * h + 32 * p);
      const __m256i lo = _mm256_and_si256(codes, nibble), hi = _mm256_and_si256(_mm256_srli_epi16(codes, 4), nibble);
      q[2 * p] = _mm256_shuffle_epi8(levels, _mm256_permute2x128_si256(lo, hi, 0x20));
      q[2 * p + 1] = _mm256_shuffle_epi8(levels, _mm256_permute2x128_si256(lo, hi, 0x31));
    }
  }
  static __m256i Bias(const int32_t* bias32) {  // −z·Σx
    return kOffset == 0 ? _mm256_setzero_si256() : _mm256_slli_epi32(Load256(bias32), 2);
  }
};

template <typename F, typename S, int kR, int kT>
void Q6KRowsTile(const MatView& w, const ActLayout& layout, const ActView& acts, int64_t r, float* y,
                 int64_t y_stride) {
  constexpr int64_t kBlockBytes = F::kBlockBytes;
  constexpr int kTileRows = 8;
  constexpr int kPrefetchLines = (kR * kBlockBytes + 63) / 64;
  const uint8_t* base = w.data + r * w.row_bytes;
  const uint8_t* ahead = base + kPrefetchTiles * kR * w.row_bytes;
  const int64_t n_super = w.n_cols / kQK_K;
  TokenActs tok[kT];
  for (int t = 0; t < kT; ++t) tok[t] = TokenActs(acts.data + t * acts.row_stride, layout);
  __m256 acc[kT];
  for (int t = 0; t < kT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
#pragma GCC unroll 1
    for (int p = 0; p < kPrefetchLines; ++p)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + sb * kR * kBlockBytes + p * 64), _MM_HINT_T1);
    __m256 fi[kT][kTileRows];  // [token][row]: lane b = float(I_b)
    __m256 mins[2][kTileRows];  // Q2_K: [groups 0-7, 8-15][row]: lane g = dmin·m_g
    alignas(16) uint16_t d16[kTileRows];
#pragma GCC unroll 8
    for (int i = 0; i < kTileRows; ++i) {
      const uint8_t* block = base + std::min(i, kR - 1) * w.row_bytes + sb * kBlockBytes;
      std::memcpy(&d16[i], block + F::kDOffset, 2);
      if constexpr (kR < kTileRows) {
        if (i >= kR) {
          for (int t = 0; t < kT; ++t) fi[t][i] = fi[t][kR - 1];
          if constexpr (F::kMins) mins[0][i] = mins[0][kR - 1], mins[1][i] = mins[1][kR - 1];
          continue;
        }
      }
      if constexpr (F::kMins) {
        __m256 m[2];
        F::Mins(block, m);
        mins[0][i] = m[0];
        mins[1][i] = m[1];
      }
      __m256i sc_even, sc_odd;
      F::Scales(block, &sc_even, &sc_odd);
      // Token by token (the codes again for each, from L1): a token's 8 dots
      // fit the registers, kT tokens' would not.
#pragma GCC unroll 1
      for (int t = 0; t < kT; ++t) {
        __m256i dots[8];  // [32-block of the super-block]: lanes' Σ(c − z)·x by 4 elements
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          __m256i q[4];
          F::Codes(block, h, q);
#pragma GCC unroll 4
          for (int j = 0; j < 4; ++j) {
            const int64_t xb = sb * 8 + 4 * h + j;  // x's 32-block
            dots[4 * h + j] = S::DotAdd(F::Bias(tok[t].bias + xb * 8), q[j], Load256(tok[t].q + xb * kActBlock));
          }
        }
        __m256i s_even, s_odd;  // lane b: S_2b, S_2b+1
        S::SumHalvesOf8(dots, &s_even, &s_odd);
        fi[t][i] = _mm256_cvtepi32_ps(
            _mm256_add_epi32(_mm256_mullo_epi32(s_even, sc_even), _mm256_mullo_epi32(s_odd, sc_odd)));
      }
    }
    const __m256 d = _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(d16)));  // rows in lanes
    if constexpr (F::kMins) {
      S::Transpose8x8(mins[0]);  // [group g]: rows in lanes
      S::Transpose8x8(mins[1]);  // [group 8 + g]
    }
#pragma GCC unroll 4
    for (int t = 0; t < kT; ++t) {
      S::Transpose8x8(fi[t]);  // [block b]: rows in lanes
#pragma GCC unroll 8
      for (int b = 0; b < 8; ++b) {
        acc[t] = _mm256_fmadd_ps(fi[t][b], _mm256_mul_ps(d, _mm256_set1_ps(tok[t].d[sb * 8 + b])), acc[t]);
        if constexpr (F::kMins) {
          for (int gi = 0; gi < 2; ++gi) {
            const int g = 2 * b + gi;
            acc[t] = _mm256_fnmadd_ps(mins[g / 8][g % 8], _mm256_set1_ps(tok[t].gsum[sb * 16 + g]), acc[t]);
          }
        }
      }
    }
  }
  const __m256i valid = _mm256_cmpgt_epi32(_mm256_set1_epi32(kR), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (int t = 0; t < kT; ++t) _mm256_maskstore_ps(y + t * y_stride + r, valid, acc[t]);
}

template <typename F, typename S, int kT>
void Q6KRowsForTokens(const MatView& w, const ActView& acts, int64_t r_begin, int64_t r_end, float* y,
                      int64_t y_stride) {
  const ActLayout layout(w.n_cols);
  int64_t r = r_begin;
  for (; r + 8 <= r_end; r += 8) Q6KRowsTile<F, S, 8, kT>(w, layout, acts, r, y, y_stride);
  for (; r < r_end; ++r) Q6KRowsTile<F, S, 1, kT>(w, layout, acts, r, y, y_stride);
}

// TypeKernels::rows of Q6_K (F = Q6KForm), Q3_K (Q3KForm) or Q2_K (Q2KForm) on the file's layout, up to 4 tokens
// per pass.
template <typename F, typename S>
void Q6KFileRows(const MatView& w, const ActView& acts, int64_t n_tokens, int64_t r_begin, int64_t r_end, float* y,
                 int64_t y_stride) {
  switch (n_tokens) {
    case 1: return Q6KRowsForTokens<F, S, 1>(w, acts, r_begin, r_end, y, y_stride);
    case 2: return Q6KRowsForTokens<F, S, 2>(w, acts, r_begin, r_end, y, y_stride);
    case 3: return Q6KRowsForTokens<F, S, 3>(w, acts, r_begin, r_end, y, y_stride);
    default: return Q6KRowsForTokens<F, S, 4>(w, acts, r_begin, r_end, y, y_stride);
  }
}

}  // namespace
}  // namespace ridge::kernels::internal
