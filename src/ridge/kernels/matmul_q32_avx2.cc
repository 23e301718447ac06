// Q4_1, Q5_0, Q5_1, IQ4_NL and MXFP4 MatMul for AVX2 (+ FMA, F16C): the rows path.
//
// Activations are quantized once per call to int8 blocks of 32 with a float
// scale d_x (as for Q8_0/Q4_0), and each block also keeps Σq_x and d_x·Σq_x.
// A weight block's codes become bytes in element order; vpmaddubsw (unsigned
// × signed → int16 pairs) and vpmaddwd (→ int32) give a row's block dot in 8
// exact lanes, which are reduced for 8 rows at once so that lane i holds row
// i's block sum. Per (row, token) the float steps are then, block by block:
//   Q4_1, Q5_1 (w = d·u + m, u <= 31): acc = fma(Σu·q_x, d·d_x, acc)
//                                       acc = fma(m, d_x·Σq_x, acc)
//   Q5_0 (w = d·(u − 16)):             acc = fma(Σu·q_x − 16·Σq_x, d·d_x, acc)
//   IQ4_NL (w = d·level[c], vpshufb):  |level| times q_x with the level's sign
//                                       (|level| <= 127 keeps each int16 pair
//                                       sum <= 32258: no saturation)
//                                       acc = fma(Σ level·q_x, d·d_x, acc)
//   MXFP4 (w = 2^(e−128)·level[c]):    as IQ4_NL, with MXFP4's levels (|level| <= 12)
//                                       and the E8M0 byte's scale
// The same steps for a (row, token) whatever else the call holds (batch
// invariance). Every type here has its panels (prefill, and every call on
// weights repacked at load) in matmul_quant_avx2.cc, which takes these
// kernels' rows path.
#include "ridge/kernels/simd_avx2.h"

#include <cstring>

#include "ridge/kernels/matmul_isa.h"

namespace ridge::kernels::internal {
namespace {

constexpr int kBlock = 32;

int64_t Align64(int64_t n) { return (n + 63) & ~int64_t{63}; }

// One prepared activation row of n_cols (a multiple of 32):
//   q     int8  [n_cols]
//   d     float [n_blocks]   scale of each block
//   qsum  int32 [n_blocks]   Σq of each block
//   dsum  float [n_blocks]   d·Σq of each block
struct ActLayout {
  int64_t n_blocks, d_off, qsum_off, dsum_off, bytes;
  explicit ActLayout(int64_t n_cols) {
    n_blocks = n_cols / kBlock;
    d_off = Align64(n_cols);
    qsum_off = d_off + Align64(n_blocks * 4);
    dsum_off = qsum_off + Align64(n_blocks * 4);
    bytes = dsum_off + Align64(n_blocks * 4);
  }
};

int64_t ActRowBytes(int64_t n_cols) { return ActLayout(n_cols).bytes; }

// One token's prepared activation row (ActLayout), its parts found.
struct TokenActs {
  const int8_t* q = nullptr;
  const float* d = nullptr;
  const int32_t* qsum = nullptr;
  const float* dsum = nullptr;
  TokenActs() = default;
  TokenActs(const uint8_t* row, const ActLayout& layout)
      : q(reinterpret_cast<const int8_t*>(row)),
        d(reinterpret_cast<const float*>(row + layout.d_off)),
        qsum(reinterpret_cast<const int32_t*>(row + layout.qsum_off)),
        dsum(reinterpret_cast<const float*>(row + layout.dsum_off)) {}
};

void PrepareActRow(const float* x, int64_t n_cols, uint8_t* dst) {
  const ActLayout layout(n_cols);
  auto* q = reinterpret_cast<int8_t*>(dst);
  auto* d = reinterpret_cast<float*>(dst + layout.d_off);
  auto* qsum = reinterpret_cast<int32_t*>(dst + layout.qsum_off);
  auto* dsum = reinterpret_cast<float*>(dst + layout.dsum_off);
  for (int64_t b = 0; b < layout.n_blocks; ++b) {
    __m256i lane_sums;
    const float scale = avx2::QuantizeBlock32(x + b * kBlock, q + b * kBlock, &lane_sums);
    const int32_t sum = avx2::HorizontalSumI32(lane_sums);
    d[b] = scale;
    qsum[b] = sum;
    dsum[b] = scale * static_cast<float>(sum);
  }
}

// 2^(e − 128) for the E8M0 bytes e at base + offsets[i], in lanes 0..7.
__m256 E8M0HalfOf8(const uint8_t* base, const int64_t offsets[8]) {
  return avx2::E8M0HalfOf8(_mm256_setr_epi32(base[offsets[0]], base[offsets[1]], base[offsets[2]], base[offsets[3]],
                                             base[offsets[4]], base[offsets[5]], base[offsets[6]], base[offsets[7]]));
}

// 16 packed bytes → 32 codes 0..15 in element order (low nibbles are
// elements 0..15, high nibbles 16..31).
__m256i Nibbles(const uint8_t* packed) {
  const __m128i p = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed));
  return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(p, 4), p), _mm256_set1_epi8(0x0f));
}

