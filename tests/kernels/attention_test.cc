// Attention over a paged KV head (AttendHead, AttendRows, their splits) on
// every dispatch target against the scalar twin and against double references.
//
// Tolerances, with u = 2⁻²⁴ (float's unit roundoff) and the vector expf's 2⁻²¹:
//  * AttendHead: KV dequantization is exact in both versions; scores carry a
//    float dot-product error δ <= scale·(head_dim/8 + 8)·u·Σ|q·k|, which moves
//    each softmax weight by a factor e^(±2δ); then the softmax error (ops_test.cc) and
//    the float accumulation of Σ w·v over n positions in two chains:
//    |Δ out_d| <= (2·max δ + 2·2⁻²¹ + (n/8 + 8)·u + (n/2 + 8)·u)·Σ_p w_p·|v_pd|.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ridge/base/cpu_features.h"
#include "ridge/base/half.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/kernels/ops.h"
#include "isa_test_util.h"

namespace ridge::kernels {
namespace {

using isa_test::ForEachIsa, isa_test::kExpRel, isa_test::kU, isa_test::Random;

// Store rows of uint8 in a paged layout: position p in blocks[p / block_tokens],
// token stride with room for other heads, this head at an offset into each
// block's storage (where blocks[b] points). by_dim (F32,
// F16, BF16): each block holds 3 heads as [head_dim, block_tokens], this one
// the second (PagedKvCache's keys, and its values where ValuesByDimension),
// one element further on (unaligned).
struct PagedKv {
  std::vector<std::vector<uint8_t>> storage;
  std::vector<const uint8_t*> blocks;
  KvHeadView view;
  PagedKv(GgmlType type, int64_t head_dim, int64_t n_positions, int64_t block_tokens, std::mt19937& rng,
          std::vector<float>* dequantized, bool by_dim = false) {
    const int64_t head_bytes = KvHeadBytes(type, head_dim), elem = head_bytes / head_dim;
    const int64_t dim_stride = by_dim ? block_tokens * elem : 0;
    const int64_t stride = by_dim ? elem : 3 * head_bytes + 5;  // a 3-head slot, this is head 1 (unaligned)
    const int64_t offset = by_dim ? head_dim * dim_stride + elem : head_bytes + 1;
    const int64_t block_bytes = by_dim ? 3 * head_dim * dim_stride : block_tokens * stride;
    const int64_t n_blocks = (n_positions + block_tokens - 1) / block_tokens;
    for (int64_t b = 0; b < n_blocks; ++b) storage.emplace_back(static_cast<size_t>(block_bytes), 0xCD);
    for (auto& s : storage) blocks.push_back(s.data() + offset);
    view = KvHeadView{type, blocks.data(), block_tokens, stride, 0, dim_stride};
    dequantized->resize(static_cast<size_t>(n_positions * head_dim));
    std::vector<uint8_t> head(static_cast<size_t>(head_bytes));
    for (int64_t p = 0; p < n_positions; ++p) {
      const auto x = Random(rng, head_dim, -2.0f, 2.0f);
      uint8_t* dst = storage[static_cast<size_t>(p / block_tokens)].data() + (p % block_tokens) * stride + offset;
      QuantizeRow(type, x.data(), head.data(), head_dim);
      DequantizeRow(type, head.data(), dequantized->data() + p * head_dim, head_dim);
      if (!by_dim) std::memcpy(dst, head.data(), head.size());
      for (int64_t c = 0; by_dim && c < head_dim; ++c)
        std::memcpy(dst + c * dim_stride, head.data() + c * elem, static_cast<size_t>(elem));
    }
  }
};

// n_q query heads over one paged KV head (as grouped-query attention uses it),
// AttendHead per head on every target against the scalar twin.
void CheckAttention(GgmlType type, int64_t head_dim, int64_t n_positions, int64_t block_tokens, int64_t n_q,
                    std::mt19937& rng, bool k_by_dim = false, bool v_by_dim = false) {
  std::vector<float> k_deq, v_deq;
  PagedKv k(type, head_dim, n_positions, block_tokens, rng, &k_deq, k_by_dim);
  PagedKv v(type, head_dim, n_positions, block_tokens, rng, &v_deq, v_by_dim);
  const auto q = Random(rng, n_q * head_dim, -1.5f, 1.5f);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  std::vector<float> want(static_cast<size_t>(n_q * head_dim)), weights(static_cast<size_t>(n_q * n_positions));
  for (int64_t h = 0; h < n_q; ++h)
    scalar::AttendHead(q.data() + h * head_dim, head_dim, k.view, v.view, n_positions, scale, 0.0f, -INFINITY,
                       weights.data() + h * n_positions, want.data() + h * head_dim);
  // The twin leaves the softmax weights in its scores; the tolerance of each output:
  std::vector<double> tol(want.size());
  for (int64_t h = 0; h < n_q; ++h) {
    double max_score_err = 0;
    for (int64_t p = 0; p < n_positions; ++p) {
      double qk = 0;
      for (int64_t d = 0; d < head_dim; ++d) qk += std::fabs(q[h * head_dim + d] * k_deq[p * head_dim + d]);
      max_score_err = std::fmax(max_score_err, scale * (static_cast<double>(head_dim) / 8 + 8) * kU * qk);
    }
    const double n = static_cast<double>(n_positions);
    const double rel = 2 * max_score_err + 2 * kExpRel + (n / 8 + 8) * kU + (n / 2 + 8) * kU;
    for (int64_t d = 0; d < head_dim; ++d) {
      double mass = 0, largest_share = 0;
      for (int64_t p = 0; p < n_positions; ++p) {
        const double share = weights[h * n_positions + p] * std::fabs(v_deq[p * head_dim + d]);
        mass += share;
        largest_share = std::max(largest_share, share);
      }
      // BF16 values: each weight is rounded to BF16, and one that lies within
      // the weights' error (~1e-6) of a rounding midpoint (odds ~1e-4 each)
      // may round the other way here than in the twin: one BF16 ulp (≤ 2⁻⁷)
      // of its share. Room for two such.
      const double flips = type == GgmlType::kBF16 ? 2 * largest_share / 128 : 0;
      tol[h * head_dim + d] = rel * mass + flips + 1e-30;
    }
  }
  ForEachIsa([&](Isa isa) {
    std::vector<float> one(want.size() + 1, 5.0f);
    std::vector<float> s(static_cast<size_t>(n_q * n_positions));
    for (int64_t h = 0; h < n_q; ++h)
      AttendHead(q.data() + h * head_dim, head_dim, k.view, v.view, n_positions, scale, 0.0f, -INFINITY, s.data(),
                 one.data() + h * head_dim);
    EXPECT_EQ(one.back(), 5.0f) << "wrote past the end";
    for (size_t i = 0; i < want.size(); ++i) {
      const std::string where = std::string(GgmlTypeName(type)) + " head_dim=" + std::to_string(head_dim) +
                                " n=" + std::to_string(n_positions) + " block=" + std::to_string(block_tokens) +
                                " n_q=" + std::to_string(n_q) + (k_by_dim ? " keys by dim" : "") +
                                (v_by_dim ? " values by dim" : "") +
                                " i=" + std::to_string(i) + " " + IsaName(isa);
      ASSERT_NEAR(one[i], want[i], tol[i]) << where;
    }
  });
}

TEST(AttendHead, MatchesScalarTwinOnPagedKv) {
  std::mt19937 rng(5);
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0}) {
    for (int64_t head_dim : {8, 17, 32, 64, 100, 128, 256}) {
      if (type == GgmlType::kQ8_0 && head_dim % 32 != 0) continue;
      for (int64_t n_positions : {1, 2, 3, 15, 16, 17, 40, 300})
        for (int64_t block_tokens : {1, 16, 7})
          CheckAttention(type, head_dim, n_positions, block_tokens, block_tokens == 7 ? 3 : 1, rng);
    }
  }
}

