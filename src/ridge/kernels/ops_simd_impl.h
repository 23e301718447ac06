#pragma once
// The small kernels (RMSNorm, RoPE rotation, softmax, SwiGLU, attention over a
// paged KV head, KV stores) written once against a vector "traits" type V and
// instantiated by ops_avx2.cc (V = 8 floats) and ops_avx512.cc (16 floats).
//
// Include only from *_avx2.cc / *_avx512.cc. Everything here sits in an
// anonymous namespace, and V is a type local to the including file, so each
// ISA file gets its own private copy compiled with its own flags (no shared
// inline code for the linker to mix up). No <cmath> here either.
//
// V provides (kLanes floats per vector R):
//   Zero, Set1, Load, LoadPartial(p, n) (n < kLanes; zeros beyond, reads only
//   n elements), Store, StorePartial, KeepFirst(v, n) (lanes >= n zeroed),
//   Add, Sub, Mul, Div, Fma(a, b, c) = a·b + c, SqrtScalar,
//   Max (returns its second operand when either is NaN), ReduceAdd, ReduceMax,
//   ReducePair, ReduceQuad, ReduceQuads: Σ of each of kLanes vectors into one
//   vector's lanes, in three stages (see DotLanesRows), Exp (≤ 2 ulp,
//   0 below −104, ∞ above 89, NaN stays NaN), SwapPairs ([x1, x0, x3, x2, …]),
//   LoadF16 / LoadBf16 (kLanes halves → floats, exact; Partial forms too),
//   LoadQ8(p) (kLanes int8 → floats), F16Scalar (f16 bits → float),
//   StoreF16 / StoreBf16 / StoreQ8Block (bit-exact with QuantizeRow).
#include <cstring>
#include <type_traits>

#include "ridge/kernels/ops_isa.h"

namespace ridge::kernels::internal {
namespace {

template <typename V>
void RmsNormImpl(const float* x, const float* weight, int64_t n, float eps, float* out) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  R acc0 = V::Zero(), acc1 = V::Zero();
  int64_t i = 0;
  for (; i + 2 * L <= n; i += 2 * L) {
    const R a = V::Load(x + i), b = V::Load(x + i + L);
    acc0 = V::Fma(a, a, acc0);
    acc1 = V::Fma(b, b, acc1);
  }
  for (; i < n; i += L) {
    const R a = n - i >= L ? V::Load(x + i) : V::LoadPartial(x + i, n - i);
    acc0 = V::Fma(a, a, acc0);
  }
  const float mean = V::ReduceAdd(V::Add(acc0, acc1)) / static_cast<float>(n);
  const R inv = V::Set1(1.0f / V::SqrtScalar(mean + eps));
  for (i = 0; i < n; i += L) {
    if (n - i >= L) {
      V::Store(out + i, V::Mul(V::Mul(V::Load(x + i), inv), V::Load(weight + i)));
    } else {
      const R r = V::Mul(V::Mul(V::LoadPartial(x + i, n - i), inv), V::LoadPartial(weight + i, n - i));
      V::StorePartial(out + i, n - i, r);
    }
  }
}

template <typename V>
void RotatePairsImpl(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dim, const float* cos,
                     const float* sin) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  // cos and ±sin spread over the pairs: out = x·[c, c] + swap(x)·[−s, s].
  constexpr int64_t kMaxDim = 512;
  alignas(64) float cc[kMaxDim], ss[kMaxDim];
  const int64_t dim = rope_dim < kMaxDim ? rope_dim : kMaxDim;
  for (int64_t i = 0; i < dim / 2; ++i) {
    cc[2 * i] = cc[2 * i + 1] = cos[i];
    ss[2 * i] = -sin[i];
    ss[2 * i + 1] = sin[i];
  }
  for (int64_t h = 0; h < n_heads; ++h) {
    float* head = x + h * head_dim;
    int64_t j = 0;
    for (; j + L <= dim; j += L) {
      const R v = V::Load(head + j);
      V::Store(head + j, V::Fma(v, V::Load(cc + j), V::Mul(V::SwapPairs(v), V::Load(ss + j))));
    }
    if (j < dim) {
      const int64_t m = dim - j;  // even
      const R v = V::LoadPartial(head + j, m);
      const R rotated = V::Fma(v, V::LoadPartial(cc + j, m), V::Mul(V::SwapPairs(v), V::LoadPartial(ss + j, m)));
      V::StorePartial(head + j, m, rotated);
    }
    for (int64_t i = dim / 2; i < rope_dim / 2; ++i) {  // beyond kMaxDim (no model has it): plain code
      const float a = head[2 * i], b = head[2 * i + 1];
      head[2 * i] = a * cos[i] - b * sin[i];
      head[2 * i + 1] = a * sin[i] + b * cos[i];
    }
  }
}

// max_i x[i] (x[0] with n <= 0 excluded by callers).
template <typename V>
float MaxOf(const float* x, int64_t n) {
  constexpr int64_t L = V::kLanes;
  typename V::R vmax = V::Set1(x[0]);
  int64_t i = 0;
  for (; i + L <= n; i += L) vmax = V::Max(V::Load(x + i), vmax);
  float max = V::ReduceMax(vmax);
  for (; i < n; ++i) max = x[i] > max ? x[i] : max;
  return max;
}