// 5-bit codes: the nibbles plus 16 where bit j of the 32-bit qh is set.
__m256i FiveBitCodes(const uint8_t* qh, const uint8_t* packed) {
  uint32_t high;
  std::memcpy(&high, qh, 4);
  // Byte j ← qh byte j / 8, then its bit j % 8.
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(high)),
      _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
  return _mm256_or_si256(Nibbles(packed), _mm256_and_si256(set, _mm256_set1_epi8(16)));
}

// Per type: where a block keeps its fields and its codes as the unsigned
// operand u of vpmaddubsw; kSignedCodes: u = |code| and x takes the code's
// sign; kBiasFactor: the offset of u from the signed code (Σ(u + k)·q =
// Σu·q + k·Σq); kHasMin: w = d·u + m (m the f16 after d); kE8M0Scale: the
// scale is MXFP4's exponent byte, not an f16.
struct Q4_1Codes {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ4_1);
  static constexpr int kBiasFactor = 0;
  static constexpr bool kHasMin = true, kSignedCodes = false, kE8M0Scale = false;
  static __m256i Codes(const uint8_t* block) { return Nibbles(block + 4); }
};

struct Q5_0Codes {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ5_0);
  static constexpr int kBiasFactor = -16;
  static constexpr bool kHasMin = false, kSignedCodes = false, kE8M0Scale = false;
  static __m256i Codes(const uint8_t* block) { return FiveBitCodes(block + 2, block + 6); }
};

struct Q5_1Codes {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ5_1);
  static constexpr int kBiasFactor = 0;
  static constexpr bool kHasMin = true, kSignedCodes = false, kE8M0Scale = false;
  static __m256i Codes(const uint8_t* block) { return FiveBitCodes(block + 4, block + 8); }
};

struct IQ4_NLCodes {
  static constexpr int64_t kBlockBytes = sizeof(BlockIQ4_NL);
  static constexpr int kBiasFactor = 0;
  static constexpr bool kHasMin = false, kSignedCodes = true, kE8M0Scale = false;
  static __m256i Codes(const uint8_t* block) {
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4NlLevels)));
    return _mm256_shuffle_epi8(levels, Nibbles(block + 2));
  }
};

struct MXFP4Codes {
  static constexpr int64_t kBlockBytes = sizeof(BlockMXFP4);
  static constexpr int kBiasFactor = 0;
  static constexpr bool kHasMin = false, kSignedCodes = true, kE8M0Scale = true;
  static __m256i Codes(const uint8_t* block) {
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kMxfp4Levels)));
    return _mm256_shuffle_epi8(levels, Nibbles(block + 1));
  }
};

// Prefetch (into L2) of the tile kPrefetchTiles ahead, one slice per block:
// 8 rows are 8 short streams the hardware prefetcher follows too late (see
// matmul_quant_avx512.cc).
constexpr int kPrefetchTiles = 2;
constexpr int kRowsPerTile = 8;

