// Q6_K, Q3_K, Q2_K and IQ4_XS on AVX2 (+ FMA, F16C): the float steps of
// matmul_q6k_avx512.cc, so every path of both ISAs gives the same bits
// whichever layout, path or batch. Weights repacked at load into the panel
// layouts of weight_panels.h (q6k, q3k, q2k, iq4xs, packed here: an AVX-512
// CPU runs these packers too) are multiplied in place by the panel tiles;
// weights in the file's layout (--mmap) take a rows tile for 1-4 tokens and
// panels packed per call from 5 on.
//
// w = d·sc_g·(c − z) − dmin·m_g, 16 groups g of 16 elements with an int8
// scale: Q6_K's c 6-bit, z = 32; Q3_K's c = its 2 bits of qs with a bit of
// hmask above, z = 4, and sc its 6-bit scale − 32; Q2_K's c 2-bit, z = 0,
// sc 4-bit, and a 4-bit min m_g (the others have none); IQ4_XS's c its
// IQ4_NL level (signed, −127..113), z = 0, both groups of a 32-element
// sub-block scaled by its 6-bit scale − 32. Each group's sum starts from
// −z·Σx of the group (from the activations' gbias, −32·Σx), so it is
// S_g = Σ(c − z)·x, exact. Steps per (row, token), x's 32-blocks b in order
// (d, dmin: b's super-block's):
//   I_b = sc_{2b}·S_{2b} + sc_{2b+1}·S_{2b+1}     exact int32 (|I_b| < 2²⁶)
//   acc = fma(float(I_b), d·d_x(b), acc)
//   acc = fnmadd(dmin·m_g, gsum_g, acc), g = 2b, 2b + 1   (Q2_K; gsum_g = d_x·Σx of g)
// AVX-512 takes IQ4_XS's c as level + 128 against z = 128: the same S_g.
//
// Products: vpmaddubsw of codes (≤ 63, unsigned) against int8 activations
// (|x| ≤ 127): a word holds 2 products, |·| ≤ 16002, so two chunk groups'
// words add in int16 without overflow (≤ 32004) before one vpmaddwd against
// ones (or the rows' scales) widens them into int32 lanes. IQ4_XS's levels
// go in as |level| against x given level's sign (vpsignb): a word's 2
// products reach 32258, so each word widens alone.
//
// Panels: a 32-byte load holds 8 rows' (a quarter's) 4 bytes of a chunk, a
// row per int32 lane; a 6-bit code is the chunk's low or high nibble or'ed
// with two bits of the qh chunk moved to bits 4-5. No reduction across rows.
// Rows (file layout): a row at a time, its 32 codes of block b in a register
// as the file holds them, a super-block's 8 blocks' lanes reduced at once.
//
// Measured (Zen 4 under RIDGE_ISA=avx2, 2 threads, a shared noisy host): one
// token on repacked weights streams at ~60-75 % of a paired read, where the
// rows kernel this replaced streamed ~50-78 % (it kept a float per 4-element
// lane, other bits than AVX-512). The file-layout rows tile with 8 rows in
// lanes (a cross-row reduction per block) was bound by its arithmetic at
// ~16 GB/s a core; a row at a time with a super-block's blocks reduced at
// once streams 32-35 GB/s (2 threads) like the replaced kernel's 35-37, and
// 2-4 tokens 20-25 % slower than it (the codes decoded again per token).
// Prefill (BM_Prefill/Q6_K/512, per-call panels) 31-33 % -> 43-54 % of the
// int8 peak. IQ4_XS (Zen 5 under RIDGE_ISA=avx2, ridge bench, tinyllama):
// these panels against the float-per-lane rows tile they replaced, pp512
// 37 % -> 54-57 % of the int8 peak, tg64 51 -> 81-83 t/s (1.6 ×).
#include "ridge/kernels/simd_avx2.h"

#include <algorithm>
#include <cstring>

#include "ridge/kernels/kquant_group_scales_impl.h"
#include "ridge/kernels/kquant_rows_impl.h"
#include "ridge/kernels/matmul_isa.h"
#include "ridge/kernels/scratch.h"
#include "ridge/kernels/weight_panels.h"

namespace ridge::kernels::internal {
namespace {

constexpr int64_t kPanelRows = panels::kRows;  // 32
constexpr int kQuarterRows = 8;                 // rows of one int32-lane ymm
constexpr int kQuarters = 4;

template <int64_t kSuperBytes>
int64_t PanelBytes(int64_t n_cols) {
  return (n_cols / kQK_K) * kSuperBytes;
}

// Rows [r_begin, r_begin + 32) of w into a panel layout of weight_panels.h
// (q6k, q3k, q2k) of super_bytes a super-block: the file's 32-byte chunks at
// chunk_offset[c] of each block transposed, 8 rows' 4-byte group k to
// at(c, k) (+ the quarter's 32 bytes), then per_row(super, block, j) copies
// row j's scales and d (block: nullptr past w.n_rows, a row of zeros, whose
// outputs are never stored).
template <int kChunks, typename At, typename PerRow>
void PackGroupPanel(const MatView& w, int64_t r_begin, uint8_t* panel, int64_t super_bytes, int64_t file_block_bytes,
                    const int64_t (&chunk_offset)[kChunks], At at, PerRow per_row) {
  const int64_t n_super = w.n_cols / kQK_K;
  for (int64_t sb = 0; sb < n_super; ++sb) {
    uint8_t* out = panel + sb * super_bytes;
    for (int q = 0; q < kQuarters; ++q) {
      const uint8_t* rows[kQuarterRows];
      for (int i = 0; i < kQuarterRows; ++i) {
        const int64_t r = r_begin + q * kQuarterRows + i;
        rows[i] = r < w.n_rows ? w.data + r * w.row_bytes + sb * file_block_bytes : nullptr;
      }
      for (int c = 0; c < kChunks; ++c) {
        __m256i v[kQuarterRows];  // [k] = the 8 rows' group k of chunk c
        avx2::LoadTransposed8(rows, chunk_offset[c], v);
        for (int k = 0; k < 8; ++k)
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + at(c, k) + q * kQuarterRows * 4), v[k]);
      }
    }
    for (int64_t j = 0; j < kPanelRows; ++j) {
      const int64_t r = r_begin + j;
      per_row(out, r < w.n_rows ? w.data + r * w.row_bytes + sb * file_block_bytes : nullptr, j);
    }
  }
}

