// MatMul on every dispatch target against the scalar twin, over many shapes.
//
// Tolerances (per output element y[t, r] = Σ_c W[r,c]·x[t,c], with W the
// dequantized weights):
//  * float rounding: the fast kernels accumulate in float (the twin in
//    double); lanes add at most n_cols/8 + a few terms each, so the error is
//    below 4·(n_cols/8 + 32)·2⁻²⁴·Σ|W·x|.
//  * Q8_0 / Q4_0 quantize each 32-element block of x to int8 with scale
//    d = max|x|/127, so |x − d·q| ≤ d/2 and the error is at most
//    Σ_blocks d/2·Σ|W| (strict bound). Those rounding errors are independent
//    and uniform, so their sum has σ = sqrt(Σ W²·d²/12); we allow
//    min(strict bound, 8σ): a wrong nibble, scale or offset costs O(|y|),
//    which is far above that.
//  * BF16 weights on AVX-512 round each activation to BF16 (nearest even),
//    |x − bf16(x)| ≤ 2⁻⁸·|x|: at most 2⁻⁸·Σ|W·x| (strict), independent errors
//    within ±2⁻⁸·|x|, σ ≤ sqrt(Σ (W·x)²·2⁻¹⁶/3); again min(strict, 8σ).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ridge/base/cpu_features.h"
#include "ridge/base/half.h"
#include "ridge/base/thread_pool.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/kernels/matmul_isa.h"
#include "ridge/kernels/ops.h"
#include "random_weights.h"

namespace ridge::kernels {
namespace {

enum class ActError { kNone, kInt8Blocks, kBf16 };

ActError ActErrorOf(GgmlType type, Isa isa) {
  if (isa == Isa::kScalar) return ActError::kNone;
  if (TraitsOf(type).block_elems > 1) return ActError::kInt8Blocks;  // every quantized type's kernels
  if (type == GgmlType::kBF16 && isa >= Isa::kAvx512) return ActError::kBf16;  // the BF16 dot's operands
  return ActError::kNone;
}

struct Problem {
  GgmlType type;
  int64_t n_rows, n_cols, n_tokens;
  int64_t row_padding = 0;  // extra bytes after each row
  bool random_bytes = false;  // K-quants: random block bytes instead of quantized Gaussian weights
};

std::string Describe(const Problem& p, Isa isa, int threads) {
  return std::string(GgmlTypeName(p.type)) + " rows=" + std::to_string(p.n_rows) + " cols=" +
         std::to_string(p.n_cols) + " tokens=" + std::to_string(p.n_tokens) + " pad=" +
         std::to_string(p.row_padding) + " isa=" + IsaName(isa) + " threads=" + std::to_string(threads);
}

void CheckMatMul(const Problem& p, uint32_t seed, std::vector<int> thread_counts = {1, 2}) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);

  const int64_t row_bytes = RowBytes(p.type, p.n_cols) + p.row_padding;
  std::vector<uint8_t> bytes(static_cast<size_t>(row_bytes * p.n_rows + 64), 0xAB);
  std::vector<float> w_deq(static_cast<size_t>(p.n_rows * p.n_cols));
  for (int64_t r = 0; r < p.n_rows; ++r) {
    const float row_scale = 0.02f * (1.0f + static_cast<float>(r % 5));
    if (p.random_bytes) {
      RandomKQuantBytesRow(p.type, p.n_cols, row_scale, rng, bytes.data() + r * row_bytes);
    } else {
      RandomWeightRow(p.type, p.n_cols, row_scale, rng, bytes.data() + r * row_bytes);
    }
    DequantizeRow(p.type, bytes.data() + r * row_bytes, w_deq.data() + r * p.n_cols, p.n_cols);
  }
  // Activations with a few outlier channels, like real hidden states.
  std::vector<float> x(static_cast<size_t>(p.n_tokens * p.n_cols));
  for (int64_t i = 0; i < static_cast<int64_t>(x.size()); ++i)
    x[i] = (i % 97 == 5) ? 20.0f * uniform(rng) : uniform(rng);

  const WeightMatrix w{p.type, bytes.data(), p.n_rows, p.n_cols, row_bytes};
  std::vector<float> want(static_cast<size_t>(p.n_tokens * p.n_rows));
  {
    ThreadPool one(1);
    scalar::MatMul(w, x.data(), p.n_tokens, want.data(), one);
  }