// x[i] = exp(x[i] − max); returns Σ x[i] per lane (ReduceAdd gives the sum).
template <typename V>
typename V::R ExpShifted(float* x, int64_t n, float max) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  const R m = V::Set1(max);
  R sum = V::Zero();
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const R e = V::Exp(V::Sub(V::Load(x + i), m));
    V::Store(x + i, e);
    sum = V::Add(sum, e);
  }
  if (i < n) {
    const R e = V::Exp(V::Sub(V::LoadPartial(x + i, n - i), m));
    const R masked = V::KeepFirst(e, n - i);
    V::StorePartial(x + i, n - i, masked);
    sum = V::Add(sum, masked);
  }
  return sum;
}

template <typename V>
void SoftmaxImpl(float* x, int64_t n) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  if (n <= 0) return;
  const R inv = V::Set1(1.0f / V::ReduceAdd(ExpShifted<V>(x, n, MaxOf<V>(x, n))));
  int64_t i = 0;
  for (; i + L <= n; i += L) V::Store(x + i, V::Mul(V::Load(x + i), inv));
  if (i < n) V::StorePartial(x + i, n - i, V::Mul(V::LoadPartial(x + i, n - i), inv));
}

template <typename V>
void SoftmaxPartialImpl(float* x, int64_t n, float* max, float* sum) {
  *max = MaxOf<V>(x, n);
  *sum = V::ReduceAdd(ExpShifted<V>(x, n, *max));
}

template <typename V>
void SwiGluImpl(const float* gate, const float* up, int64_t n, float* out) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  const R one = V::Set1(1.0f), zero = V::Zero();
  auto f = [&](R g, R u) { return V::Mul(V::Div(g, V::Add(one, V::Exp(V::Sub(zero, g)))), u); };
  int64_t i = 0;
  for (; i + L <= n; i += L) V::Store(out + i, f(V::Load(gate + i), V::Load(up + i)));
  if (i < n) V::StorePartial(out + i, n - i, f(V::LoadPartial(gate + i, n - i), V::LoadPartial(up + i, n - i)));
}

// gelu_tanh(g) = g · ½(1 + tanh(u)) = g / (1 + exp(−2u)), u = √(2/π)·(g + 0.044715·g³).
template <typename V>
void GeGluImpl(const float* gate, const float* up, int64_t n, float* out) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  const R one = V::Set1(1.0f), zero = V::Zero();
  const R two_c = V::Set1(2.0f * 0.7978845608f), cubic = V::Set1(0.044715f);
  auto f = [&](R g, R u) {
    const R two_arg = V::Mul(two_c, V::Fma(V::Mul(cubic, V::Mul(g, g)), g, g));  // 2u
    return V::Mul(V::Div(g, V::Add(one, V::Exp(V::Sub(zero, two_arg)))), u);
  };
  int64_t i = 0;
  for (; i + L <= n; i += L) V::Store(out + i, f(V::Load(gate + i), V::Load(up + i)));
  if (i < n) V::StorePartial(out + i, n - i, f(V::LoadPartial(gate + i, n - i), V::LoadPartial(up + i, n - i)));
}

// ---- attention -------------------------------------------------------------

// Walks the positions of a (paged) KV head in order without a division each.
// A block's pointer is read only when its first position is asked for (the
// table may end right after the last position).
struct KvCursor {
  const KvHeadView& view;
  int64_t block = 0, in_block = 0;
  const uint8_t* ptr = nullptr;
  explicit KvCursor(const KvHeadView& v)
      : view(v), block(v.first_position / v.block_tokens), in_block(v.first_position % v.block_tokens) {
    if (in_block != 0) ptr = view.blocks[block] + view.head_offset_bytes + in_block * view.token_stride_bytes;
  }
  const uint8_t* Next() {
    if (in_block == 0) ptr = view.blocks[block] + view.head_offset_bytes;
    const uint8_t* p = ptr;
    ptr += view.token_stride_bytes;
    if (++in_block == view.block_tokens) {
      in_block = 0;
      ++block;
    }
    return p;
  }
};

// How far ahead of the positions a scores pass reads their K is prefetched.
constexpr int64_t kKvPrefetchPositions = 32;

// A cursor kKvPrefetchPositions in front of the one a loop reads, which
// prefetches each head's lines into L1 as it passes them: decode at depth
// reads K from memory one head-row per position (128 bytes at head_dim 64,
// F16, every 512 at 4 KV heads), a pattern the hardware prefetchers do not
// run far enough ahead of. Measured (BM_AttentionDecode/4096/30, one thread,
// Zen 4): 8 query rows per KV head 2.8-3.4 -> 4.0-4.1 GB/s, 3 rows 4.4-5.2 ->
// 5.2-5.6; the same for V in the values pass gained nothing.
struct KvPrefetcher {
  KvCursor cursor;
  int64_t head_bytes, at = 0, end;
  KvPrefetcher(const KvHeadView& v, int64_t head_dim, int64_t n_positions)
      : cursor(v), head_bytes(RowBytes(v.type, head_dim)), end(n_positions) {}
  // Prefetches the heads of positions up to (not including) `until`.
  void To(int64_t until) {
    for (until = until < end ? until : end; at < until; ++at) {
      const char* h = reinterpret_cast<const char*>(cursor.Next());
      for (int64_t b = 0; b < head_bytes; b += 64) __builtin_prefetch(h + b, 0, 3);
      __builtin_prefetch(h + head_bytes - 1, 0, 3);  // a head not aligned to lines ends on one more
    }
  }
};

bool KvTypeSupported(GgmlType type, int64_t head_dim) {
  switch (type) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16: return true;
    case GgmlType::kQ8_0: return head_dim % 32 == 0;
    default: return false;
  }
}