// A row's f16 at file offset `from` of block (0 for none) to `to`.
void CopyF16(const uint8_t* block, int64_t from, uint8_t* to) {
  if (block) std::memcpy(to, block + from, 2);
  else std::memset(to, 0, 2);
}

void PackPanel(const MatView& w, int64_t r_begin, uint8_t* panel) {
  using namespace panels::q6k;
  constexpr int64_t kChunkOffset[kFileChunks] = {0, 32, 64, 96, 128, 160};  // ql 0-3, qh 4-5
  PackGroupPanel(w, r_begin, panel, kSuperBytes, kFileBlockBytes, kChunkOffset, QuantAt,
                 [](uint8_t* out, const uint8_t* block, int64_t j) {
                   for (int64_t g = 0; g < kGroups; ++g)
                     out[kScaleOffset + g * kPanelRows + j] = block ? block[192 + g] : 0;
                   CopyF16(block, 208, out + kDOffset + 2 * j);
                 });
}

void PackQ3KPanel(const MatView& w, int64_t r_begin, uint8_t* panel) {
  using namespace panels::q3k;
  constexpr int64_t kChunkOffset[3] = {kFileQsOffset, kFileQsOffset + 32, 0};  // qs halves, hmask
  PackGroupPanel(w, r_begin, panel, kSuperBytes, kFileBlockBytes, kChunkOffset, QuantAt,
                 [](uint8_t* out, const uint8_t* block, int64_t j) {
                   for (int64_t b = 0; b < kScaleBytes; ++b)
                     out[kScaleOffset + b * kPanelRows + j] = block ? block[kFileScaleOffset + b] : 0;
                   CopyF16(block, kFileDOffset, out + kDOffset + 2 * j);
                 });
}

void PackQ2KPanel(const MatView& w, int64_t r_begin, uint8_t* panel) {
  using namespace panels::q2k;
  constexpr int64_t kChunkOffset[2] = {kFileQsOffset, kFileQsOffset + 32};  // qs halves
  PackGroupPanel(w, r_begin, panel, kSuperBytes, kFileBlockBytes, kChunkOffset, QuantAt,
                 [](uint8_t* out, const uint8_t* block, int64_t j) {
                   for (int64_t g = 0; g < kGroups; ++g) out[kScaleOffset + g * kPanelRows + j] = block ? block[g] : 0;
                   CopyF16(block, kFileDOffset, out + kDOffset + 2 * j);
                   CopyF16(block, kFileDminOffset, out + kDminOffset + 2 * j);
                 });
}

// IQ4_XS's rows [r_begin, r_begin + 32) of w into its panel layout (iq4xs);
// rows past w.n_rows are zeros. At load only: plain copies.
void PackIQ4XSPanel(const MatView& w, int64_t r_begin, uint8_t* panel) {
  using namespace panels::iq4xs;
  const int64_t n_super = w.n_cols / kQK_K;
  for (int64_t sb = 0; sb < n_super; ++sb) {
    uint8_t* out = panel + sb * kSuperBytes;
    for (int64_t j = 0; j < panels::kRows; ++j) {
      const int64_t r = r_begin + j;
      uint8_t block[kFileBlockBytes] = {};
      if (r < w.n_rows) std::memcpy(block, w.data + r * w.row_bytes + sb * kFileBlockBytes, kFileBlockBytes);
      std::memcpy(out + kDOffset + 2 * j, block, 2);
      for (int b = 0; b < 2; ++b) out[kScaleHOffset + b * panels::kRows + j] = block[kFileScaleHOffset + b];
      for (int b = 0; b < 4; ++b) out[kScaleLOffset + b * panels::kRows + j] = block[kFileScaleLOffset + b];
      for (int s = 0; s < 8; ++s)
        for (int k = 0; k < 4; ++k) std::memcpy(out + QuantAt(s, k) + 4 * j, block + kFileQsOffset + 16 * s + 4 * k, 4);
    }
  }
}

// The 6-bit codes of element set m (0..3) of 32 bytes: `ql` the bytes of ql
// chunk m % 2, `qh` those of the qh chunk; bits 0-3 from ql's low (m < 2) or
// high nibble, bits 4-5 from qh's bits 2m, 2m + 1. 16-bit shifts carry bits
// across bytes only into positions the masks drop.
template <int kM>
inline __attribute__((always_inline)) __m256i Codes(__m256i ql, __m256i qh) {
  const __m256i nibble = _mm256_set1_epi8(0x0f), top2 = _mm256_set1_epi8(0x30);
  const __m256i low = kM < 2 ? ql : _mm256_srli_epi16(ql, 4);
  const __m256i high = kM == 0 ? _mm256_slli_epi16(qh, 4)
                       : kM == 1 ? _mm256_slli_epi16(qh, 2)
                       : kM == 2 ? qh
                                 : _mm256_srli_epi16(qh, 2);
  return _mm256_or_si256(_mm256_and_si256(low, nibble), _mm256_and_si256(high, top2));
}

