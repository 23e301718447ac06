// MatMulGroup: several products in one call of the pool give the same bits as
// MatMul on each (what a step's experts, Q/K/V and gate/up rely on for batch
// invariance), on every dispatch target, whatever the mix of types, token
// counts (rows and panel paths), shared inputs and thread counts.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "random_weights.h"
#include "ridge/base/cpu_features.h"
#include "ridge/base/thread_pool.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/kernels/ops.h"

namespace ridge::kernels {
namespace {

struct Product {
  std::vector<uint8_t> bytes;
  WeightMatrix w;
  const float* x = nullptr;  // [n_tokens, n_cols], possibly another product's
  int64_t n_tokens = 0;
  const int64_t* rows = nullptr;    // gathered: token t is row rows[t] of the shared x
  const float* gathered = nullptr;  // gathered: the same rows copied, [n_tokens, n_cols]
};

// How a group's products read their tokens.
enum class Input {
  kSlices,  // each pair its own slice of one activation buffer
  kGather,  // each pair rows of one shared buffer, as a mixture's experts gather from xn
};

// Expert-like products: each reads its own tokens, and pairs of them (gate
// and up) read the same ones. Gathered, a pair's tokens are rows of x in a
// random order, some of them twice, and the pairs' rows overlap.
void CheckGroup(const std::vector<GgmlType>& types, const std::vector<int64_t>& token_counts, int64_t n_rows,
                int64_t n_cols, uint32_t seed, Input input = Input::kSlices) {
  std::mt19937 rng(seed);
  int64_t total_tokens = 0;
  for (int64_t n : token_counts) total_tokens += n;
  const int64_t x_tokens = input == Input::kGather ? std::max<int64_t>(1, total_tokens / 3) : total_tokens;
  std::vector<float> x(static_cast<size_t>(x_tokens * n_cols));
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (float& v : x) v = uniform(rng);
  std::vector<int64_t> rows(static_cast<size_t>(total_tokens));
  std::uniform_int_distribution<int64_t> pick(0, x_tokens - 1);
  for (int64_t& r : rows) r = pick(rng);
  std::vector<float> gathered(static_cast<size_t>(total_tokens * n_cols));
  for (int64_t t = 0; t < total_tokens; ++t)
    std::copy_n(x.data() + rows[static_cast<size_t>(t)] * n_cols, n_cols, gathered.data() + t * n_cols);

  std::vector<Product> products;
  int64_t first_token = 0;
  for (size_t i = 0; i < token_counts.size(); ++i) {
    for (int pair = 0; pair < 2; ++pair) {  // two matrices on the same input
      Product p;
      const GgmlType type = types[(2 * i + static_cast<size_t>(pair)) % types.size()];
      const int64_t row_bytes = RowBytes(type, n_cols);
      p.bytes.resize(static_cast<size_t>(row_bytes * n_rows));
      for (int64_t r = 0; r < n_rows; ++r) RandomWeightRow(type, n_cols, 0.05f, rng, p.bytes.data() + r * row_bytes);
      p.w = {type, p.bytes.data(), n_rows, n_cols, row_bytes};
      p.n_tokens = token_counts[i];
      if (input == Input::kGather) {
        p.x = x.data();
        p.rows = rows.data() + first_token;
        p.gathered = gathered.data() + first_token * n_cols;
      } else {
        p.x = x.data() + first_token * n_cols;
      }
      products.push_back(std::move(p));
    }
    first_token += token_counts[i];
  }

  for (int threads : {1, 2, 3}) {
    ThreadPool pool(threads);
    for (Isa isa : SupportedIsas()) {
      SetIsaOverride(isa);
      std::vector<std::vector<float>> want(products.size()), got(products.size());
      std::vector<MatMulJob> jobs;
      for (size_t i = 0; i < products.size(); ++i) {
        const Product& p = products[i];
        want[i].assign(static_cast<size_t>(p.n_tokens * n_rows), 0.0f);
        got[i].assign(want[i].size(), -1.0f);
        MatMul(p.w, p.rows != nullptr ? p.gathered : p.x, p.n_tokens, want[i].data(), pool);
        jobs.push_back({&p.w, p.x, p.n_tokens, got[i].data(), p.rows, x_tokens});
      }
      MatMulGroup(jobs, pool);
      for (size_t i = 0; i < products.size(); ++i)
        ASSERT_EQ(0, std::memcmp(want[i].data(), got[i].data(), want[i].size() * 4))
            << GgmlTypeName(products[i].w.type) << " product " << i << " (" << products[i].n_tokens
            << " tokens) rows=" << n_rows << " cols=" << n_cols << " isa=" << IsaName(isa) << " threads=" << threads;
      ClearIsaOverride();
    }
  }
}

TEST(MatMulGroup, SameBitsAsMatMulOnEachProduct) {
  uint32_t seed = 1;
  // Decode-sized experts (rows path), one past the rows groups (5-7), and
  // panel-sized ones (8+) mixed in the same call.
  const std::vector<int64_t> counts = {1, 2, 3, 4, 5, 7, 1, 9, 16};
  for (const std::vector<GgmlType>& types :
       std::vector<std::vector<GgmlType>>{{GgmlType::kMXFP4},
                                          {GgmlType::kQ8_0, GgmlType::kQ4_0},
                                          {GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K, GgmlType::kQ3_K},
                                          {GgmlType::kQ2_K, GgmlType::kQ6_K, GgmlType::kIQ4_XS},
                                          {GgmlType::kF16, GgmlType::kQ5_0},
                                          {GgmlType::kF32, GgmlType::kBF16}})
    for (int64_t n_rows : {13, 70, 300})
      for (int64_t n_cols : {256, 1024}) CheckGroup(types, counts, n_rows, n_cols, seed++);
}

// Gathered inputs (a mixture's experts reading rows of xn) give the bits of
// MatMul on the rows copied out, whether the types' preparations are shared
// or not and whether x is quantized once inline or on the pool.
TEST(MatMulGroup, GatheredRowsGiveTheBitsOfTheirCopies) {
  uint32_t seed = 100;
  const std::vector<int64_t> counts = {1, 2, 3, 5, 9, 16};
  for (const std::vector<GgmlType>& types :
       std::vector<std::vector<GgmlType>>{{GgmlType::kQ8_0, GgmlType::kQ4_0},
                                          {GgmlType::kQ4_K, GgmlType::kQ6_K, GgmlType::kQ4_K, GgmlType::kQ5_K},
                                          {GgmlType::kMXFP4, GgmlType::kIQ4_XS},
                                          {GgmlType::kF16, GgmlType::kF32, GgmlType::kBF16, GgmlType::kQ8_0}})
    for (int64_t n_rows : {13, 300}) CheckGroup(types, counts, n_rows, 256, seed++, Input::kGather);
  CheckGroup({GgmlType::kQ4_K, GgmlType::kQ8_0}, {1, 2, 3, 12, 40, 64}, 300, 2048, seed++, Input::kGather);
}

// Large enough that the rows path splits each matrix into many tasks and the
// group runs on the pool rather than inline; the 12-token pair takes panels.
TEST(MatMulGroup, ManyTasksPerProduct) {
  CheckGroup({GgmlType::kMXFP4, GgmlType::kQ8_0}, {1, 2, 3, 12}, 1000, 2048, 77);
}

TEST(MatMulGroup, EmptyGroupAndEmptyProducts) {
  ThreadPool pool(2);
  MatMulGroup({}, pool);
  std::vector<uint8_t> bytes(static_cast<size_t>(RowBytes(GgmlType::kQ8_0, 64) * 4));
  const WeightMatrix w{GgmlType::kQ8_0, bytes.data(), 4, 64, RowBytes(GgmlType::kQ8_0, 64)};
  float y = 42.0f;
  const MatMulJob none[] = {{&w, nullptr, 0, &y}};
  MatMulGroup(none, pool);
  EXPECT_EQ(y, 42.0f);
}

}  // namespace
}  // namespace ridge::kernels