// Elements [c, c + n) of a head (n <= kLanes; n < kLanes only at the end) as floats.
template <typename V, GgmlType kType>
typename V::R LoadKv(const uint8_t* head, int64_t c, int64_t n) {
  if constexpr (kType == GgmlType::kF32) {
    const float* p = reinterpret_cast<const float*>(head) + c;
    return n == V::kLanes ? V::Load(p) : V::LoadPartial(p, n);
  } else if constexpr (kType == GgmlType::kF16) {
    return n == V::kLanes ? V::LoadF16(head + 2 * c) : V::LoadF16Partial(head + 2 * c, n);
  } else if constexpr (kType == GgmlType::kBF16) {
    return n == V::kLanes ? V::LoadBf16(head + 2 * c) : V::LoadBf16Partial(head + 2 * c, n);
  } else {  // Q8_0: kLanes divides 32, so a vector never straddles two blocks
    const uint8_t* block = head + (c / 32) * static_cast<int64_t>(sizeof(BlockQ8_0));
    uint16_t d;
    std::memcpy(&d, block, 2);
    return V::Mul(V::LoadQ8(block + 2 + c % 32), V::Set1(V::F16Scalar(d)));
  }
}

// q_r·k for kLanes positions at once (lane j: heads[j]) and kR rows, each
// K vector loaded once for every row. Per row and position one partial-sum
// vector (lane i: Σ over c ≡ i of q[c]·k[c], c in order), reduced across lanes
// by ReducePair / ReduceQuad / ReduceQuads as soon as two, four, then all
// kLanes positions are done, so few vectors are live; a row's bits depend on
// its q and the heads alone, not on kR or the other rows. kWhole: head_dim is
// a multiple of kLanes, so every load is a whole vector (no per-load branch).
template <typename V, GgmlType kKType, bool kWhole, int kR>
void DotLanesRows(const float* const* q, int64_t head_dim, const uint8_t* const* heads, typename V::R* dots) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  R quads[kR][L / 4];
  for (int64_t j0 = 0; j0 < L; j0 += 4) {  // 4 positions × kR rows: 4·kR independent chains
    R acc[kR][4];
#pragma GCC unroll 4
    for (int r = 0; r < kR; ++r)
#pragma GCC unroll 4
      for (int jj = 0; jj < 4; ++jj) acc[r][jj] = V::Zero();
    for (int64_t c = 0; c < head_dim; c += L) {
      const int64_t n = kWhole || head_dim - c >= L ? L : head_dim - c;
      R k[4];
#pragma GCC unroll 4
      for (int jj = 0; jj < 4; ++jj) k[jj] = LoadKv<V, kKType>(heads[j0 + jj], c, n);
#pragma GCC unroll 4
      for (int r = 0; r < kR; ++r) {
        const R qv = n == L ? V::Load(q[r] + c) : V::LoadPartial(q[r] + c, n);
#pragma GCC unroll 4
        for (int jj = 0; jj < 4; ++jj) acc[r][jj] = V::Fma(k[jj], qv, acc[r][jj]);
      }
    }
#pragma GCC unroll 4
    for (int r = 0; r < kR; ++r)
      quads[r][j0 / 4] = V::ReduceQuad(V::ReducePair(acc[r][0], acc[r][1]), V::ReducePair(acc[r][2], acc[r][3]));
  }
#pragma GCC unroll 4
  for (int r = 0; r < kR; ++r) dots[r] = V::ReduceQuads(quads[r]);
}

// acc0[r]/acc1[r][i] += Σ_p w[r][p] · v_p[c0 + i·kLanes, …) over vectors
// i < kNv of [c0, c1), for kR rows over the same n_positions, each V vector
// loaded once for every row: two accumulator sets per row, even positions
// into acc0 and odd into acc1, to hide the FMA latency. Callers feeding one
// head's positions in several calls start each at an even position, so the
// chains (and the rounding) are those of one call over all of them, whatever
// kR. kWhole: c1 − c0 = kNv · kLanes, every load a whole vector (without it
// the compiler branched around every load).
template <typename V, GgmlType kType, int kNv, bool kWhole, int kR>
void AccumulateValues(const float* const* w, int64_t n_positions, const KvHeadView& v, int64_t c0, int64_t c1,
                      typename V::R (*acc0)[kNv], typename V::R (*acc1)[kNv]) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  int64_t width[kNv];
#pragma GCC unroll 16
  for (int i = 0; i < kNv; ++i) width[i] = kWhole || c1 - (c0 + i * L) >= L ? L : c1 - (c0 + i * L);
  R a0[kR][kNv], a1[kR][kNv];  // in registers for the loop
#pragma GCC unroll 4
  for (int r = 0; r < kR; ++r)