// The 3-bit codes of element set m (0..3) of file half h of 32 bytes: `qs`
// the bytes of qs chunk h, `hm` those of the hmask chunk; bits 0-1 from qs's
// bits 2m, 2m + 1, bit 2 from hm's bit 4h + m. 16-bit shifts carry bits
// across bytes only into positions the masks drop.
template <int kH, int kM>
inline __attribute__((always_inline)) __m256i Q3Codes(__m256i qs, __m256i hm) {
  constexpr int kShift = 4 * kH + kM - 2;  // hm's bit to bit 2
  const __m256i low = kM == 0 ? qs : _mm256_srli_epi16(qs, 2 * kM);
  const __m256i high = kShift < 0 ? _mm256_slli_epi16(hm, -kShift) : kShift == 0 ? hm : _mm256_srli_epi16(hm, kShift);
  return _mm256_or_si256(_mm256_and_si256(low, _mm256_set1_epi8(3)), _mm256_and_si256(high, _mm256_set1_epi8(4)));
}

// The 2-bit codes of element set m (0..3): bits 2m, 2m + 1 of qs.
template <int kM>
inline __attribute__((always_inline)) __m256i Q2Codes(__m256i qs) {
  return _mm256_and_si256(kM == 0 ? qs : _mm256_srli_epi16(qs, 2 * kM), _mm256_set1_epi8(3));
}

// IQ4_XS's signed levels of 8 rows × 4 elements: the low (kHigh false:
// elements 4k + i of the sub-block) or high nibbles (16 + 4k + i) of qs.
template <bool kHigh>
inline __attribute__((always_inline)) __m256i IQ4Codes(__m256i qs, __m256i levels) {
  return _mm256_shuffle_epi8(levels, _mm256_and_si256(kHigh ? _mm256_srli_epi16(qs, 4) : qs, _mm256_set1_epi8(0x0f)));
}

// vpmaddubsw of |level| against x carrying level's sign: per word the two
// products level·x of an element pair, summed, |·| ≤ 2·127·127 = 32258 (x is
// never −128), so a word holds no more than one pair.
inline __attribute__((always_inline)) __m256i SignedPairs(__m256i level, __m256i x) {
  return _mm256_maddubs_epi16(_mm256_abs_epi8(level), _mm256_sign_epi8(x, level));
}

// A token's 4 activation bytes at q, broadcast to every int32 lane.
inline __attribute__((always_inline)) __m256i Broadcast4(const int8_t* q) {
  int32_t x4;
  std::memcpy(&x4, q, 4);
  return _mm256_set1_epi32(x4);
}

// One group's Σ c·x of a quarter (8 rows in lanes) and one token: chunk
// groups k0 .. k0 + 3, each kNextGroup bytes past the last, codes(a, b) of
// the bytes at `a` and `b`. Two groups' words summed in int16 (≤ 32004),
// then widened.
template <int64_t kNextGroup, typename Codes>
inline __attribute__((always_inline)) __m256i GroupDot(const uint8_t* a, const uint8_t* b, const int8_t* x,
                                                       Codes codes) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i sum = _mm256_setzero_si256();
  for (int k = 0; k < 4; k += 2) {
    const __m256i p0 = _mm256_maddubs_epi16(codes(Load256(a), Load256(b)), Broadcast4(x));
    const __m256i p1 = _mm256_maddubs_epi16(codes(Load256(a + kNextGroup), Load256(b + kNextGroup)), Broadcast4(x + 4));
    sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_add_epi16(p0, p1), ones));
    a += 2 * kNextGroup;
    b += 2 * kNextGroup;
    x += 8;
  }
  return sum;
}

// A one-token tile's 4 quarters of accumulators into y, masked to the panel's valid rows.
void StoreQuarters(const __m256 acc[kQuarters], int64_t n_valid_rows, float* y) {
  for (int q = 0; q < kQuarters; ++q) {
    const int valid = static_cast<int>(std::clamp<int64_t>(n_valid_rows - q * kQuarterRows, 0, kQuarterRows));
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    _mm256_maskstore_ps(y + q * kQuarterRows, mask, acc[q]);
  }
}