  for (int threads : thread_counts) {
    ThreadPool pool(threads);
    for (Isa isa : SupportedIsas()) {
      SetIsaOverride(isa);
      std::vector<float> got(want.size(), std::nanf(""));
      MatMul(w, x.data(), p.n_tokens, got.data(), pool);
      ClearIsaOverride();
      const ActError act_error = ActErrorOf(p.type, isa);
      int failures = 0;
      for (int64_t t = 0; t < p.n_tokens && failures < 5; ++t) {
        const float* xt = x.data() + t * p.n_cols;
        for (int64_t r = 0; r < p.n_rows && failures < 5; ++r) {
          const float* wr = w_deq.data() + r * p.n_cols;
          double sum_abs = 0.0, strict = 0.0, variance = 0.0;
          for (int64_t c = 0; c < p.n_cols; ++c) sum_abs += std::fabs(static_cast<double>(wr[c]) * xt[c]);
          if (act_error == ActError::kInt8Blocks) {
            for (int64_t b = 0; b < p.n_cols / 32; ++b) {
              double amax = 0.0, w_abs = 0.0, w_sq = 0.0;
              for (int64_t c = b * 32; c < b * 32 + 32; ++c) {
                amax = std::fmax(amax, std::fabs(xt[c]));
                w_abs += std::fabs(wr[c]);
                w_sq += static_cast<double>(wr[c]) * wr[c];
              }
              const double d = amax / 127.0;
              strict += d / 2.0 * w_abs;
              variance += w_sq * d * d / 12.0;
            }
          } else if (act_error == ActError::kBf16) {
            const double u = std::ldexp(1.0, -8);  // half a BF16 unit in the last place, relative
            for (int64_t c = 0; c < p.n_cols; ++c) {
              const double product = static_cast<double>(wr[c]) * xt[c];
              strict += u * std::fabs(product);
              variance += product * product * u * u / 3.0;
            }
          }
          const double tol = std::fmin(strict, 8.0 * std::sqrt(variance)) +
                             4.0 * (static_cast<double>(p.n_cols) / 8.0 + 32.0) * std::ldexp(1.0, -24) * sum_abs +
                             1e-30;
          const size_t i = static_cast<size_t>(t * p.n_rows + r);
          if (!(std::fabs(static_cast<double>(got[i]) - want[i]) <= tol)) {
            ADD_FAILURE() << Describe(p, isa, threads) << " at t=" << t << " r=" << r << ": got " << got[i]
                          << " want " << want[i] << " tol " << tol;
            ++failures;
          }
        }
      }
    }
  }
}

// The panel kernels' tiles: as few as max_tile allows, sizes one apart at most.
TEST(EvenTokenTilesTest, FewestTilesWithSizesOneApart) {
  EXPECT_EQ(internal::EvenTokenTiles(0, 6).n_tiles, 0);
  for (int64_t max_tile : {1, 4, 6}) {
    for (int64_t n = 1; n <= 80; ++n) {
      const internal::TokenTiles tiles = internal::EvenTokenTiles(n, max_tile);
      EXPECT_EQ(tiles.n_tiles, (n + max_tile - 1) / max_tile) << n;
      int64_t sum = 0;
      for (int64_t k = 0; k < tiles.n_tiles; ++k) {
        const int64_t size = tiles.TileSize(k);
        EXPECT_GE(size, 1) << n;
        EXPECT_LE(size, max_tile) << n;
        sum += size;
      }
      EXPECT_EQ(sum, n) << n;
    }
  }
  const internal::TokenTiles eight = internal::EvenTokenTiles(8, 6);  // 4 + 4, not 6 + 2
  EXPECT_EQ(eight.n_tiles, 2);
  EXPECT_EQ(eight.base, 4);
  EXPECT_EQ(eight.n_big, 0);
  const internal::TokenTiles seven = internal::EvenTokenTiles(7, 6);  // 4 + 3, not 6 + 1
  EXPECT_EQ(seven.TileSize(0), 4);
  EXPECT_EQ(seven.TileSize(1), 3);
}