#pragma GCC unroll 16
    for (int i = 0; i < kNv; ++i) a0[r][i] = acc0[r][i], a1[r][i] = acc1[r][i];
  KvCursor cursor(v);
  int64_t p = 0;
  for (; p + 2 <= n_positions; p += 2) {
    const uint8_t* h0 = cursor.Next();
    const uint8_t* h1 = cursor.Next();
#pragma GCC unroll 16
    for (int i = 0; i < kNv; ++i) {
      const R v0 = LoadKv<V, kType>(h0, c0 + i * L, kWhole ? L : width[i]);
      const R v1 = LoadKv<V, kType>(h1, c0 + i * L, kWhole ? L : width[i]);
#pragma GCC unroll 4
      for (int r = 0; r < kR; ++r) {
        a0[r][i] = V::Fma(v0, V::Set1(w[r][p]), a0[r][i]);
        a1[r][i] = V::Fma(v1, V::Set1(w[r][p + 1]), a1[r][i]);
      }
    }
  }
  if (p < n_positions) {
    const uint8_t* h0 = cursor.Next();
#pragma GCC unroll 16
    for (int i = 0; i < kNv; ++i) {
      const R v0 = LoadKv<V, kType>(h0, c0 + i * L, kWhole ? L : width[i]);
#pragma GCC unroll 4
      for (int r = 0; r < kR; ++r) a0[r][i] = V::Fma(v0, V::Set1(w[r][p]), a0[r][i]);
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < kR; ++r)
#pragma GCC unroll 16
    for (int i = 0; i < kNv; ++i) acc0[r][i] = a0[r][i], acc1[r][i] = a1[r][i];
}

// The view from `first` positions further on.
KvHeadView Advanced(const KvHeadView& view, int64_t first) {
  KvHeadView shifted = view;
  shifted.first_position += first;
  return shifted;
}

// Positions the rows of a call take together: one stretch of K (or V) of one
// head, ≤ 128 × 256 halves, stays in L1 while every row reads it. Even and a
// multiple of every kLanes (the value chains and the score lanes stay aligned
// to the view's start, so a row's bits do not depend on the other rows).
constexpr int64_t kChunkPositions = 128;

// Rows whose V loads are shared in one AccumulateValues pass: as many as keep
// their 2 · kNv accumulators and weights in registers (32 on AVX-512, 16 on AVX2).
template <typename V, int kNv>
constexpr int ValueRowBlock() {
  const int fit = (V::kLanes == 16 ? 28 : 12) / (2 * kNv + 2);  // registers left for sums, over one row's
  return fit < 1 ? 1 : fit > 3 ? 3 : fit;
}

// AccumulateValues over positions [p0, p0 + n_r) of kR rows (n_r ≤ kChunkPositions
// each): the positions all rows have together, then each row's own rest (from an
// even position, so its chains stay those of a call on its own).
template <typename V, GgmlType kType, int kNv, bool kWhole, int kR>
void AccumulateRowsChunk(const float* const* w, const int64_t* n, const KvHeadView& chunk, int64_t c0, int64_t c1,
                         typename V::R (*acc0)[kNv], typename V::R (*acc1)[kNv]) {
  int64_t shortest = n[0], longest = n[0];
  for (int r = 1; r < kR; ++r) {
    shortest = n[r] < shortest ? n[r] : shortest;
    longest = n[r] > longest ? n[r] : longest;
  }
  const int64_t together = shortest == longest ? shortest : shortest & ~int64_t{1};
  AccumulateValues<V, kType, kNv, kWhole, kR>(w, together, chunk, c0, c1, acc0, acc1);
  if (together == longest) return;
  const KvHeadView rest = Advanced(chunk, together);
  for (int r = 0; r < kR; ++r) {
    const float* w_rest = w[r] + together;
    AccumulateValues<V, kType, kNv, kWhole, 1>(&w_rest, n[r] - together, rest, c0, c1, acc0 + r, acc1 + r);
  }
}

// rows[r].out[c0, c1) = Σ_p weights_r[p] · v_p[c0, c1) (weights_r = w + r·w_stride)
// for n_rows ≤ kMaxAttentionRows rows, a chunk of positions at a time for all
// rows, ValueRowBlock rows per pass over the chunk.
template <typename V, GgmlType kType, int kNv, bool kWhole>
void RowsValuesSlice(const AttentionRow* rows, int64_t n_rows, const float* w, int64_t w_stride, const KvHeadView& v,
                     int64_t c0, int64_t c1) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  constexpr int kBlock = ValueRowBlock<V, kNv>();
  R acc0[kMaxAttentionRows][kNv], acc1[kMaxAttentionRows][kNv];
  int64_t longest = 0;
  for (int64_t r = 0; r < n_rows; ++r) {
    longest = rows[r].n_positions > longest ? rows[r].n_positions : longest;
    for (int i = 0; i < kNv; ++i) acc0[r][i] = acc1[r][i] = V::Zero();
  }
  for (int64_t p0 = 0; p0 < longest; p0 += kChunkPositions) {
    const KvHeadView chunk = Advanced(v, p0);
    int64_t active[kMaxAttentionRows], n_active = 0;  // the rows with positions in this chunk
    for (int64_t r = 0; r < n_rows; ++r)
      if (rows[r].n_positions > p0) active[n_active++] = r;
    for (int64_t a0 = 0; a0 < n_active; a0 += kBlock) {
      const int64_t n_block = n_active - a0 < kBlock ? n_active - a0 : kBlock;
      const float* w_rows[kBlock];
      int64_t n[kBlock];
      R block0[kBlock][kNv], block1[kBlock][kNv];
      for (int64_t i = 0; i < n_block; ++i) {
        const int64_t r = active[a0 + i], left = rows[r].n_positions - p0;
        w_rows[i] = w + r * w_stride + p0;
        n[i] = left < kChunkPositions ? left : kChunkPositions;
        for (int c = 0; c < kNv; ++c) block0[i][c] = acc0[r][c], block1[i][c] = acc1[r][c];
      }
      if (n_block == kBlock) {
        AccumulateRowsChunk<V, kType, kNv, kWhole, kBlock>(w_rows, n, chunk, c0, c1, block0, block1);
      } else if constexpr (kBlock > 2) {
        if (n_block == 2) {
          AccumulateRowsChunk<V, kType, kNv, kWhole, 2>(w_rows, n, chunk, c0, c1, block0, block1);
        } else {
          AccumulateRowsChunk<V, kType, kNv, kWhole, 1>(w_rows, n, chunk, c0, c1, block0, block1);
        }
      } else {
        AccumulateRowsChunk<V, kType, kNv, kWhole, 1>(w_rows, n, chunk, c0, c1, block0, block1);
      }
      for (int64_t i = 0; i < n_block; ++i) {
        const int64_t r = active[a0 + i];
        for (int c = 0; c < kNv; ++c) acc0[r][c] = block0[i][c], acc1[r][c] = block1[i][c];
      }
    }
  }
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int i = 0; i < kNv; ++i) {
      const R sum = V::Add(acc0[r][i], acc1[r][i]);
      const int64_t width = c1 - (c0 + i * L) < L ? c1 - (c0 + i * L) : L;
      if (width == L) {
        V::Store(rows[r].out + c0 + i * L, sum);
      } else {
        V::StorePartial(rows[r].out + c0 + i * L, width, sum);
      }
    }
  }
}