// One panel × 1 token (decode), rows 0 .. 31: per super-block and file half,
// quarter by quarter, the element sets m in order (x's blocks in order for
// each row). All the super-block's bytes are read within its step, so its
// lines stream in once; the next super-block is prefetched on the way.
void Tile1(const uint8_t* panel, int64_t n_super, const ActLayout& layout, const uint8_t* acts, float* y,
           int64_t n_valid_rows) {
  using namespace panels::q6k;
  const TokenActs tok(acts, layout);
  __m256 acc[kQuarters];
  for (int q = 0; q < kQuarters; ++q) acc[q] = _mm256_setzero_ps();
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const uint8_t* p = panel + sb * kSuperBytes;
#pragma GCC unroll 1
    for (int fh = 0; fh < 2; ++fh) {
      const int64_t b0 = sb * 8 + 4 * fh;  // x's block of m = 0
#pragma GCC unroll 4
      for (int q = 0; q < kQuarters; ++q) {
        // The next super-block, 14 lines a step (its 6720 bytes over this one's
        // 8 steps), into L2: measured (BM_FewTokens/Q6_K_repacked/1, 1 thread,
        // Zen 4 under RIDGE_ISA=avx2) 33 % of a paired read into L1 (T0), 64 %
        // into L2, 2-4 super-blocks ahead no better; with none, 20-44 % (2 threads).
        const uint8_t* ahead = p + kSuperBytes + (fh * kQuarters + q) * 14 * 64;
#pragma GCC unroll 1
        for (int l = 0; l < 14; ++l) _mm_prefetch(reinterpret_cast<const char*>(ahead + 64 * l), _MM_HINT_T1);
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kDOffset + 16 * q)));
        const uint8_t* quant = p + q * kQuarterRows * 4;
        auto block = [&]<int kM>() {
          const int64_t b = b0 + kM;
          __m256i scaled;
          for (int gi = 0; gi < 2; ++gi) {
            const int k0 = 4 * gi;
            const __m256i s = _mm256_add_epi32(
                _mm256_set1_epi32(tok.gbias[2 * b + gi]),
                GroupDot<3 * kGroupBytes>(quant + QuantAt(2 * fh + kM % 2, k0), quant + QuantAt(4 + fh, k0),
                         tok.q + b * kActBlock + 4 * k0, [](__m256i ql, __m256i qh) { return Codes<kM>(ql, qh); }));
            const int64_t g = 8 * fh + 2 * kM + gi;  // the super-block's group
            const __m256i sc = _mm256_cvtepi8_epi32(_mm_loadl_epi64(
                reinterpret_cast<const __m128i*>(p + kScaleOffset + g * kPanelRows + q * kQuarterRows)));
            const __m256i si = _mm256_mullo_epi32(s, sc);
            scaled = gi == 0 ? si : _mm256_add_epi32(scaled, si);
          }
          acc[q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(scaled), _mm256_mul_ps(d, _mm256_set1_ps(tok.d[b])), acc[q]);
        };
        block.template operator()<0>();
        block.template operator()<1>();
        block.template operator()<2>();
        block.template operator()<3>();
      }
    }
  }
  StoreQuarters(acc, n_valid_rows, y);
}

// Q3_K's or Q2_K's panel × 1 token (P: Q3KPanels, Q2KPanels below): Tile1's
// steps and order, the scales (and Q2_K's mins, each block's fma followed by
// its two groups') decoded a super-block at a time, a file half's codes from
// its qs chunk (and Q3_K's hmask chunk; the half a template argument: each
// code's hmask bit a fixed shift away).
template <typename P>
void SmallCodesTile1(const uint8_t* panel, int64_t n_super, const ActLayout& layout, const uint8_t* acts, float* y,
                     int64_t n_valid_rows) {
  constexpr int64_t kLinesPerStep = (P::kSuperBytes / 64 + 7) / 8;  // Q3_K 7, Q2_K 6
  const TokenActs tok(acts, layout);
  __m256 acc[kQuarters];
  for (int q = 0; q < kQuarters; ++q) acc[q] = _mm256_setzero_ps();
  GroupScales scales;
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const uint8_t* p = panel + sb * P::kSuperBytes;
    P::DecodeScales(p, scales);
    auto half = [&]<int kH>() {
      const int64_t b0 = sb * 8 + 4 * kH;  // x's block of m = 0
#pragma GCC unroll 4
      for (int q = 0; q < kQuarters; ++q) {
        // The next super-block into L2, as Tile1, over this one's 8 steps.
        const uint8_t* ahead = p + P::kSuperBytes + (kH * kQuarters + q) * kLinesPerStep * 64;
#pragma GCC unroll 1
        for (int l = 0; l < kLinesPerStep; ++l)
          _mm_prefetch(reinterpret_cast<const char*>(ahead + 64 * l), _MM_HINT_T1);
        static_assert(panels::q3k::kDOffset == 0 && panels::q2k::kDOffset == 0);
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * q)));
        const uint8_t* quant = p + q * kQuarterRows * 4;
        auto block = [&]<int kM>() {
          const int64_t b = b0 + kM;
          __m256i scaled;
          for (int gi = 0; gi < 2; ++gi) {
            const int k0 = 4 * gi;
            const __m256i s =
                _mm256_add_epi32(_mm256_set1_epi32(P::Bias(tok.gbias[2 * b + gi])),
                                 GroupDot<P::kNextGroup>(
                                     quant + P::QsAt(kH, k0), quant + P::HmAt(kH, k0), tok.q + b * kActBlock + 4 * k0,
                                     [](__m256i qs, __m256i hm) { return P::template Codes<kH, kM>(qs, hm); }));
            const int64_t g = 8 * kH + 2 * kM + gi;  // the super-block's group
            const __m256i sc = _mm256_cvtepi8_epi32(
                _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales.sc + g * kPanelRows + q * kQuarterRows)));
            const __m256i si = _mm256_mullo_epi32(s, sc);
            scaled = gi == 0 ? si : _mm256_add_epi32(scaled, si);
          }
          acc[q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(scaled), _mm256_mul_ps(d, _mm256_set1_ps(tok.d[b])), acc[q]);
          if constexpr (P::kMins) {
            for (int gi = 0; gi < 2; ++gi) {
              const int64_t g = 8 * kH + 2 * kM + gi;
              acc[q] = _mm256_fnmadd_ps(_mm256_load_ps(scales.mins + g * kPanelRows + q * kQuarterRows),
                                        _mm256_set1_ps(tok.gsum[2 * b + gi]), acc[q]);
            }
          }
        };
        block.template operator()<0>();
        block.template operator()<1>();
        block.template operator()<2>();
        block.template operator()<3>();
      }
    };
    half.template operator()<0>();
    half.template operator()<1>();
  }
  StoreQuarters(acc, n_valid_rows, y);
}