// Keys laid out by dimension within each block (PagedKvCache's), against the
// scalar twin: blocks shorter, as long as and longer than a vector, groups of
// 1-9 query heads (the passes of 8, 4, 2 and 1 rows, side-by-side groups).
TEST(AttendHead, KeysByDimensionMatchScalarTwin) {
  std::mt19937 rng(6);
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    for (int64_t head_dim : {8, 17, 64, 128}) {
      for (int64_t n_positions : {1, 15, 16, 17, 40, 300})
        for (int64_t block_tokens : {16, 7, 32})
          for (int64_t n_q : {1, 3, 9}) CheckAttention(type, head_dim, n_positions, block_tokens, n_q, rng, true);
    }
  }
}

// Values laid out by dimension within each block (PagedKvCache's where
// ValuesByDimension), with keys either way, against the scalar twin: blocks
// shorter, as long as and longer than a vector, head_dim not a multiple of a
// vector, groups of 1-9 query heads (passes of 8 rows and of 1-7, and the
// 1-8 dimensions each pass takes at once).
TEST(AttendHead, ValuesByDimensionMatchScalarTwin) {
  std::mt19937 rng(9);
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    for (int64_t head_dim : {8, 17, 64, 128}) {
      for (int64_t n_positions : {1, 15, 16, 17, 40, 300})
        for (int64_t block_tokens : {16, 7, 32})
          for (int64_t n_q : {1, 2, 3, 9})
            CheckAttention(type, head_dim, n_positions, block_tokens, n_q, rng, /*k_by_dim=*/n_q != 2, true);
    }
  }
}