template <typename V, GgmlType kVType, int kNv>
void RowsValuesSliceOf(bool whole, const AttentionRow* rows, int64_t n_rows, const float* w, int64_t w_stride,
                       const KvHeadView& v, int64_t c0, int64_t c1) {
  if (whole) {
    RowsValuesSlice<V, kVType, kNv, true>(rows, n_rows, w, w_stride, v, c0, c1);
  } else {
    RowsValuesSlice<V, kVType, kNv, false>(rows, n_rows, w, w_stride, v, c0, c1);
  }
}

// Slices of ≤ 4 vectors of head_dim, each summed over every position.
template <typename V, GgmlType kVType>
void RowsValues(const AttentionRow* rows, int64_t n_rows, const float* w, int64_t w_stride, const KvHeadView& v,
                int64_t head_dim) {
  constexpr int64_t L = V::kLanes;
  // The accumulators of 1-3 rows in registers (ValueRowBlock): on AVX2 slices of
  // 2 vectors, so 2 rows share each converted V vector (the F16 conversions, one
  // per row with 4-vector slices, were half of the value pass on Zen 3).
  constexpr int64_t kMaxVectors = L == 16 ? 4 : 2;
  for (int64_t c0 = 0; c0 < head_dim; c0 += kMaxVectors * L) {
    const int64_t c1 = c0 + kMaxVectors * L < head_dim ? c0 + kMaxVectors * L : head_dim;
    const int64_t n_vectors = (c1 - c0 + L - 1) / L;
    const bool whole = c1 - c0 == n_vectors * L;
    switch (n_vectors) {
      case 1: RowsValuesSliceOf<V, kVType, 1>(whole, rows, n_rows, w, w_stride, v, c0, c1); break;
      case 2: RowsValuesSliceOf<V, kVType, 2>(whole, rows, n_rows, w, w_stride, v, c0, c1); break;
      case 3: RowsValuesSliceOf<V, kVType, 3>(whole, rows, n_rows, w, w_stride, v, c0, c1); break;
      default: RowsValuesSliceOf<V, kVType, 4>(whole, rows, n_rows, w, w_stride, v, c0, c1); break;
    }
  }
}

// Rows whose K loads are shared in one DotLanesRows pass (AVX-512; AVX2's 16
// registers hold one row's q and sums). Measured with
// bench/kernels/attention_bench.cc: 3 rows per pass did a prefill tile's
// arithmetic faster (its K step is read by every row of the tile, the
// arithmetic is the limit), but decode at depth 4096 from memory 15-25 %
// slower than one row per pass (a longer body per position: fewer K misses
// in flight). So calls of 5 rows or more (a prefill tile: 16 / group tokens
// of a group; a decode group of 8 heads, tinyllama's, ran no slower) take 3,
// smaller decode groups 1.
template <typename V>
constexpr int kScoreRowBlock = V::kLanes == 16 ? 3 : 1;
constexpr int64_t kScoreBlockFromRows = 5;