// IQ4_XS's panel × 1 token: Tile1's steps, a sub-block's two groups (one
// scale: sc·(S_2s + S_2s+1) is the same integer as sc·S_2s + sc·S_2s+1) in
// one register per quarter, their words scaled in the widening vpmaddwd.
void IQ4XSTile1(const uint8_t* panel, int64_t n_super, const ActLayout& layout, const uint8_t* acts, float* y,
                int64_t n_valid_rows) {
  using namespace panels::iq4xs;
  constexpr int64_t kLines = kSuperBytes / 64;  // 68
  static_assert(kSuperBytes % 64 == 0);
  const TokenActs tok(acts, layout);
  const __m256i levels = IQ4Levels256();
  __m256 acc[kQuarters];
  for (int q = 0; q < kQuarters; ++q) acc[q] = _mm256_setzero_ps();
  GroupScales scales;
  for (int64_t sb = 0; sb < n_super; ++sb) {
    const uint8_t* p = panel + sb * kSuperBytes;
    DecodeIQ4XSScales(p, scales);
#pragma GCC unroll 1
    for (int s = 0; s < 8; ++s) {
      // The next super-block into L2, as Tile1, over this one's 8 steps.
      const uint8_t* ahead = p + kSuperBytes;
#pragma GCC unroll 1
      for (int64_t l = s * kLines / 8; l < (s + 1) * kLines / 8; ++l)
        _mm_prefetch(reinterpret_cast<const char*>(ahead + 64 * l), _MM_HINT_T1);
      const int64_t b = sb * 8 + s;  // x's 32-block
      const int8_t* x = tok.q + b * kActBlock;
#pragma GCC unroll 4
      for (int q = 0; q < kQuarters; ++q) {
        const __m128i sc8 =
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(scales.sc + 2 * s * kPanelRows + q * kQuarterRows));
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(sc8, sc8));  // a row's sc in both words
        __m256i sum = _mm256_setzero_si256();
#pragma GCC unroll 4
        for (int k = 0; k < 4; ++k) {
          const __m256i qs = Load256(p + QuantAt(s, k) + q * kQuarterRows * 4);
          sum = _mm256_add_epi32(
              sum, _mm256_madd_epi16(SignedPairs(IQ4Codes<false>(qs, levels), Broadcast4(x + 4 * k)), sc16));
          sum = _mm256_add_epi32(
              sum, _mm256_madd_epi16(SignedPairs(IQ4Codes<true>(qs, levels), Broadcast4(x + 16 + 4 * k)), sc16));
        }
        const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kDOffset + 16 * q)));
        acc[q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_mul_ps(d, _mm256_set1_ps(tok.d[b])), acc[q]);
      }
    }
  }
  StoreQuarters(acc, n_valid_rows, y);
}

// From 5 tokens on, a stretch of the panel's codes is decoded once
// (weight_panels.h, q6k::kCodeBlockBytes: the layout AVX-512 decodes into)
// and every token multiplied against the decoded bytes, instead of decoding
// them again for each 4 tokens.
// codes[(sb − sb0)·8 + fh·4 + m] ← the codes of 32-block m of file half fh,
// super-blocks [sb0, sb_end) of the panel.
void DecodeStretch(const uint8_t* panel, int64_t sb0, int64_t sb_end, uint8_t* codes) {
  using namespace panels::q6k;
  for (int64_t sb = sb0; sb < sb_end; ++sb) {
    const uint8_t* p = panel + sb * kSuperBytes;
    for (int fh = 0; fh < 2; ++fh) {
      uint8_t* out = codes + ((sb - sb0) * 8 + 4 * fh) * kCodeBlockBytes;
      for (int k = 0; k < 8; ++k) {
        for (int q = 0; q < kQuarters; ++q) {
          const uint8_t* at = p + QuantAt(2 * fh, k) + q * kQuarterRows * 4;
          const __m256i a = Load256(at), b = Load256(at + kGroupBytes), hb = Load256(at + 2 * kGroupBytes);
          auto* o = reinterpret_cast<__m256i*>(out + (k * kQuarters + q) * 32);
          _mm256_store_si256(o + 0 * kCodeBlockBytes / 32, Codes<0>(a, hb));
          _mm256_store_si256(o + 1 * kCodeBlockBytes / 32, Codes<1>(b, hb));
          _mm256_store_si256(o + 2 * kCodeBlockBytes / 32, Codes<2>(a, hb));
          _mm256_store_si256(o + 3 * kCodeBlockBytes / 32, Codes<3>(b, hb));
        }
      }
    }
  }
}

// Q3_K's and Q2_K's DecodeStretch: the same code layout from their panels
// (codes 0..7, 0..3), and scales[sb − sb0] ← each super-block's decoded
// scales (and mins). P: Q3KPanels, Q2KPanels below.
template <typename P>
void SmallCodesDecodeStretch(const uint8_t* panel, int64_t sb0, int64_t sb_end, uint8_t* codes, GroupScales* scales) {
  using panels::q6k::kCodeBlockBytes;
  for (int64_t sb = sb0; sb < sb_end; ++sb) {
    const uint8_t* p = panel + sb * P::kSuperBytes;
    P::DecodeScales(p, scales[sb - sb0]);
    uint8_t* out = codes + (sb - sb0) * 8 * kCodeBlockBytes;
    for (int k = 0; k < 8; ++k) {
      for (int q = 0; q < kQuarters; ++q) {
        const int64_t rows = q * kQuarterRows * 4;
        const __m256i qs0 = Load256(p + P::QsAt(0, k) + rows), qs1 = Load256(p + P::QsAt(1, k) + rows);
        const __m256i hm = Load256(p + P::HmAt(0, k) + rows);
        auto* o = reinterpret_cast<__m256i*>(out + (k * kQuarters + q) * 32);
        _mm256_store_si256(o + 0 * kCodeBlockBytes / 32, P::template Codes<0, 0>(qs0, hm));
        _mm256_store_si256(o + 1 * kCodeBlockBytes / 32, P::template Codes<0, 1>(qs0, hm));
        _mm256_store_si256(o + 2 * kCodeBlockBytes / 32, P::template Codes<0, 2>(qs0, hm));
        _mm256_store_si256(o + 3 * kCodeBlockBytes / 32, P::template Codes<0, 3>(qs0, hm));
        _mm256_store_si256(o + 4 * kCodeBlockBytes / 32, P::template Codes<1, 0>(qs1, hm));
        _mm256_store_si256(o + 5 * kCodeBlockBytes / 32, P::template Codes<1, 1>(qs1, hm));
        _mm256_store_si256(o + 6 * kCodeBlockBytes / 32, P::template Codes<1, 2>(qs1, hm));
        _mm256_store_si256(o + 7 * kCodeBlockBytes / 32, P::template Codes<1, 3>(qs1, hm));
      }
    }
  }
}