// BF16 keys round q to BF16 first (AttendHead's contract), on every target:
// the same keys as F32 with q rounded by hand give the same output up to the
// order of the sums, where q unrounded would move it by ~2⁻⁹ of the scores.
TEST(AttendHead, Bf16KeysRoundQueryToBf16OnEveryTarget) {
  std::mt19937 rng(7);
  for (bool k_by_dim : {false, true}) {
    for (int64_t head_dim : {17, 64}) {
      const int64_t n_positions = 300, block_tokens = 16;
      std::vector<float> k_deq, v_deq;
      PagedKv k(GgmlType::kBF16, head_dim, n_positions, block_tokens, rng, &k_deq, k_by_dim);
      PagedKv v(GgmlType::kF32, head_dim, n_positions, block_tokens, rng, &v_deq);
      // The same (BF16-valued) keys as F32, token-major in one block.
      const uint8_t* k_f32_block[1] = {reinterpret_cast<const uint8_t*>(k_deq.data())};
      const KvHeadView k_f32{GgmlType::kF32, k_f32_block, n_positions, head_dim * 4, 0};
      const auto q = Random(rng, head_dim, -3.0f, 3.0f);
      std::vector<float> q_rounded(q.size());
      for (size_t c = 0; c < q.size(); ++c) q_rounded[c] = Bf16ToF32(F32ToBf16(q[c]));
      const float scale = 0.5f;
      std::vector<float> scores(static_cast<size_t>(n_positions)), want(static_cast<size_t>(head_dim)),
          unrounded(want.size()), got(want.size());
      scalar::AttendHead(q_rounded.data(), head_dim, k_f32, v.view, n_positions, scale, 0.0f, -INFINITY,
                         scores.data(), want.data());
      scalar::AttendHead(q.data(), head_dim, k_f32, v.view, n_positions, scale, 0.0f, -INFINITY, scores.data(),
                         unrounded.data());
      double moved = 0;  // how far rounding q moves the output: the test's power to tell
      for (int64_t d = 0; d < head_dim; ++d) moved = std::max(moved, std::fabs(double{unrounded[d]} - want[d]));
      ASSERT_GT(moved, 1e-4) << "head_dim " << head_dim;
      ForEachIsa([&](Isa isa) {
        AttendHead(q.data(), head_dim, k.view, v.view, n_positions, scale, 0.0f, -INFINITY, scores.data(), got.data());
        for (int64_t d = 0; d < head_dim; ++d)
          ASSERT_NEAR(got[d], want[d], 1e-5) << "head_dim " << head_dim << " keys by dim " << k_by_dim << " d " << d
                                             << " " << IsaName(isa);
      });
    }
  }
}