// scores[r·scores_stride + p] = scale · q_r·k_p for p < n_positions_r, for
// every row, kLanes positions at a time, each position's K read once for
// every row that has it (kBlock rows per pass).
template <typename V, GgmlType kKType, bool kWhole, int kBlock>
void RowsScoresOf(const AttentionRow* rows, int64_t n_rows, int64_t head_dim, const KvHeadView& k, float scale,
                  float* scores, int64_t scores_stride) {
  using R = typename V::R;
  constexpr int64_t L = V::kLanes;
  const R vscale = V::Set1(scale);
  int64_t longest = 0;
  for (int64_t r = 0; r < n_rows; ++r) longest = rows[r].n_positions > longest ? rows[r].n_positions : longest;
  KvCursor cursor(k);
  KvPrefetcher prefetch(k, head_dim, longest);
  for (int64_t p0 = 0; p0 < longest; p0 += L) {
    prefetch.To(p0 + L + kKvPrefetchPositions);
    const int64_t m = longest - p0 < L ? longest - p0 : L;
    const uint8_t* heads[L];
    for (int64_t j = 0; j < m; ++j) heads[j] = cursor.Next();
    for (int64_t j = m; j < L; ++j) heads[j] = heads[0];  // computed and dropped
    int64_t active[kMaxAttentionRows], n_active = 0;       // the rows with positions here
    for (int64_t r = 0; r < n_rows; ++r)
      if (rows[r].n_positions > p0) active[n_active++] = r;
    for (int64_t a0 = 0; a0 < n_active; a0 += kBlock) {
      const int64_t n_block = n_active - a0 < kBlock ? n_active - a0 : kBlock;
      const float* q[kBlock];
      for (int64_t i = 0; i < kBlock; ++i) q[i] = rows[active[a0 + (i < n_block ? i : 0)]].q;
      R dots[kBlock];
      if (n_block == kBlock) {
        DotLanesRows<V, kKType, kWhole, kBlock>(q, head_dim, heads, dots);
      } else if constexpr (kBlock > 2) {
        if (n_block == 2) {
          DotLanesRows<V, kKType, kWhole, 2>(q, head_dim, heads, dots);
        } else {
          DotLanesRows<V, kKType, kWhole, 1>(q, head_dim, heads, dots);
        }
      } else {
        DotLanesRows<V, kKType, kWhole, 1>(q, head_dim, heads, dots);
      }
      for (int64_t i = 0; i < n_block; ++i) {
        const int64_t r = active[a0 + i];
        const int64_t n = rows[r].n_positions - p0 < L ? rows[r].n_positions - p0 : L;
        float* out = scores + r * scores_stride + p0;
        if (n == L) {
          V::Store(out, V::Mul(dots[i], vscale));
        } else {
          V::StorePartial(out, n, V::Mul(dots[i], vscale));
        }
      }
    }
  }
}

template <typename V, GgmlType kKType>
void RowsScores(const AttentionRow* rows, int64_t n_rows, int64_t head_dim, const KvHeadView& k, float scale,
                float* scores, int64_t scores_stride) {
  constexpr int kBlock = kScoreRowBlock<V>;
  const bool whole = head_dim % V::kLanes == 0, blocked = n_rows >= kScoreBlockFromRows;
  if (whole && blocked) {
    RowsScoresOf<V, kKType, true, kBlock>(rows, n_rows, head_dim, k, scale, scores, scores_stride);
  } else if (whole) {
    RowsScoresOf<V, kKType, true, 1>(rows, n_rows, head_dim, k, scale, scores, scores_stride);
  } else if (blocked) {
    RowsScoresOf<V, kKType, false, kBlock>(rows, n_rows, head_dim, k, scale, scores, scores_stride);
  } else {
    RowsScoresOf<V, kKType, false, 1>(rows, n_rows, head_dim, k, scale, scores, scores_stride);
  }
}

// ---- scores over keys laid out by dimension (KvHeadView::dim_stride_bytes) --
// A block holds each head's keys as [head_dim, block_tokens]: one vector load
// reads one dimension of kLanes consecutive positions, and each row's dots
// come out in lanes with no reduction across them (the token-major layout
// above needs ~3 shuffles and adds per row and position for that).

// Up to kLanes consecutive positions of one block: the address of their
// element 0 and how many.
struct KeyGroup {
  const uint8_t* base = nullptr;
  int64_t n = 0;
};

// dots[g][r] = q_r·k_p for the positions p of group g (lane j: its position
// j), kR rows × kG groups, each dimension of a group one load shared by every
// row. A row sums over c in two chains, even and odd c, added at the end: its
// bits depend on its q and the keys alone, not on kR, kG or the grouping.
template <typename V, GgmlType kKType, int kR, int kG>
void DotsByDim(const float* const* q, int64_t head_dim, int64_t dim_stride, const KeyGroup* groups,
               typename V::R (*dots)[kR]) {
  using R = typename V::R;
  R even[kG][kR], odd[kG][kR];
#pragma GCC unroll 4
  for (int g = 0; g < kG; ++g)
#pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) even[g][r] = odd[g][r] = V::Zero();
  int64_t c = 0;
  for (; c + 2 <= head_dim; c += 2) {
#pragma GCC unroll 4
    for (int g = 0; g < kG; ++g) {
      const R k0 = LoadKv<V, kKType>(groups[g].base + c * dim_stride, 0, groups[g].n);
      const R k1 = LoadKv<V, kKType>(groups[g].base + (c + 1) * dim_stride, 0, groups[g].n);
#pragma GCC unroll 8
      for (int r = 0; r < kR; ++r) {
        even[g][r] = V::Fma(k0, V::Set1(q[r][c]), even[g][r]);
        odd[g][r] = V::Fma(k1, V::Set1(q[r][c + 1]), odd[g][r]);
      }
    }
  }
  if (c < head_dim) {
#pragma GCC unroll 4
    for (int g = 0; g < kG; ++g) {
      const R k0 = LoadKv<V, kKType>(groups[g].base + c * dim_stride, 0, groups[g].n);
#pragma GCC unroll 8
      for (int r = 0; r < kR; ++r) even[g][r] = V::Fma(k0, V::Set1(q[r][c]), even[g][r]);
    }
  }
#pragma GCC unroll 4
  for (int g = 0; g < kG; ++g)
#pragma GCC unroll 8
    for (int r = 0; r < kR; ++r) dots[g][r] = V::Add(even[g][r], odd[g][r]);
}

// Rows per pass of DotsByDim: their 2·kR·kG sums in registers (32 on
// AVX-512, 16 on AVX2), with kG groups side by side when there are few rows,
// so that ≥ 8 chains hide the FMA latency.
template <typename V>
constexpr int kByDimMaxRows = V::kLanes == 16 ? 8 : 4;
constexpr int ByDimGroups(int rows) { return rows == 1 ? 4 : rows <= 3 ? 2 : 1; }