// A small batch's tiles prefetch every line of the next panel between them,
// as slices of its rows (the file's rows) or as runs of it (a repacked panel,
// one row of bytes), and only the first tile its own stream ahead.
TEST(PrefetchSliceTest, TheTilesCoverEveryLineOfTheNextPanel) {
  struct Case {
    int64_t n_rows, row_bytes, n_blocks;
  };
  // Q8_0 and Q4_0 file rows of 2048 columns; their repacked panels; a 5632-column Q8_0 panel.
  for (const Case& c : {Case{32, 2176, 64}, Case{32, 1152, 64}, Case{1, 69632, 64}, Case{1, 36864, 64},
                        Case{1, 191488, 176}}) {
    const std::vector<uint8_t> bytes(static_cast<size_t>(c.n_rows * c.row_bytes));
    const uint8_t* base = bytes.data();
    const internal::PanelPrefetch next{base, c.n_rows, c.row_bytes, 4096};
    const int64_t n_lines = c.n_rows * c.row_bytes / 64;
    for (int64_t n_tiles : {1, 2, 3, 17}) {
      std::vector<bool> seen(static_cast<size_t>(n_lines), false);
      for (int64_t k = 0; k < n_tiles; ++k) {
        const internal::TilePrefetch pf = internal::PrefetchSlice(next, c.n_blocks, k, n_tiles);
        EXPECT_EQ(pf.ahead, k == 0 ? 4096 : 0);
        if (c.n_rows == 1) {
          EXPECT_EQ(pf.n, 1) << "a run a tile";
        }
        for (int i = 0; i < pf.n; ++i)
          for (int64_t b = 0; b < c.n_blocks; ++b)
            for (int l = 0; l < pf.lines; ++l) {
              const int64_t line = (pf.pieces[i] - base + b * pf.step + 64 * l) / 64;
              if (line < n_lines) seen[static_cast<size_t>(line)] = true;
            }
      }
      for (int64_t line = 0; line < n_lines; ++line)
        EXPECT_TRUE(seen[static_cast<size_t>(line)]) << c.n_rows << " x " << c.row_bytes << ", " << n_tiles
                                                     << " tiles: line " << line;
    }
  }
  const internal::TilePrefetch none = internal::PrefetchSlice({nullptr, 0, 0, 0}, 64, 1, 2);
  EXPECT_EQ(none.n, 0);
}

// 1..4 and 5 (= 4 + 1) cover the rows path's token groups, 8, 9 and 64 the
// panel path with whole and partial token tiles.
std::vector<int64_t> TokenCounts() { return {1, 2, 3, 5, 8, 9, 64}; }

TEST(MatMul, QuantizedTypesManyShapes) {
  uint32_t seed = 1;
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    for (int64_t n_cols : {32, 64, 96, 288, 1056})
      for (int64_t n_rows : {1, 3, 17, 33, 70})
        for (int64_t n_tokens : TokenCounts()) CheckMatMul({type, n_rows, n_cols, n_tokens}, seed++);
  }
}

TEST(MatMul, Legacy32BlockTypesManyShapes) {
  uint32_t seed = 2000;
  for (GgmlType type : {GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kIQ4_NL, GgmlType::kMXFP4}) {
    for (int64_t n_cols : {32, 64, 96, 288, 1056})
      for (int64_t n_rows : {1, 3, 17, 33, 70})
        for (int64_t n_tokens : TokenCounts()) CheckMatMul({type, n_rows, n_cols, n_tokens}, seed++);
    CheckMatMul({type, 48, 5632, 3}, seed++);
    CheckMatMul({type, 200, 1024, 1}, seed++, {2, 3});
    CheckMatMul({type, 200, 1024, 20}, seed++, {2, 3});
  }
}

// MXFP4 blocks of random bytes: every code and a spread of exponents (gpt-oss's
// files hold whatever its training wrote, not only what the quantizer picks).
TEST(MatMul, Mxfp4RandomBlocks) {
  uint32_t seed = 2500;
  for (int64_t n_cols : {32, 2880})  // one block; gpt-oss's rows (90 blocks)
    for (int64_t n_rows : {1, 33})
      for (int64_t n_tokens : TokenCounts())
        CheckMatMul({GgmlType::kMXFP4, n_rows, n_cols, n_tokens, 0, /*random_bytes=*/true}, seed++);
}

TEST(MatMul, KQuantTypesManyShapes) {
  uint32_t seed = 3000;
  for (GgmlType type : {GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,
                        GgmlType::kIQ4_XS}) {
    for (int64_t n_cols : {256, 512, 1280})
      for (int64_t n_rows : {1, 3, 17, 70})
        for (int64_t n_tokens : TokenCounts()) CheckMatMul({type, n_rows, n_cols, n_tokens}, seed++);
    CheckMatMul({type, 40, 5632, 2}, seed++);
    CheckMatMul({type, 19, 256, 9, 7}, seed++);  // padded rows
    CheckMatMul({type, 200, 1024, 1}, seed++, {2, 3});
    CheckMatMul({type, 200, 1024, 20}, seed++, {2, 3});
  }
}