// BF16 values round the softmax weights to BF16 first, on every target: with
// q = 0 every weight is exactly 1/n, so the output must be bf16(1/n) · Σ v_p
// (to the order of the sums), where unrounded weights would give (1/n) · Σ v_p.
TEST(AttendHead, Bf16ValuesRoundWeightsToBf16OnEveryTarget) {
  std::mt19937 rng(8);
  for (bool k_by_dim : {false, true}) {
    for (int64_t n_positions : {3, 200}) {  // unsplit rows: the weights are the softmax's
      const int64_t head_dim = 64, block_tokens = 16;
      const bool v_by_dim = k_by_dim == (n_positions == 3);  // each layout of the values with each of the keys
      std::vector<float> k_deq, v_deq;
      PagedKv k(GgmlType::kBF16, head_dim, n_positions, block_tokens, rng, &k_deq, k_by_dim);
      PagedKv v(GgmlType::kBF16, head_dim, n_positions, block_tokens, rng, &v_deq, v_by_dim);
      const float w = 1.0f / static_cast<float>(n_positions), w_bf16 = Bf16ToF32(F32ToBf16(w));
      // 1/n is far from a BF16 rounding midpoint: a weight a few ulps off rounds alike.
      ASSERT_EQ(F32ToBf16(w * (1 + 1e-6f)), F32ToBf16(w * (1 - 1e-6f)));
      std::vector<double> want(static_cast<size_t>(head_dim), 0.0), unrounded(want.size(), 0.0);
      for (int64_t p = 0; p < n_positions; ++p)
        for (int64_t d = 0; d < head_dim; ++d) {
          want[d] += double{w_bf16} * v_deq[p * head_dim + d];
          unrounded[d] += double{w} * v_deq[p * head_dim + d];
        }
      double moved = 0;  // the test's power to tell
      for (int64_t d = 0; d < head_dim; ++d) moved = std::max(moved, std::fabs(unrounded[d] - want[d]));
      ASSERT_GT(moved, 1e-4) << "n " << n_positions;
      const std::vector<float> q(static_cast<size_t>(head_dim), 0.0f);
      std::vector<float> scores(static_cast<size_t>(n_positions)), got(static_cast<size_t>(head_dim));
      scalar::AttendHead(q.data(), head_dim, k.view, v.view, n_positions, 0.125f, 0.0f, -INFINITY, scores.data(),
                         got.data());
      for (int64_t d = 0; d < head_dim; ++d) ASSERT_NEAR(got[d], want[d], 1e-5) << "scalar n " << n_positions;
      ForEachIsa([&](Isa isa) {
        AttendHead(q.data(), head_dim, k.view, v.view, n_positions, 0.125f, 0.0f, -INFINITY, scores.data(),
                   got.data());
        for (int64_t d = 0; d < head_dim; ++d)
          ASSERT_NEAR(got[d], want[d], 1e-5) << "n " << n_positions << " keys by dim " << k_by_dim
                                             << " values by dim " << v_by_dim << " d " << d << " " << IsaName(isa);
      });
    }
  }
}

// A window (the views start at first_position), soft-capped scores and
// gpt-oss's sinks (one more logit in the softmax, its weight dropped), on
// every target, against attention computed here in double over the same
// dequantized keys and values.
TEST(AttendHead, SlidingWindowSoftCapAndSinkMatchDoubleReference) {
  std::mt19937 rng(13);
  const int64_t head_dim = 64, n_total = 45, block_tokens = 16;
  for (int by_dim : {0, 1, 2}) {  // neither, the keys, or keys and values laid out by dimension
    const bool k_by_dim = by_dim >= 1, v_by_dim = by_dim == 2;
    std::vector<float> k_deq, v_deq;
    PagedKv k(GgmlType::kF32, head_dim, n_total, block_tokens, rng, &k_deq, k_by_dim);
    PagedKv v(GgmlType::kF32, head_dim, n_total, block_tokens, rng, &v_deq, v_by_dim);
    const auto q = Random(rng, head_dim, -3.0f, 3.0f);
    const float scale = 0.125f;
    for (int64_t first : {0, 5, 16, 33}) {
      for (auto [softcap, sink] : {std::pair{0.0f, -INFINITY}, {2.0f, -INFINITY}, {0.0f, 1.5f}, {2.0f, -0.5f},
                                   {0.0f, 40.0f}}) {
        const int64_t n = n_total - first;
        std::vector<double> scores(static_cast<size_t>(n)), want(static_cast<size_t>(head_dim), 0.0);
        double max_score = sink, sum = 0;
        for (int64_t p = 0; p < n; ++p) {
          double dot = 0;
          for (int64_t d = 0; d < head_dim; ++d) dot += static_cast<double>(q[d]) * k_deq[(first + p) * head_dim + d];
          dot *= scale;
          if (softcap > 0) dot = softcap * std::tanh(dot / softcap);
          scores[p] = dot;
          max_score = std::fmax(max_score, dot);
        }
        sum = std::exp(sink - max_score);  // the sink's share (0 without one)
        for (double& sc : scores) sum += (sc = std::exp(sc - max_score));
        for (int64_t p = 0; p < n; ++p)
          for (int64_t d = 0; d < head_dim; ++d) want[d] += scores[p] / sum * v_deq[(first + p) * head_dim + d];
        double want_norm = 0;
        for (double w : want) want_norm = std::max(want_norm, std::fabs(w));
        if (sink == 40.0f) {
          ASSERT_LT(want_norm, 1e-9);  // a sink far above every score takes all the weight
        }
        KvHeadView kv = k.view, vv = v.view;
        kv.first_position = vv.first_position = first;
        std::vector<float> work(static_cast<size_t>(n)), got(static_cast<size_t>(head_dim));
        scalar::AttendHead(q.data(), head_dim, kv, vv, n, scale, softcap, sink, work.data(), got.data());
        for (int64_t d = 0; d < head_dim; ++d) ASSERT_NEAR(got[d], want[d], 1e-5) << "scalar first " << first;
        ForEachIsa([&](Isa isa) {
          AttendHead(q.data(), head_dim, kv, vv, n, scale, softcap, sink, work.data(), got.data());
          for (int64_t d = 0; d < head_dim; ++d)
            ASSERT_NEAR(got[d], want[d], 1e-5) << "first " << first << " softcap " << softcap << " sink " << sink
                                               << " keys by dim " << k_by_dim << " values by dim " << v_by_dim
                                               << " " << IsaName(isa);
        });
      }
    }
  }
}