// IQ4_XS's DecodeStretch: the signed levels of sub-block s in the same code
// layout (element set k < 4: the low nibbles of group k, 4 + k: its high
// nibbles), and scales[sb − sb0] ← each super-block's decoded scales.
void IQ4XSDecodeStretch(const uint8_t* panel, int64_t sb0, int64_t sb_end, uint8_t* codes, GroupScales* scales) {
  using namespace panels::iq4xs;
  using panels::q6k::kCodeBlockBytes;
  const __m256i levels = IQ4Levels256();
  for (int64_t sb = sb0; sb < sb_end; ++sb) {
    const uint8_t* p = panel + sb * kSuperBytes;
    DecodeIQ4XSScales(p, scales[sb - sb0]);
    for (int s = 0; s < 8; ++s) {
      uint8_t* out = codes + ((sb - sb0) * 8 + s) * kCodeBlockBytes;
      for (int k = 0; k < 4; ++k)
        for (int q = 0; q < kQuarters; ++q) {
          const __m256i qs = Load256(p + QuantAt(s, k) + q * kQuarterRows * 4);
          _mm256_store_si256(reinterpret_cast<__m256i*>(out + (k * kQuarters + q) * 32), IQ4Codes<false>(qs, levels));
          _mm256_store_si256(reinterpret_cast<__m256i*>(out + ((4 + k) * kQuarters + q) * 32),
                             IQ4Codes<true>(qs, levels));
        }
    }
  }
}

// The tiles' dot of a row's element sets k, k + 1 against x, x4 (a token's
// 4 bytes of each, broadcast), scaled by the row's sc in both words of
// sc16: i + sc·Σ c·x of the 8 products.
// Codes ≤ 63 (unsigned): two pair sums add in int16 (≤ 32004), then widen.
struct SmallCodesDot {
  static __m256i DotAdd(__m256i i, __m256i c0, __m256i c1, __m256i x, __m256i x4, __m256i sc16) {
    return _mm256_add_epi32(
        i, _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(c0, x), _mm256_maddubs_epi16(c1, x4)), sc16));
  }
};
// Signed IQ4 levels: each pair sum alone fills a word (SignedPairs), so each widens.
struct SignedLevelsDot {
  static __m256i DotAdd(__m256i i, __m256i c0, __m256i c1, __m256i x, __m256i x4, __m256i sc16) {
    return _mm256_add_epi32(_mm256_add_epi32(i, _mm256_madd_epi16(SignedPairs(c0, x), sc16)),
                            _mm256_madd_epi16(SignedPairs(c1, x4), sc16));
  }
};

// The four types' panels as the shared steps below see them: the facts of
// kquant_group_scales_impl.h, their codes, dot, decode and one-token tiles.
struct Q6KPanels : Q6KPanelFacts, SmallCodesDot {
  static void Decode(const uint8_t* panel, int64_t sb0, int64_t sb_end, uint8_t* codes, GroupScales* /*scales*/) {
    DecodeStretch(panel, sb0, sb_end, codes);
  }
  static constexpr auto kTile1 = Tile1;
};
struct Q3KPanels : Q3KPanelFacts, SmallCodesDot {
  template <int kH, int kM>
  static __m256i Codes(__m256i qs, __m256i hm) { return Q3Codes<kH, kM>(qs, hm); }
  static constexpr auto Decode = SmallCodesDecodeStretch<Q3KPanels>;
  static constexpr auto kTile1 = SmallCodesTile1<Q3KPanels>;
};
struct Q2KPanels : Q2KPanelFacts, SmallCodesDot {
  template <int kH, int kM>
  static __m256i Codes(__m256i qs, __m256i /*no hmask*/) { return Q2Codes<kM>(qs); }
  static constexpr auto Decode = SmallCodesDecodeStretch<Q2KPanels>;
  static constexpr auto kTile1 = SmallCodesTile1<Q2KPanels>;
};
struct IQ4XSPanels : IQ4XSPanelFacts, SignedLevelsDot {
  static int32_t Bias(int32_t /*gbias*/) { return 0; }  // signed levels: the sums are Σ level·x already
  static constexpr auto Decode = IQ4XSDecodeStretch;
  static constexpr auto kTile1 = IQ4XSTile1;
};