// Rows r .. r + 8 (rows past r_end read row r_end - 1 and are not stored);
// the 8 rows' float chains run in the lanes of one register.
template <typename Codes, int kT>
void RowsTile(const MatView& w, const ActLayout& layout, const ActView& acts, int64_t r, int64_t r_end, float* y,
              int64_t y_stride) {
  constexpr int64_t kBlockBytes = Codes::kBlockBytes;
  constexpr int kPrefetchLines = (kRowsPerTile * kBlockBytes + 63) / 64;
  const __m256i ones16 = _mm256_set1_epi16(1);
  const int n_valid = static_cast<int>(r_end - r < kRowsPerTile ? r_end - r : kRowsPerTile);
  const uint8_t* base = w.data + r * w.row_bytes;
  const uint8_t* ahead = base + kPrefetchTiles * kRowsPerTile * w.row_bytes;
  int64_t row_offsets[kRowsPerTile];  // byte offset of each row from `base`
  for (int i = 0; i < kRowsPerTile; ++i) row_offsets[i] = (i < n_valid ? i : n_valid - 1) * w.row_bytes;
  TokenActs x[kT];
  for (int t = 0; t < kT; ++t) x[t] = TokenActs(acts.data + t * acts.row_stride, layout);
  __m256 acc[kT];
  for (int t = 0; t < kT; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < layout.n_blocks; ++b) {
#pragma GCC unroll 8
    for (int p = 0; p < kPrefetchLines; ++p)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + b * kRowsPerTile * kBlockBytes + p * 64), _MM_HINT_T1);
    const uint8_t* blocks = base + b * kBlockBytes;
    const __m256 dw = Codes::kE8M0Scale ? E8M0HalfOf8(blocks, row_offsets) : avx2::ScalesOf8(blocks, row_offsets);
    __m256 mw;
    if constexpr (Codes::kHasMin) mw = avx2::ScalesOf8(blocks + 2, row_offsets);
    __m256i codes[kRowsPerTile];
#pragma GCC unroll 8
    for (int i = 0; i < kRowsPerTile; ++i) codes[i] = Codes::Codes(blocks + row_offsets[i]);
#pragma GCC unroll 4
    for (int t = 0; t < kT; ++t) {
      const __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[t].q + b * kBlock));
      __m256i dot[kRowsPerTile];
#pragma GCC unroll 8
      for (int i = 0; i < kRowsPerTile; ++i) {
        const __m256i wu = Codes::kSignedCodes ? _mm256_sign_epi8(codes[i], codes[i]) : codes[i];
        const __m256i xs = Codes::kSignedCodes ? _mm256_sign_epi8(xv, codes[i]) : xv;
        dot[i] = _mm256_madd_epi16(_mm256_maddubs_epi16(wu, xs), ones16);
      }
      __m256i sums = avx2::SumLanesOf8(dot);
      if constexpr (Codes::kBiasFactor != 0)
        sums = _mm256_add_epi32(sums, _mm256_set1_epi32(Codes::kBiasFactor * x[t].qsum[b]));
      acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sums), _mm256_mul_ps(dw, _mm256_set1_ps(x[t].d[b])), acc[t]);
      if constexpr (Codes::kHasMin) acc[t] = _mm256_fmadd_ps(mw, _mm256_set1_ps(x[t].dsum[b]), acc[t]);
    }
  }
  const __m256i valid = _mm256_cmpgt_epi32(_mm256_set1_epi32(n_valid), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (int t = 0; t < kT; ++t) _mm256_maskstore_ps(y + t * y_stride + r, valid, acc[t]);
}

template <typename Codes, int kT>
void RowsForTokens(const MatView& w, const ActView& acts, int64_t r_begin, int64_t r_end, float* y,
                   int64_t y_stride) {
  const ActLayout layout(w.n_cols);
  for (int64_t r = r_begin; r < r_end; r += kRowsPerTile)
    RowsTile<Codes, kT>(w, layout, acts, r, r_end, y, y_stride);
}

template <typename Codes>
void Rows(const MatView& w, const ActView& acts, int64_t n_tokens, int64_t r_begin, int64_t r_end, float* y,
          int64_t y_stride) {
  switch (n_tokens) {
    case 1: return RowsForTokens<Codes, 1>(w, acts, r_begin, r_end, y, y_stride);
    case 2: return RowsForTokens<Codes, 2>(w, acts, r_begin, r_end, y, y_stride);
    case 3: return RowsForTokens<Codes, 3>(w, acts, r_begin, r_end, y, y_stride);
    default: return RowsForTokens<Codes, 4>(w, acts, r_begin, r_end, y, y_stride);
  }
}

constexpr ActPrep kQuantActs{ActRowBytes, PrepareActRow};
template <typename Codes>
constexpr TypeKernels kRowsKernels = RowsOnlyKernels(kQuantActs, 4, Rows<Codes>);

}  // namespace

const TypeKernels* Avx2Q32Kernels(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_1: return &kRowsKernels<Q4_1Codes>;
    case GgmlType::kQ5_0: return &kRowsKernels<Q5_0Codes>;
    case GgmlType::kQ5_1: return &kRowsKernels<Q5_1Codes>;
    case GgmlType::kIQ4_NL: return &kRowsKernels<IQ4_NLCodes>;
    case GgmlType::kMXFP4: return &kRowsKernels<MXFP4Codes>;
    default: return nullptr;
  }
}

}  // namespace ridge::kernels::internal