TEST(AttendHead, ZeroPositionsGivesZeros) {
  const uint8_t* blocks[1] = {nullptr};
  const KvHeadView view{GgmlType::kF16, blocks, 16, 128};
  const KvHeadView by_dim{GgmlType::kF16, blocks, 16, 2, 0, 32};
  ForEachIsa([&](Isa isa) {
    for (const KvHeadView& v : {view, by_dim}) {
      std::vector<float> q(64, 1.0f), out(64, 3.0f);
      float scores[1];
      AttendHead(q.data(), 64, view, v, 0, 0.125f, 0.0f, -INFINITY, scores, out.data());
      for (float o : out) ASSERT_EQ(o, 0.0f) << IsaName(isa) << " values by dim " << (v.dim_stride_bytes != 0);
    }
  });
}

// Rows over one KV head in one call (a grouped-query group of heads, of one
// or several tokens with their own causal lengths) give each row the bits of
// its own AttendHead call, on every target: across the 128-position chunks the
// rows are taken in and the splits of kAttentionSplitPositions (odd lengths, a
// window start that is not a block boundary, rows ending in different chunks
// and splits, unsplit rows beside split ones), in parts of kMaxAttentionRows,
// with soft-capping and per-row sinks.
TEST(AttendRows, EachRowBitEqualToAttendHead) {
  std::mt19937 rng(21);
  for (GgmlType type : {GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kF32, GgmlType::kBF16}) {
    for (int64_t head_dim : {64, 96, 128}) {
      if (type == GgmlType::kQ8_0 && head_dim % 32 != 0) continue;
      for (int64_t n_rows : {1, 3, 16, 23}) {
        const int64_t n_total = 601, block_tokens = 16, out_stride = head_dim + 3;
        std::vector<float> k_deq, v_deq;
        PagedKv k(type, head_dim, n_total, block_tokens, rng, &k_deq, type != GgmlType::kQ8_0 && n_rows != 3);
        PagedKv v(type, head_dim, n_total, block_tokens, rng, &v_deq, type != GgmlType::kQ8_0 && n_rows != 16);
        const auto q = Random(rng, n_rows * head_dim, -1.5f, 1.5f);
        const auto sinks = Random(rng, n_rows, -1.0f, 3.0f);
        for (int64_t first : {0, 37}) {
          for (float softcap : {0.0f, 3.0f}) {
            for (bool with_sinks : {false, true}) {
              KvHeadView kv = k.view, vv = v.view;
              kv.first_position = vv.first_position = first;
              // Row r sees n − (r % 5)·97 positions: tokens of a causal tile (and a row of none).
              const int64_t n = n_total - first;
              ForEachIsa([&](Isa isa) {
                std::vector<float> want(static_cast<size_t>(n_rows * out_stride), 9.0f), got = want;
                std::vector<float> scores(static_cast<size_t>(std::min(n_rows, kMaxAttentionRows) * n));
                std::vector<AttentionRow> rows;
                for (int64_t r = 0; r < n_rows; ++r) {
                  const int64_t n_r = r == 2 ? 0 : n - (r % 5) * 97;
                  const float sink = with_sinks ? sinks[r] : -INFINITY;
                  AttendHead(q.data() + r * head_dim, head_dim, kv, vv, n_r, 0.125f, softcap, sink, scores.data(),
                             want.data() + r * out_stride);
                  rows.push_back({q.data() + r * head_dim, got.data() + r * out_stride, n_r, sink});
                }
                AttendRows(rows.data(), n_rows, head_dim, kv, vv, 0.125f, softcap, scores.data());
                for (size_t i = 0; i < want.size(); ++i)
                  ASSERT_EQ(got[i], want[i]) << GgmlTypeName(type) << " head_dim " << head_dim << " n_rows "
                                             << n_rows << " first " << first << " softcap " << softcap
                                             << " sinks " << with_sinks << " i " << i << " " << IsaName(isa);
              });
            }
          }
        }
      }
    }
  }
}