// Quarter q × kT tokens × the panel's super-blocks [sb0, sb_end), from their
// decoded codes (and Q3_K's and Q2_K's decoded scales and mins, P::kMins).
// The group scale goes into the widening vpmaddwd (each row's
// sc in both words of its lane) and −z·Σx·sc starts the sum, so one
// register per token holds I_b: the same integer as
// sc_{2b}·S_{2b} + sc_{2b+1}·S_{2b+1} (every partial sum < 2²⁶), in fewer
// registers than the S of each group (16 ymm: acc and I_b of 4 tokens,
// codes, activations). acc starts from `keep` (sb0 > 0) or 0 and ends in
// `keep`, or after the last stretch in y (masked to the panel's valid
// rows), so the stretches continue each row's one fma chain exactly. keep:
// the tile's tokens' 32 accumulators, [kT][32 rows], contiguous (see
// PanelMatMul).
template <typename P, int kT>
void TileDecoded(const uint8_t* panel, const uint8_t* codes, const GroupScales* scales, int64_t sb0, int64_t sb_end,
                 int q,
                 const ActLayout& layout, const uint8_t* acts, int64_t act_stride, float* y, int64_t y_stride,
                 int64_t n_valid_rows, float* keep, bool last) {
  using panels::q6k::kCodeBlockBytes, panels::q6k::kDOffset;
  static_assert(panels::q3k::kDOffset == kDOffset && panels::q2k::kDOffset == kDOffset &&
                panels::iq4xs::kDOffset == kDOffset);
  TokenActs tok[kT];
  for (int t = 0; t < kT; ++t) tok[t] = TokenActs(acts + t * act_stride, layout);
  const int valid = static_cast<int>(std::clamp<int64_t>(n_valid_rows - q * kQuarterRows, 0, kQuarterRows));
  const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  float* yq = y + q * kQuarterRows;
  __m256 acc[kT];
  float* kq = keep + q * kQuarterRows;
  for (int t = 0; t < kT; ++t) acc[t] = sb0 == 0 ? _mm256_setzero_ps() : _mm256_load_ps(kq + t * kPanelRows);
  for (int64_t sb = sb0; sb < sb_end; ++sb) {
    const uint8_t* p = panel + sb * P::kSuperBytes;
    const GroupScales& decoded = scales[sb - sb0];
    const int8_t* sc_super = P::Scales(p, decoded);
    const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + kDOffset + 16 * q)));
#pragma GCC unroll 1
    for (int j = 0; j < 8; ++j) {  // the super-block's 32-blocks: file half j / 4, element set j % 4
      const int64_t b = sb * 8 + j;  // x's 32-block
      const uint8_t* c = codes + ((sb - sb0) * 8 + j) * kCodeBlockBytes + q * 32;
      __m256i sc32[2], sc16[2];  // the rows' scales of groups 2b, 2b + 1
      for (int gi = 0; gi < 2; ++gi) {
        const int64_t g = 8 * (j / 4) + 2 * (j % 4) + gi;
        const __m128i bytes =
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc_super + g * kPanelRows + q * kQuarterRows));
        sc32[gi] = _mm256_cvtepi8_epi32(bytes);
        sc16[gi] = _mm256_cvtepi8_epi16(_mm_unpacklo_epi8(bytes, bytes));
      }
      __m256i i_b[kT];
      for (int t = 0; t < kT; ++t)
        i_b[t] = _mm256_add_epi32(_mm256_mullo_epi32(_mm256_set1_epi32(P::Bias(tok[t].gbias[2 * b])), sc32[0]),
                                  _mm256_mullo_epi32(_mm256_set1_epi32(P::Bias(tok[t].gbias[2 * b + 1])), sc32[1]));
#pragma GCC unroll 4
      for (int k = 0; k < 8; k += 2) {
        const __m256i c0 = Load256(c + k * kQuarters * 32), c1 = Load256(c + (k + 1) * kQuarters * 32);
#pragma GCC unroll 4
        for (int t = 0; t < kT; ++t) {
          const int8_t* x = tok[t].q + b * kActBlock + 4 * k;
          i_b[t] = P::DotAdd(i_b[t], c0, c1, Broadcast4(x), Broadcast4(x + 4), sc16[k / 4]);
        }
      }
      for (int t = 0; t < kT; ++t)
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(i_b[t]), _mm256_mul_ps(d, _mm256_set1_ps(tok[t].d[b])), acc[t]);
      if constexpr (P::kMins) {
        for (int gi = 0; gi < 2; ++gi) {
          const __m256 mins = _mm256_load_ps(decoded.mins + (2 * j + gi) * kPanelRows + q * kQuarterRows);
          for (int t = 0; t < kT; ++t)
            acc[t] = _mm256_fnmadd_ps(mins, _mm256_set1_ps(tok[t].gsum[2 * b + gi]), acc[t]);
        }
      }
    }
  }
  for (int t = 0; t < kT; ++t) {
    if (last) _mm256_maskstore_ps(yq + t * y_stride, mask, acc[t]);
    else _mm256_store_ps(kq + t * kPanelRows, acc[t]);
  }
}

