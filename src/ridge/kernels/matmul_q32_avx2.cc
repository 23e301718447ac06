// Q4_1, Q5_0, Q5_1 and IQ4_NL MatMul for AVX2 (+ FMA, F16C): the rows path.
//
// Activations are quantized once per call to int8 blocks of 32 with a float
// scale d_x (as for Q8_0/Q4_0), and each 4-byte lane of a block also keeps
// its Σq_x and d_x·Σq_x. A weight block's codes become bytes in element
// order and one vpmaddubsw (unsigned × signed → int16 pairs) + vpmaddwd
// (→ int32) per row and token gives 8 exact lane sums, whose float chains
// run lane by lane and are added up at the end:
//   Q4_1, Q5_1 (w = d·u + m, u <= 31): acc = fma(Σu·q_x, d·d_x, acc)
//                                       acc = fma(m, d_x·Σq_x, acc)
//   Q5_0 (w = d·(u − 16)):             acc = fma(Σu·q_x − 16·Σq_x, d·d_x, acc)
//   IQ4_NL (w = d·level[c], vpshufb):  |level| times q_x with the level's sign
//                                       (|level| <= 127 keeps each int16 pair
//                                       sum <= 32258: no saturation)
//                                       acc = fma(Σ level·q_x, d·d_x, acc)
// The same steps for a (row, token) whatever else the call holds (batch
// invariance). There is no panel path: prefill takes the rows path too.
#include <immintrin.h>

#include <cstring>

#include "ridge/kernels/matmul_isa.h"

namespace ridge::kernels::internal {
namespace {

constexpr int kBlock = 32;

int64_t Align64(int64_t n) { return (n + 63) & ~int64_t{63}; }

// One prepared activation row of n_cols (a multiple of 32):
//   q          int8  [n_cols]
//   d          float [n_blocks]
//   lane_qsum  int32 [n_blocks][8]   Σq of each 4-byte lane
//   lane_dsum  float [n_blocks][8]   d·Σq of each 4-byte lane
struct ActLayout {
  int64_t n_blocks, d_off, lane_qsum_off, lane_dsum_off, bytes;
  explicit ActLayout(int64_t n_cols) {
    n_blocks = n_cols / kBlock;
    d_off = Align64(n_cols);
    lane_qsum_off = d_off + Align64(n_blocks * 4);
    lane_dsum_off = lane_qsum_off + Align64(n_blocks * 32);
    bytes = lane_dsum_off + Align64(n_blocks * 32);
  }
};

int64_t ActRowBytes(int64_t n_cols) { return ActLayout(n_cols).bytes; }

float HorizontalMax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

void PrepareActRow(const float* x, int64_t n_cols, uint8_t* dst) {
  const ActLayout layout(n_cols);
  auto* q = reinterpret_cast<int8_t*>(dst);
  auto* d = reinterpret_cast<float*>(dst + layout.d_off);
  auto* lane_qsum = reinterpret_cast<int32_t*>(dst + layout.lane_qsum_off);
  auto* lane_dsum = reinterpret_cast<float*>(dst + layout.lane_dsum_off);
  const __m256 sign_mask = _mm256_set1_ps(-0.0f);
  const __m256i ones8 = _mm256_set1_epi8(1);
  const __m256i ones16 = _mm256_set1_epi16(1);
  for (int64_t b = 0; b < layout.n_blocks; ++b) {
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm256_loadu_ps(x + b * kBlock + 8 * i);
      amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign_mask, v[i]));
    }
    const float scale = HorizontalMax(amax) / 127.0f;
    const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
    d[b] = scale;
    const __m256 vinv = _mm256_set1_ps(inv);
    __m256i i32[4];
    for (int i = 0; i < 4; ++i) i32[i] = _mm256_cvtps_epi32(_mm256_mul_ps(v[i], vinv));  // nearest even
    // Pack 4 × 8 int32 → 32 int8 in order (packs interleave 128-bit lanes; permute fixes it).
    const __m256i i16 = _mm256_packs_epi32(i32[0], i32[1]);
    const __m256i i16b = _mm256_packs_epi32(i32[2], i32[3]);
    __m256i i8 = _mm256_packs_epi16(i16, i16b);
    i8 = _mm256_permutevar8x32_epi32(i8, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(q + b * kBlock), i8);
    const __m256i sums = _mm256_madd_epi16(_mm256_maddubs_epi16(ones8, i8), ones16);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(lane_qsum + b * 8), sums);
    _mm256_storeu_ps(lane_dsum + b * 8, _mm256_mul_ps(_mm256_set1_ps(scale), _mm256_cvtepi32_ps(sums)));
  }
}

float F16At(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
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
// Σu·q + k·Σq); kHasMin: w = d·u + m (m the f16 after d).
struct Q4_1Codes {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ4_1);
  static constexpr int kBiasFactor = 0;
  static constexpr bool kHasMin = true, kSignedCodes = false;
  static __m256i Codes(const uint8_t* block) { return Nibbles(block + 4); }
};

struct Q5_0Codes {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ5_0);
  static constexpr int kBiasFactor = -16;
  static constexpr bool kHasMin = false, kSignedCodes = false;
  static __m256i Codes(const uint8_t* block) { return FiveBitCodes(block + 2, block + 6); }
};

struct Q5_1Codes {
  static constexpr int64_t kBlockBytes = sizeof(BlockQ5_1);
  static constexpr int kBiasFactor = 0;
  static constexpr bool kHasMin = true, kSignedCodes = false;
  static __m256i Codes(const uint8_t* block) { return FiveBitCodes(block + 4, block + 8); }
};

