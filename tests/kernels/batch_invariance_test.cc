// Batch invariance: MatMul's output for a token is the same bits whatever
// other tokens share the call (how many, which ones, whichever path the
// driver takes for that count), on every dispatch target and weight type.
// The engine relies on it: a sequence's logits must not depend on what else
// is in its step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ridge/base/cpu_features.h"
#include "ridge/base/thread_pool.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/kernels/ops.h"
#include "random_weights.h"

namespace ridge::kernels {
namespace {

// w repacked into weight panels in place by isa's kernels (RepackInPlace, as at load).
void Repack(Weights& w, Isa isa) {
  w.matrix.data = w.bytes.data();
  SetIsaOverride(isa);
  ASSERT_TRUE(CanRepack(w.matrix)) << IsaName(isa) << " " << GgmlTypeName(w.matrix.type);
  RepackInPlace(w.matrix, w.bytes.data());
  ClearIsaOverride();
}

// Each token alone, then the tokens in calls of many sizes (random subsets,
// in random order): every row of every call must equal the token's own.
// repacked: the weights repacked at load by this CPU's ISA first (whole
// panels; every ISA then multiplies them, in place or unpacked).
void CheckInvariant(GgmlType type, int64_t n_rows, int64_t n_cols, uint32_t seed, bool repacked = false,
                    Isa repack_isa = HardwareIsa(), int64_t n_tokens = 70) {
  std::mt19937 rng(seed);
  Weights w = RandomWeights(type, n_rows, n_cols, rng);
  if (repacked) Repack(w, repack_isa);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n_tokens * n_cols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = (i % 97 == 5) ? 20.0f * uniform(rng) : uniform(rng);

  for (int threads : {1, 2}) {
    ThreadPool pool(threads);
    for (Isa isa : SupportedIsas()) {
      SetIsaOverride(isa);
      std::vector<float> alone(static_cast<size_t>(n_tokens * n_rows));
      for (int64_t t = 0; t < n_tokens; ++t)
        MatMul(w.matrix, x.data() + t * n_cols, 1, alone.data() + t * n_rows, pool);
      // Sizes around every rows-group and panel threshold, and the whole set.
      for (int64_t n : std::vector<int64_t>{2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 48, 64, n_tokens}) {
        if (n > n_tokens) continue;
        std::vector<int64_t> order(n_tokens);
        for (int64_t t = 0; t < n_tokens; ++t) order[static_cast<size_t>(t)] = t;
        std::shuffle(order.begin(), order.end(), rng);
        std::vector<float> xs(static_cast<size_t>(n * n_cols)), ys(static_cast<size_t>(n * n_rows));
        for (int64_t i = 0; i < n; ++i)
          std::memcpy(xs.data() + i * n_cols, x.data() + order[static_cast<size_t>(i)] * n_cols,
                      static_cast<size_t>(n_cols) * 4);
        MatMul(w.matrix, xs.data(), n, ys.data(), pool);
        for (int64_t i = 0; i < n; ++i) {
          const int64_t t = order[static_cast<size_t>(i)];
          ASSERT_EQ(0, std::memcmp(ys.data() + i * n_rows, alone.data() + t * n_rows, static_cast<size_t>(n_rows) * 4))
              << GgmlTypeName(type) << " rows=" << n_rows << " cols=" << n_cols << " isa=" << IsaName(isa)
              << " threads=" << threads << ": token " << t << " in a call of " << n << " differs from alone";
        }
      }
      ClearIsaOverride();
    }
  }
}

TEST(MatMulBatchInvariance, QuantizedTypes) {
  uint32_t seed = 1;
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0})
    for (int64_t n_cols : {64, 288, 1056})
      for (int64_t n_rows : {1, 13, 70}) CheckInvariant(type, n_rows, n_cols, seed++);
}

// Weights repacked at load: decode (panel_run), small batches and prefill
// all read the panels in place.
TEST(MatMulBatchInvariance, RepackedQuantizedTypes) {
  if (HardwareIsa() == Isa::kScalar) GTEST_SKIP() << "no ISA with weight-panel kernels on this CPU";
  uint32_t seed = 30;
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kIQ4_NL, GgmlType::kMXFP4, GgmlType::kQ4_1,
                        GgmlType::kQ5_0, GgmlType::kQ5_1})
    for (int64_t n_cols : {64, 288, 1056})
      for (int64_t n_rows : {32, 96}) CheckInvariant(type, n_rows, n_cols, seed++, /*repacked=*/true);
}

// The K-quants' weight panels, 256-column super-blocks (one layout a type,
// the same for AVX2 and AVX-512), read in place where the ISA has their
// kernels, unpacked under the others.
TEST(MatMulBatchInvariance, RepackedKQuants) {
  uint32_t seed = 40;
  std::mt19937 rng(1);
  int checked = 0;
  for (GgmlType type : {GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kQ3_K, GgmlType::kQ2_K,
                        GgmlType::kIQ4_XS}) {
    if (!CanRepack(RandomWeights(type, 32, 256, rng).matrix)) continue;
    for (int64_t n_cols : {256, 1280})
      for (int64_t n_rows : {32, 96}) CheckInvariant(type, n_rows, n_cols, seed++, /*repacked=*/true);
    ++checked;
  }
  if (checked == 0) GTEST_SKIP() << "no ISA with K-quant weight-panel kernels on this CPU";
}

TEST(MatMulBatchInvariance, Legacy32BlockTypes) {
  uint32_t seed = 50;
  for (GgmlType type : {GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kIQ4_NL, GgmlType::kMXFP4})
    for (int64_t n_cols : {64, 288, 1056})
      for (int64_t n_rows : {1, 13, 70}) CheckInvariant(type, n_rows, n_cols, seed++);
}