// Every bit pattern of codes and sub-block scales (signed Q3_K scales at −32,
// IQ4_XS scales at +31, all Q2_K mins, ...), not only those the quantizers write.
TEST(MatMul, KQuantRandomBlockBytes) {
  uint32_t seed = 4000;
  for (GgmlType type : {GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,
                        GgmlType::kIQ4_XS}) {
    for (int64_t n_tokens : {1, 3, 6}) CheckMatMul({type, 17, 512, n_tokens, 0, true}, seed++);
    CheckMatMul({type, 33, 1280, 2, 5, true}, seed++);
  }
}

TEST(MatMul, FloatTypesManyShapes) {
  uint32_t seed = 1000;
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16}) {
    for (int64_t n_cols : {1, 7, 16, 17, 33, 64, 100, 288, 1001})
      for (int64_t n_rows : {1, 3, 17, 33, 70})
        for (int64_t n_tokens : TokenCounts()) CheckMatMul({type, n_rows, n_cols, n_tokens}, seed++);
  }
}

TEST(MatMul, PaddedRowsAndUnalignedStarts) {
  uint32_t seed = 5000;
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0, GgmlType::kQ4_0,
                        GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kIQ4_NL, GgmlType::kMXFP4})
    for (int64_t pad : {1, 6, 64})
      for (int64_t n_tokens : {1, 9}) CheckMatMul({type, 19, 64, n_tokens, pad}, seed++);
}

TEST(MatMul, RealisticShapes) {
  uint32_t seed = 9000;
  // tinyllama's ffn_down (n_cols 5632) and a wide output (many rows), a few tokens.
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kF16, GgmlType::kBF16, GgmlType::kF32}) {
    CheckMatMul({type, 48, 5632, 3}, seed++);
    CheckMatMul({type, 300, 512, 17}, seed++);
  }
}

// Large enough that MatMul splits the work over the pool (small calls run
// on the calling thread alone), with more threads than this machine's cores.
TEST(MatMul, SplitOverManyThreads) {
  uint32_t seed = 12000;
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kF16, GgmlType::kBF16})
    for (int64_t n_tokens : {1, 5, 20}) CheckMatMul({type, 200, 1024, n_tokens}, seed++, {2, 3, 5});
}

// Every output is computed whole by one thread, so the thread count must not
// change a single bit (the engine relies on runs being reproducible).
TEST(MatMul, ThreadCountDoesNotChangeResults) {
  std::mt19937 rng(77);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                        GgmlType::kIQ4_NL, GgmlType::kMXFP4, GgmlType::kF16, GgmlType::kBF16, GgmlType::kF32}) {
    const int64_t n_rows = 333, n_cols = 1024, row_bytes = RowBytes(type, n_cols);
    std::vector<float> row(n_cols);
    std::vector<uint8_t> bytes(static_cast<size_t>(row_bytes * n_rows));
    for (int64_t r = 0; r < n_rows; ++r) {
      for (auto& v : row) v = uniform(rng);
      QuantizeRow(type, row.data(), bytes.data() + r * row_bytes, n_cols);
    }
    const WeightMatrix w{type, bytes.data(), n_rows, n_cols, row_bytes};
    for (int64_t n_tokens : {1, 3, 24}) {
      std::vector<float> x(static_cast<size_t>(n_tokens * n_cols));
      for (auto& v : x) v = uniform(rng);
      for (Isa isa : SupportedIsas()) {
        SetIsaOverride(isa);
        std::vector<float> one(static_cast<size_t>(n_tokens * n_rows)), many(one.size());
        ThreadPool pool1(1), pool3(3);
        MatMul(w, x.data(), n_tokens, one.data(), pool1);
        MatMul(w, x.data(), n_tokens, many.data(), pool3);
        ClearIsaOverride();
        EXPECT_EQ(0, std::memcmp(one.data(), many.data(), one.size() * 4))
            << GgmlTypeName(type) << " tokens=" << n_tokens << " " << IsaName(isa);
      }
    }
  }
}

TEST(MatMul, ZeroTokensOrRowsWritesNothing) {
  std::vector<uint8_t> bytes(static_cast<size_t>(RowBytes(GgmlType::kQ8_0, 64)) * 4);
  const WeightMatrix w{GgmlType::kQ8_0, bytes.data(), 0, 64, RowBytes(GgmlType::kQ8_0, 64)};
  std::vector<float> x(64, 1.0f), y(4, 7.0f);
  ThreadPool pool(2);
  MatMul(w, x.data(), 1, y.data(), pool);
  MatMul({GgmlType::kQ8_0, bytes.data(), 4, 64, RowBytes(GgmlType::kQ8_0, 64)}, x.data(), 0, y.data(), pool);
  for (float v : y) EXPECT_EQ(v, 7.0f);
}

}  // namespace
}  // namespace ridge::kernels