// scores[r·stride + i] = scale · dots for rows [r0, r0 + kR) of `active`
// (rows of the call) over groups[0, kG) starting at view position i0 (each
// row takes the lanes of its own positions).
template <typename V, GgmlType kKType, int kR, int kG>
void ScoresPassByDim(const AttentionRow* rows, const int64_t* active, int64_t head_dim, int64_t dim_stride,
                     const KeyGroup* groups, int64_t i0, float scale, float* scores, int64_t stride) {
  using R = typename V::R;
  const float* q[kR];
  for (int r = 0; r < kR; ++r) q[r] = rows[active[r]].q;
  R dots[kG][kR];
  DotsByDim<V, kKType, kR, kG>(q, head_dim, dim_stride, groups, dots);
  const R vscale = V::Set1(scale);
  int64_t i = i0;
  for (int g = 0; g < kG; ++g) {
    for (int r = 0; r < kR; ++r) {
      const int64_t left = rows[active[r]].n_positions - i;
      const int64_t n = left < groups[g].n ? left : groups[g].n;
      float* out = scores + active[r] * stride + i;
      if (n == V::kLanes) {
        V::Store(out, V::Mul(dots[g][r], vscale));
      } else if (n > 0) {
        V::StorePartial(out, n, V::Mul(dots[g][r], vscale));
      }
    }
    i += groups[g].n;
  }
}

// Exactly kR rows of `active` over groups[0, n_groups), ByDimGroups(kR) groups a pass.
template <typename V, GgmlType kKType, int kR>
void ScoresRowsByDim(const AttentionRow* rows, const int64_t* active, int64_t head_dim, int64_t dim_stride,
                     const KeyGroup* groups, int64_t n_groups, int64_t i0, float scale, float* scores,
                     int64_t stride) {
  constexpr int kG = ByDimGroups(kR);
  int64_t g = 0, i = i0;
  for (; g + kG <= n_groups; g += kG) {
    ScoresPassByDim<V, kKType, kR, kG>(rows, active, head_dim, dim_stride, groups + g, i, scale, scores, stride);
    for (int j = 0; j < kG; ++j) i += groups[g + j].n;
  }
  for (; g < n_groups; i += groups[g++].n)
    ScoresPassByDim<V, kKType, kR, 1>(rows, active, head_dim, dim_stride, groups + g, i, scale, scores, stride);
}

// The rows [0, n) of `active` over groups[0, n_groups): kByDimMaxRows a
// pass, then the rest in one pass of their own count (1 .. kByDimMaxRows - 1).
template <typename V, GgmlType kKType>
void ScoresGroupsByDim(const AttentionRow* rows, const int64_t* active, int64_t n, int64_t head_dim,
                       int64_t dim_stride, const KeyGroup* groups, int64_t n_groups, int64_t i0, float scale,
                       float* scores, int64_t stride) {
  constexpr int kMax = kByDimMaxRows<V>;
  for (; n >= kMax; n -= kMax, active += kMax)
    ScoresRowsByDim<V, kKType, kMax>(rows, active, head_dim, dim_stride, groups, n_groups, i0, scale, scores, stride);
  auto rest = [&](auto rows_tag) {
    ScoresRowsByDim<V, kKType, decltype(rows_tag)::value>(rows, active, head_dim, dim_stride, groups, n_groups, i0,
                                                          scale, scores, stride);
  };
  switch (n) {
    case 0: break;
    case 1: rest(std::integral_constant<int, 1>{}); break;
    case 2: rest(std::integral_constant<int, 2>{}); break;
    case 3: rest(std::integral_constant<int, 3>{}); break;
    default:
      if constexpr (kMax > 4) {
        switch (n) {
          case 4: rest(std::integral_constant<int, 4>{}); break;
          case 5: rest(std::integral_constant<int, 5>{}); break;
          case 6: rest(std::integral_constant<int, 6>{}); break;
          default: rest(std::integral_constant<int, 7>{}); break;
        }
      }
  }
}

// How far ahead of a group its keys' blocks are prefetched: past the groups
// of one pass (4 × 16 positions on AVX-512).
constexpr int64_t kKeyPrefetchPositions = 64;