// A call in pieces (every split on its own scores scratch, the splits in
// reverse order, as threads may finish them), then merged, gives each row the
// bits of AttendRows on every target.
TEST(AttendRows, SplitsInAnyOrderThenMergedGiveAttendRowsBits) {
  std::mt19937 rng(23);
  const int64_t head_dim = 64, n_total = 3 * kAttentionSplitPositions + 45, block_tokens = 16;
  for (GgmlType type : {GgmlType::kF16, GgmlType::kQ8_0}) {
    std::vector<float> k_deq, v_deq;
    PagedKv k(type, head_dim, n_total, block_tokens, rng, &k_deq, /*by_dim=*/type == GgmlType::kF16);
    PagedKv v(type, head_dim, n_total, block_tokens, rng, &v_deq, /*by_dim=*/type == GgmlType::kF16);
    const int64_t n_rows = 19;
    const auto q = Random(rng, n_rows * head_dim, -1.5f, 1.5f);
    const auto sinks = Random(rng, n_rows, -1.0f, 3.0f);
    ForEachIsa([&](Isa isa) {
      std::vector<float> want(static_cast<size_t>(n_rows * head_dim), 9.0f), got = want;
      std::vector<AttentionRow> want_rows, got_rows;
      for (int64_t r = 0; r < n_rows; ++r) {
        const int64_t n_r = r == 4 ? 0 : n_total - r * 41;  // 782 down to 44: 4 splits to unsplit
        const float sink = r % 3 == 0 ? sinks[r] : -INFINITY;
        want_rows.push_back({q.data() + r * head_dim, want.data() + r * head_dim, n_r, sink});
        got_rows.push_back({q.data() + r * head_dim, got.data() + r * head_dim, n_r, sink});
      }
      std::vector<float> scores(static_cast<size_t>(AttentionScoresFloats(want_rows.data(), n_rows)));
      AttendRows(want_rows.data(), n_rows, head_dim, k.view, v.view, 0.125f, 2.5f, scores.data());
      const int64_t n_splits = AttentionSplits(got_rows.data(), n_rows);
      ASSERT_EQ(n_splits, 4);
      std::vector<float> states(static_cast<size_t>(n_splits * n_rows * AttentionStateFloats(head_dim)), NAN);
      for (int64_t j = n_splits - 1; j >= 0; --j) {
        std::vector<float> own(scores.size(), NAN);
        AttendRowsSplit(got_rows.data(), n_rows, head_dim, k.view, v.view, 0.125f, 2.5f, j, states.data(),
                        own.data());
      }
      MergeAttentionSplits(got_rows.data(), n_rows, head_dim, states.data());
      for (size_t i = 0; i < want.size(); ++i)
        ASSERT_EQ(got[i], want[i]) << GgmlTypeName(type) << " i " << i << " " << IsaName(isa);
    });
  }
}

