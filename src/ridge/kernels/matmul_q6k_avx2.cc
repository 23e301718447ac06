// Q6_K, Q3_K and Q2_K on AVX2 (+ FMA, F16C): the float steps of
// matmul_q6k_avx512.cc, so every path of both ISAs gives the same bits
// whichever layout, path or batch. Weights repacked at load into the panel
// layouts of weight_panels.h (q6k, q3k, q2k, packed here: an AVX-512 CPU
// runs these packers too) are multiplied in place by the panel tiles
// (kquant_panel_matmul_avx2_impl.h); weights in the file's layout (--mmap)
// take a rows tile for 1-4 tokens and panels packed per call from 5 on.
// IQ4_XS takes the same steps in matmul_iq4xs_avx2.cc.
//
// w = d·sc_g·(c − z) − dmin·m_g, 16 groups g of 16 elements with an int8
// scale: Q6_K's c 6-bit, z = 32; Q3_K's c = its 2 bits of qs with a bit of
// hmask above, z = 4, and sc its 6-bit scale − 32; Q2_K's c 2-bit, z = 0,
// sc 4-bit, and a 4-bit min m_g (the others have none). Each group's sum
// starts from −z·Σx of the group (from the activations' gbias, −32·Σx), so
// it is S_g = Σ(c − z)·x, exact. Steps per (row, token), x's 32-blocks b in
// order (d, dmin: b's super-block's):
//   I_b = sc_{2b}·S_{2b} + sc_{2b+1}·S_{2b+1}     exact int32 (|I_b| < 2²⁶)
//   acc = fma(float(I_b), d·d_x(b), acc)
//   acc = fnmadd(dmin·m_g, gsum_g, acc), g = 2b, 2b + 1   (Q2_K; gsum_g = d_x·Σx of g)
//
// Products: vpmaddubsw of codes (≤ 63, unsigned) against int8 activations
// (|x| ≤ 127): a word holds 2 products, |·| ≤ 16002, so two chunk groups'
// words add in int16 without overflow (≤ 32004) before one vpmaddwd against
// ones (or the rows' scales) widens them into int32 lanes.
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
// int8 peak.
#include "ridge/kernels/simd_avx2.h"

#include <algorithm>
#include <cstring>

#include "ridge/kernels/kquant_group_scales_impl.h"
#include "ridge/kernels/kquant_rows_impl.h"
#include "ridge/kernels/matmul_isa.h"
#include "ridge/kernels/weight_panels.h"
// After the two above (their helpers and scales).
#include "ridge/kernels/kquant_panel_matmul_avx2_impl.h"

namespace ridge::kernels::internal {
namespace {

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
          __m256i scaled[2];  // group 2b's and 2b + 1's sc·S
          for (int gi = 0; gi < 2; ++gi) {
            const int k0 = 4 * gi;
            const __m256i s = _mm256_add_epi32(
                _mm256_set1_epi32(tok.gbias[2 * b + gi]),
                GroupDot<3 * kGroupBytes>(quant + QuantAt(2 * fh + kM % 2, k0), quant + QuantAt(4 + fh, k0),
                         tok.q + b * kActBlock + 4 * k0, [](__m256i ql, __m256i qh) { return Codes<kM>(ql, qh); }));
            const int64_t g = 8 * fh + 2 * kM + gi;  // the super-block's group
            const __m256i sc = _mm256_cvtepi8_epi32(_mm_loadl_epi64(
                reinterpret_cast<const __m128i*>(p + kScaleOffset + g * kPanelRows + q * kQuarterRows)));
            scaled[gi] = _mm256_mullo_epi32(s, sc);
          }
          acc[q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(scaled[0], scaled[1])),
                                   _mm256_mul_ps(d, _mm256_set1_ps(tok.d[b])), acc[q]);
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
          __m256i scaled[2];  // group 2b's and 2b + 1's sc·S
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
            scaled[gi] = _mm256_mullo_epi32(s, sc);
          }
          acc[q] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_add_epi32(scaled[0], scaled[1])),
                                   _mm256_mul_ps(d, _mm256_set1_ps(tok.d[b])), acc[q]);
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

// From 2 tokens on, a stretch of the panel's codes is decoded once
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

// TileDecoded's DotAdd for codes ≤ 63 (unsigned): two pair sums add in int16
// (≤ 32004), then widen.
struct SmallCodesDot {
  static __m256i DotAdd(__m256i i, __m256i c0, __m256i c1, __m256i x, __m256i x4, __m256i sc16) {
    return _mm256_add_epi32(
        i, _mm256_madd_epi16(_mm256_add_epi16(_mm256_maddubs_epi16(c0, x), _mm256_maddubs_epi16(c1, x4)), sc16));
  }
};

// The three types' panels as the shared steps see them: the facts of
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
}  // namespace

const TypeKernels* Avx2Q6KKernels(GgmlType type, bool repacked) {
  switch (type) {
    case GgmlType::kQ6_K: return KernelsOf<Q6KForm, Q6KRowSteps, Q6KPanels, PackPanel>(repacked);
    case GgmlType::kQ3_K: return KernelsOf<Q3KForm, Q6KRowSteps, Q3KPanels, PackQ3KPanel>(repacked);
    case GgmlType::kQ2_K: return KernelsOf<Q2KForm, Q6KRowSteps, Q2KPanels, PackQ2KPanel>(repacked);
    case GgmlType::kIQ4_XS: return Avx2IQ4XSKernels(repacked);
    default: return nullptr;
  }
}

}  // namespace ridge::kernels::internal