// One panel × every token. Up to 4 tokens (decode, speculation's verifying
// passes) run Tile1 once per token: the panel streams from memory once and is
// read again from L2. From 5 tokens on, a stretch of decoded codes at a time,
// one quarter × up to 4 tokens a tile (EvenTokenTiles), where arithmetic, not
// memory, bounds it.
template <typename P>
void PanelMatMul(const uint8_t* panel, int64_t n_cols, int64_t n_valid_rows, const ActView& acts, int64_t n_tokens,
                 float* y, int64_t y_stride, const PanelPrefetch& next) {
  using panels::q6k::kCodeBlockBytes, panels::q6k::kStretchSuper;
  const ActLayout layout(n_cols);
  const int64_t n = n_cols / kQK_K, s = acts.row_stride;
  if (n_tokens <= 4) {
    for (int64_t t = 0; t < n_tokens; ++t)
      P::kTile1(panel, n, layout, acts.data + t * s, y + t * y_stride, n_valid_rows);
    return;
  }
  // A panel streamed from memory (weights repacked at load): each tile
  // prefetches a slice of the next stretch's bytes into L2 (past the panel's
  // end, the next panel's), so that its read overlaps this stretch's tiles.
  // Without it a stretch's decode waited on memory and its tiles on nothing:
  // BM_Batched/Q6_K_memory/8 ran ~40 % below the same from cache (Zen 3).
  // Between stretches each token's 32 accumulators wait in a contiguous
  // scratch (128 bytes a token) rather than in y, whose rows lie a matrix's
  // width apart, as on AVX-512 (matmul_q6k_avx512.cc: 1.33-1.35 × in a host's
  // slow minutes). Here, the model's 512-token pass on Zen 5 under
  // RIDGE_ISA=avx2, arithmetic-bound at ~2.8 s: Q6_K 1.01 ×, Q3_K 1.02-1.05 ×.
  constexpr int64_t kStretchBytes = kStretchSuper * P::kSuperBytes;
  const bool streams = next.stream_ahead_bytes > 0;
  const TokenTiles tiles = EvenTokenTiles(n_tokens, 4);
  const int64_t n_tiles = tiles.n_tiles * kQuarters;
  alignas(64) uint8_t codes[kStretchSuper * 8 * kCodeBlockBytes];
  GroupScales scales[kStretchSuper];  // Q3_K's, Q2_K's
  thread_local ScratchBuffer keep_buffer;  // [n_tokens][32 rows]
  float* keep = reinterpret_cast<float*>(keep_buffer.Get(n_tokens * kPanelRows * 4));
  for (int64_t sb0 = 0; sb0 < n; sb0 += kStretchSuper) {
    const int64_t sb_end = std::min(n, sb0 + kStretchSuper);
    const bool last = sb_end == n;
    P::Decode(panel, sb0, sb_end, codes, scales);
    const uint8_t* ahead = panel + sb_end * P::kSuperBytes;
    int64_t tile = 0;
    for (int64_t t = 0, k = 0; k < tiles.n_tiles; ++k) {
      const int64_t size = tiles.TileSize(k);
      const uint8_t* a = acts.data + t * s;
      float* yt = y + t * y_stride;
      float* kt = keep + t * kPanelRows;
      for (int q = 0; q < kQuarters; ++q, ++tile) {
        if (streams) {
          for (int64_t l = tile * kStretchBytes / n_tiles / 64; l < (tile + 1) * kStretchBytes / n_tiles / 64; ++l)
            _mm_prefetch(reinterpret_cast<const char*>(ahead + 64 * l), _MM_HINT_T1);
        }
        const auto run = [&]<int kT>() {
          TileDecoded<P, kT>(panel, codes, scales, sb0, sb_end, q, layout, a, s, yt, y_stride, n_valid_rows, kt, last);
        };
        switch (size) {
          case 1: run.template operator()<1>(); break;
          case 2: run.template operator()<2>(); break;
          case 3: run.template operator()<3>(); break;
          default: run.template operator()<4>(); break;
        }
      }
      t += size;
    }
  }
}

// The rows tile's ISA steps (kquant_rows_impl.h, Q6KFileRows): codes ≤ 63
// against |x| ≤ 127, so vpmaddubsw's pair sums stay below 2¹⁵.
struct Q6KRowSteps {
  static __m256i DotAdd(__m256i acc, __m256i u8, __m256i s8) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u8, s8), _mm256_set1_epi16(1)));
  }
  static void SumHalvesOf8(const __m256i d[8], __m256i* low, __m256i* high) { avx2::SumHalvesOf8(d, low, high); }
  static void Transpose8x8(__m256 r[8]) { avx2::Transpose8x8(r); }
};
// IQ4_XS's (IQ4XSForm<0>: signed levels).
struct IQ4XSRowSteps : Q6KRowSteps {
  static __m256i DotAdd(__m256i acc, __m256i level, __m256i s8) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(SignedPairs(level, s8), _mm256_set1_epi16(1)));
  }
};

// One type's kernels: F its rows form and S their steps, P its panels, kPack
// their packer. The file layout takes per-call panels from 5 tokens on,
// repacked weights their panels always.
template <typename F, typename S, typename P, void (*kPack)(const MatView&, int64_t, uint8_t*)>
const TypeKernels* KernelsOf(bool repacked) {
  const ActPrep acts = Avx2KQuantActPrep();  // the K-quants' shared preparation
  const auto kernels = [&](int64_t panel_min_tokens) {
    return TypeKernels{acts,           4, Q6KFileRows<F, S>, acts, kPanelRows, panel_min_tokens,
                       PanelBytes<P::kSuperBytes>, kPack, PanelMatMul<P>};
  };
  static const TypeKernels k[2] = {kernels(5), kernels(1)};
  return &k[repacked];
}

}  // namespace

const TypeKernels* Avx2Q6KKernels(GgmlType type, bool repacked) {
  switch (type) {
    case GgmlType::kQ6_K: return KernelsOf<Q6KForm, Q6KRowSteps, Q6KPanels, PackPanel>(repacked);
    case GgmlType::kQ3_K: return KernelsOf<Q3KForm, Q6KRowSteps, Q3KPanels, PackQ3KPanel>(repacked);
    case GgmlType::kQ2_K: return KernelsOf<Q2KForm, Q6KRowSteps, Q2KPanels, PackQ2KPanel>(repacked);
    case GgmlType::kIQ4_XS: return KernelsOf<IQ4XSForm<0>, IQ4XSRowSteps, IQ4XSPanels, PackIQ4XSPanel>(repacked);
    default: return nullptr;
  }
}

}  // namespace ridge::kernels::internal