struct IQ4_NLCodes {
  static constexpr int64_t kBlockBytes = sizeof(BlockIQ4_NL);
  static constexpr int kBiasFactor = 0;
  static constexpr bool kHasMin = false, kSignedCodes = true;
  static __m256i Codes(const uint8_t* block) {
    const __m256i levels = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4NlLevels)));
    return _mm256_shuffle_epi8(levels, Nibbles(block + 2));
  }
};

// kR rows × kT tokens; also prefetches (into L2) the tile kPrefetchTiles
// ahead, a slice per block (see matmul_quant_avx512.cc for why).
constexpr int kPrefetchTiles = 2;

template <typename Codes, int kR, int kT>
void RowsTile(const MatView& w, const ActLayout& layout, const ActView& acts, int64_t r, float* y,
              int64_t y_stride) {
  constexpr int64_t kBlockBytes = Codes::kBlockBytes;
  constexpr int kPrefetchLines = (kR * kBlockBytes + 63) / 64;
  const __m256i ones16 = _mm256_set1_epi16(1);
  const uint8_t* rows[kR];
  for (int i = 0; i < kR; ++i) rows[i] = w.data + (r + i) * w.row_bytes;
  const uint8_t* ahead = rows[0] + kPrefetchTiles * kR * w.row_bytes;
  const int8_t* xq[kT];
  const float* xd[kT];
  const int32_t* xqsum[kT];
  const float* xdsum[kT];
  for (int t = 0; t < kT; ++t) {
    const uint8_t* a = acts.data + t * acts.row_stride;
    xq[t] = reinterpret_cast<const int8_t*>(a);
    xd[t] = reinterpret_cast<const float*>(a + layout.d_off);
    xqsum[t] = reinterpret_cast<const int32_t*>(a + layout.lane_qsum_off);
    xdsum[t] = reinterpret_cast<const float*>(a + layout.lane_dsum_off);
  }
  __m256 acc[kR][kT];
  for (int i = 0; i < kR; ++i)
    for (int t = 0; t < kT; ++t) acc[i][t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < layout.n_blocks; ++b) {
#pragma GCC unroll 8
    for (int p = 0; p < kPrefetchLines; ++p)
      _mm_prefetch(reinterpret_cast<const char*>(ahead + b * kR * kBlockBytes + p * 64), _MM_HINT_T1);
#pragma GCC unroll 4
    for (int i = 0; i < kR; ++i) {
      const uint8_t* block = rows[i] + b * kBlockBytes;
      const __m256 dw = _mm256_set1_ps(F16At(block));
      __m256 mw;
      if constexpr (Codes::kHasMin) mw = _mm256_set1_ps(F16At(block + 2));
      const __m256i codes = Codes::Codes(block);
      const __m256i wu = Codes::kSignedCodes ? _mm256_sign_epi8(codes, codes) : codes;
#pragma GCC unroll 4
      for (int t = 0; t < kT; ++t) {
        __m256i xv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[t] + b * kBlock));
        if constexpr (Codes::kSignedCodes) xv = _mm256_sign_epi8(xv, codes);
        __m256i dot = _mm256_madd_epi16(_mm256_maddubs_epi16(wu, xv), ones16);
        if constexpr (Codes::kBiasFactor != 0) {
          const __m256i qsum = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xqsum[t] + b * 8));
          dot = _mm256_add_epi32(dot, _mm256_mullo_epi32(qsum, _mm256_set1_epi32(Codes::kBiasFactor)));
        }
        acc[i][t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_mul_ps(dw, _mm256_set1_ps(xd[t][b])), acc[i][t]);
        if constexpr (Codes::kHasMin) acc[i][t] = _mm256_fmadd_ps(mw, _mm256_loadu_ps(xdsum[t] + b * 8), acc[i][t]);
      }
    }
  }
  for (int i = 0; i < kR; ++i)
    for (int t = 0; t < kT; ++t) y[t * y_stride + r + i] = HorizontalSum(acc[i][t]);
}

template <typename Codes, int kT>
void RowsForTokens(const MatView& w, const ActView& acts, int64_t r_begin, int64_t r_end, float* y,
                   int64_t y_stride) {
  constexpr int kR = kT == 1 ? 4 : 2;
  const ActLayout layout(w.n_cols);
  int64_t r = r_begin;
  for (; r + kR <= r_end; r += kR) RowsTile<Codes, kR, kT>(w, layout, acts, r, y, y_stride);
  for (; r < r_end; ++r) RowsTile<Codes, 1, kT>(w, layout, acts, r, y, y_stride);
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
constexpr ActPrep kNoActs{nullptr, nullptr};
constexpr TypeKernels kQ4_1Kernels{kQuantActs, 4, Rows<Q4_1Codes>, kNoActs, 0, 0, nullptr, nullptr, nullptr};
constexpr TypeKernels kQ5_0Kernels{kQuantActs, 4, Rows<Q5_0Codes>, kNoActs, 0, 0, nullptr, nullptr, nullptr};
constexpr TypeKernels kQ5_1Kernels{kQuantActs, 4, Rows<Q5_1Codes>, kNoActs, 0, 0, nullptr, nullptr, nullptr};
constexpr TypeKernels kIQ4_NLKernels{kQuantActs, 4, Rows<IQ4_NLCodes>, kNoActs, 0, 0, nullptr, nullptr, nullptr};

}  // namespace

const TypeKernels* Avx2Q32Kernels(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_1: return &kQ4_1Kernels;
    case GgmlType::kQ5_0: return &kQ5_0Kernels;
    case GgmlType::kQ5_1: return &kQ5_1Kernels;
    case GgmlType::kIQ4_NL: return &kIQ4_NLKernels;
    default: return nullptr;
  }
}

}  // namespace ridge::kernels::internal