// Rows long enough to be split, on every target and in the scalar twin,
// against attention computed here in double over all positions at once (no
// splits): the split order changes the rounding only. Tolerance as for
// AttendHead above, with the float sums over a split (≤ S positions) instead
// of all n, plus the merge: a weight per split rounded a few times and one
// float sum over the splits: |Δ out_d| <= (2·max δ + 4·2⁻²¹ + (n/8 + S/2 +
// 2·splits + 24)·u)·Σ_p w_p·|v_pd|.
TEST(AttendHead, SplitRowsMatchUnsplitDoubleReference) {
  std::mt19937 rng(29);
  const int64_t head_dim = 64, n_total = 1700, block_tokens = 16;
  const int64_t S = kAttentionSplitPositions;
  for (GgmlType type : {GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kF32}) {
    std::vector<float> k_deq, v_deq;
    PagedKv k(type, head_dim, n_total, block_tokens, rng, &k_deq, /*by_dim=*/type == GgmlType::kF16);
    PagedKv v(type, head_dim, n_total, block_tokens, rng, &v_deq, /*by_dim=*/type != GgmlType::kQ8_0);
    const auto q = Random(rng, head_dim, -2.0f, 2.0f);
    const float scale = 0.125f;
    for (int64_t first : {int64_t{0}, int64_t{37}}) {
      for (int64_t n : {S + 1, 2 * S, 2 * S + 1, 3 * S + 77, n_total - 37}) {
        for (auto [softcap, sink] : {std::pair{0.0f, -INFINITY}, {3.0f, -INFINITY}, {0.0f, 2.5f}}) {
          std::vector<double> w(static_cast<size_t>(n)), want(static_cast<size_t>(head_dim), 0.0);
          double max_score = sink, max_delta = 0, sum = 0;
          for (int64_t p = 0; p < n; ++p) {
            double dot = 0, mag = 0;
            for (int64_t d = 0; d < head_dim; ++d) {
              dot += static_cast<double>(q[d]) * k_deq[(first + p) * head_dim + d];
              mag += std::fabs(static_cast<double>(q[d]) * k_deq[(first + p) * head_dim + d]);
            }
            max_delta = std::fmax(max_delta, scale * (static_cast<double>(head_dim) / 8 + 8) * kU * mag);
            dot *= scale;
            if (softcap > 0) dot = softcap * std::tanh(dot / softcap);
            w[p] = dot;
            max_score = std::fmax(max_score, dot);
          }
          sum = std::exp(sink - max_score);
          for (double& x : w) sum += (x = std::exp(x - max_score));
          for (double& x : w) x /= sum;
          const double splits = static_cast<double>(AttentionSplits(n));
          const double rel = 2 * max_delta + 4 * kExpRel +
                             (static_cast<double>(n) / 8 + static_cast<double>(S) / 2 + 2 * splits + 24) * kU;
          std::vector<double> tol(static_cast<size_t>(head_dim), 1e-30);
          for (int64_t p = 0; p < n; ++p) {
            for (int64_t d = 0; d < head_dim; ++d) {
              want[d] += w[p] * v_deq[(first + p) * head_dim + d];
              tol[d] += rel * w[p] * std::fabs(v_deq[(first + p) * head_dim + d]);
            }
          }
          KvHeadView kv = k.view, vv = v.view;
          kv.first_position = vv.first_position = first;
          std::vector<float> scores(static_cast<size_t>(n)), got(static_cast<size_t>(head_dim));
          const std::string what = std::string(GgmlTypeName(type)) + " first " + std::to_string(first) + " n " +
                                   std::to_string(n) + " softcap " + std::to_string(softcap) + " sink " +
                                   std::to_string(sink);
          scalar::AttendHead(q.data(), head_dim, kv, vv, n, scale, softcap, sink, scores.data(), got.data());
          for (int64_t d = 0; d < head_dim; ++d) ASSERT_NEAR(got[d], want[d], tol[d]) << "scalar twin " << what;
          ForEachIsa([&](Isa isa) {
            std::fill(got.begin(), got.end(), NAN);
            AttendHead(q.data(), head_dim, kv, vv, n, scale, softcap, sink, scores.data(), got.data());
            for (int64_t d = 0; d < head_dim; ++d) ASSERT_NEAR(got[d], want[d], tol[d]) << what << " " << IsaName(isa);
          });
        }
      }
    }
  }
}

}  // namespace
}  // namespace ridge::kernels