TEST(MatMulBatchInvariance, KQuantTypes) {
  uint32_t seed = 100;
  for (GgmlType type : {GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,
                        GgmlType::kIQ4_XS})
    for (int64_t n_cols : {256, 1280})
      for (int64_t n_rows : {1, 13, 70}) CheckInvariant(type, n_rows, n_cols, seed++);
}

// The targets above avx2 this CPU runs (avx512, amx).
std::vector<Isa> WiderThanAvx2() {
  std::vector<Isa> wider;
  for (Isa isa : SupportedIsas())
    if (isa > Isa::kAvx2) wider.push_back(isa);
  return wider;
}

// Every quantized type takes the same float steps on AVX2, AVX-512 and AMX
// tiles (the int8 activations are the same bytes, the block sums are exact):
// a model gives the same bits on every kind of machine.
TEST(MatMulBatchInvariance, SameBitsOnAvx2AndAvx512) {
  if (WiderThanAvx2().empty()) GTEST_SKIP() << "needs a CPU with AVX-512";
  uint32_t seed = 300;
  ThreadPool pool(2);
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                        GgmlType::kIQ4_NL, GgmlType::kMXFP4, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,
                        GgmlType::kQ3_K, GgmlType::kQ2_K, GgmlType::kIQ4_XS})
    for (int64_t n_cols : {256, 1280})
      for (int64_t n_rows : {13, 70})
        for (int64_t n_tokens : {1, 5, 40, 67}) {
          std::mt19937 rng(seed++);
          const Weights w = RandomWeights(type, n_rows, n_cols, rng);
          std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
          std::vector<float> x(static_cast<size_t>(n_tokens * n_cols));
          for (float& v : x) v = uniform(rng);
          std::vector<float> y2(static_cast<size_t>(n_tokens * n_rows)), y_wide(y2.size());
          SetIsaOverride(Isa::kAvx2);
          MatMul(w.matrix, x.data(), n_tokens, y2.data(), pool);
          for (Isa isa : WiderThanAvx2()) {
            SetIsaOverride(isa);
            MatMul(w.matrix, x.data(), n_tokens, y_wide.data(), pool);
            ASSERT_EQ(0, std::memcmp(y2.data(), y_wide.data(), y2.size() * 4))
                << GgmlTypeName(type) << " " << IsaName(isa) << " rows=" << n_rows << " cols=" << n_cols
                << " tokens=" << n_tokens;
          }
          ClearIsaOverride();
        }
}

// The same on weights repacked at load (each ISA packs and reads the same
// layout): both give the bits of the file layout.
TEST(MatMulBatchInvariance, SameBitsOnAvx2AndAvx512Repacked) {
  if (WiderThanAvx2().empty()) GTEST_SKIP() << "needs a CPU with AVX-512";
  uint32_t seed = 400;
  ThreadPool pool(2);
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                        GgmlType::kIQ4_NL, GgmlType::kMXFP4, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,
                        GgmlType::kQ3_K, GgmlType::kQ2_K, GgmlType::kIQ4_XS})
    for (int64_t n_cols : {256, 1280})
      for (int64_t n_tokens : {1, 2, 3, 5, 40, 67}) {
        std::mt19937 rng(seed++);
        const Weights w = RandomWeights(type, 64, n_cols, rng);
        Weights p2 = w;
        Repack(p2, Isa::kAvx2);
        std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
        std::vector<float> x(static_cast<size_t>(n_tokens * n_cols));
        for (float& v : x) v = uniform(rng);
        std::vector<float> want(static_cast<size_t>(n_tokens * 64)), y2(want.size()), y_wide(want.size());
        SetIsaOverride(Isa::kAvx2);
        MatMul(w.matrix, x.data(), n_tokens, want.data(), pool);
        MatMul(p2.matrix, x.data(), n_tokens, y2.data(), pool);
        ASSERT_EQ(0, std::memcmp(want.data(), y2.data(), want.size() * 4)) << GgmlTypeName(type) << " avx2";
        for (Isa isa : WiderThanAvx2()) {
          Weights packed = w;
          Repack(packed, isa);
          SetIsaOverride(isa);
          MatMul(packed.matrix, x.data(), n_tokens, y_wide.data(), pool);
          ASSERT_EQ(0, std::memcmp(want.data(), y_wide.data(), want.size() * 4))
              << GgmlTypeName(type) << " " << IsaName(isa) << " tokens=" << n_tokens;
        }
        ClearIsaOverride();
      }
}

TEST(MatMulBatchInvariance, FloatTypes) {
  uint32_t seed = 200;
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16})
    for (int64_t n_cols : {7, 33, 50, 288, 1001})  // 50 (AVX-512): a pass, a single step, a tail
      for (int64_t n_rows : {1, 13, 70}) CheckInvariant(type, n_rows, n_cols, seed++);
}

// Prefill on the float kernels goes over blocks of rows (kL2BlockBytes: on
// AVX2 converted to f32 once, 11 rows of 4100 columns; on AVX-512 the rows as
// stored, 20 F16/BF16 or 8 F32 rows) and takes up to 96 tokens a call: 40 rows
// of 4100 columns (a tail) make a task span several blocks, and 100 tokens
// take two calls.
TEST(MatMulBatchInvariance, FloatTypesAcrossConvertedBlocks) {
  uint32_t seed = 300;
  for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16})
    CheckInvariant(type, 40, 4100, seed++, false, HardwareIsa(), 100);
}

}  // namespace
}  // namespace ridge::kernels