// RowsScores over a view of keys laid out by dimension: up to 4 groups of
// consecutive positions at a time (a block, or its part in the view), every
// row that has positions in them taking them while they are in L1, the blocks
// kKeyPrefetchPositions ahead prefetched (a block's head is one run of
// head_dim · block_tokens elements).
template <typename V, GgmlType kKType>
void RowsScoresByDim(const AttentionRow* rows, int64_t n_rows, int64_t head_dim, const KvHeadView& k, float scale,
                     float* scores, int64_t stride) {
  constexpr int64_t L = V::kLanes, kMaxGroups = 4;
  int64_t longest = 0;
  for (int64_t r = 0; r < n_rows; ++r) longest = rows[r].n_positions > longest ? rows[r].n_positions : longest;
  const int64_t bt = k.block_tokens, head_run_bytes = head_dim * k.dim_stride_bytes;
  for (int64_t i0 = 0; i0 < longest;) {
    KeyGroup groups[kMaxGroups];
    int64_t n_groups = 0, i = i0;
    for (; n_groups < kMaxGroups && i < longest; ++n_groups) {
      const int64_t p = k.first_position + i, slot = p % bt;
      int64_t n = bt - slot < L ? bt - slot : L;
      n = longest - i < n ? longest - i : n;
      groups[n_groups] = {k.blocks[p / bt] + k.head_offset_bytes + slot * k.token_stride_bytes, n};
      // A group starting a block prefetches the block kKeyPrefetchPositions
      // on, if the view reaches it (the table may end with the view).
      if (const int64_t ahead = i + kKeyPrefetchPositions; slot == 0 && ahead < longest) {
        const char* block =
            reinterpret_cast<const char*>(k.blocks[(k.first_position + ahead) / bt] + k.head_offset_bytes);
#pragma GCC unroll 1
        for (int64_t b = 0; b < head_run_bytes; b += 64) __builtin_prefetch(block + b, 0, 3);
      }
      i += n;
    }
    // The rows with positions in the first group; those ending inside these groups take their lanes only.
    int64_t active[kMaxAttentionRows], n_active = 0;
    bool all_cover = true;
    for (int64_t r = 0; r < n_rows; ++r) {
      if (rows[r].n_positions <= i0) continue;
      active[n_active++] = r;
      all_cover = all_cover && rows[r].n_positions >= i;
    }
    if (all_cover) {
      ScoresGroupsByDim<V, kKType>(rows, active, n_active, head_dim, k.dim_stride_bytes, groups, n_groups, i0, scale,
                                   scores, stride);
    } else {  // rows ending in these groups: one group at a time, each with the rows that reach it
      int64_t g0 = i0;
      for (int64_t g = 0; g < n_groups; g0 += groups[g++].n) {
        int64_t reach[kMaxAttentionRows], n_reach = 0;
        for (int64_t a = 0; a < n_active; ++a)
          if (rows[active[a]].n_positions > g0) reach[n_reach++] = active[a];
        ScoresGroupsByDim<V, kKType>(rows, reach, n_reach, head_dim, k.dim_stride_bytes, groups + g, 1, g0, scale,
                                     scores, stride);
      }
    }
    i0 = i;
  }
}

// Calls f(std::integral_constant-like tag) for the KV type, compile-time.
template <GgmlType kType>
struct KvTypeTag {
  static constexpr GgmlType value = kType;
};

template <typename F>
void WithKvType(GgmlType type, F f) {
  switch (type) {
    case GgmlType::kF32: return f(KvTypeTag<GgmlType::kF32>{});
    case GgmlType::kF16: return f(KvTypeTag<GgmlType::kF16>{});
    case GgmlType::kBF16: return f(KvTypeTag<GgmlType::kBF16>{});
    default: return f(KvTypeTag<GgmlType::kQ8_0>{});
  }
}

template <typename V>
bool RowsScoresImpl(const AttentionRow* rows, int64_t n_rows, int64_t head_dim, const KvHeadView& k, float scale,
                    float* scores, int64_t scores_stride) {
  if (!KvTypeSupported(k.type, head_dim) || n_rows > kMaxAttentionRows) return false;
  if (k.dim_stride_bytes != 0) {
    switch (k.type) {
      case GgmlType::kF32: RowsScoresByDim<V, GgmlType::kF32>(rows, n_rows, head_dim, k, scale, scores, scores_stride); break;
      case GgmlType::kF16: RowsScoresByDim<V, GgmlType::kF16>(rows, n_rows, head_dim, k, scale, scores, scores_stride); break;
      case GgmlType::kBF16: RowsScoresByDim<V, GgmlType::kBF16>(rows, n_rows, head_dim, k, scale, scores, scores_stride); break;
      default: return false;  // Q8_0 keys are never laid out by dimension
    }
    return true;
  }
  WithKvType(k.type, [&](auto tag) {
    RowsScores<V, decltype(tag)::value>(rows, n_rows, head_dim, k, scale, scores, scores_stride);
  });
  return true;
}

template <typename V>
bool RowsValuesImpl(const AttentionRow* rows, int64_t n_rows, const float* weights, int64_t scores_stride,
                    const KvHeadView& v, int64_t head_dim) {
  if (!KvTypeSupported(v.type, head_dim) || n_rows > kMaxAttentionRows || v.dim_stride_bytes != 0) return false;
  WithKvType(v.type, [&](auto tag) { RowsValues<V, decltype(tag)::value>(rows, n_rows, weights, scores_stride, v, head_dim); });
  return true;
}

// ---- KV stores -------------------------------------------------------------

template <typename V>
bool StoreKvImpl(const float* x, int64_t head_dim, GgmlType type, uint8_t* dst) {
  constexpr int64_t L = V::kLanes;
  switch (type) {
    case GgmlType::kF32:
      std::memcpy(dst, x, static_cast<size_t>(head_dim) * 4);
      return true;
    case GgmlType::kF16:
    case GgmlType::kBF16: {
      const bool f16 = type == GgmlType::kF16;
      for (int64_t c = 0; c < head_dim; c += L) {
        const int64_t n = head_dim - c < L ? head_dim - c : L;
        if (f16) {
          V::StoreF16(x + c, n, dst + 2 * c);
        } else {
          V::StoreBf16(x + c, n, dst + 2 * c);
        }
      }
      return true;
    }
    case GgmlType::kQ8_0:
      if (head_dim % 32 != 0) return false;
      for (int64_t b = 0; b < head_dim / 32; ++b)
        V::StoreQ8Block(x + 32 * b, dst + b * static_cast<int64_t>(sizeof(BlockQ8_0)));
      return true;
    default: return false;
  }
}

}  // namespace
}  // namespace ridge::kernels::internal
