// PagedKvCache's block layouts: keys by dimension (F32, F16, BF16), values
// by dimension where kernels::ValuesByDimension says so for the target in
// use when the cache is made, token-major otherwise; what is stored comes
// back through LoadKv and through the views attention reads.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <utility>
#include <vector>

#include "ridge/base/cpu_features.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/kernels/ops.h"
#include "ridge/kv/paged_kv_cache.h"

namespace ridge {
namespace {

// Element c of the view's position p, dequantized (a whole Q8_0 head: token-major).
float ViewElement(const kernels::KvHeadView& view, int64_t p, int64_t c, int64_t head_dim) {
  const uint8_t* head = view.blocks[p / view.block_tokens] + (p % view.block_tokens) * view.token_stride_bytes;
  std::vector<float> out(static_cast<size_t>(head_dim));
  if (view.dim_stride_bytes == 0) {
    DequantizeRow(view.type, head, out.data(), head_dim);
    return out[static_cast<size_t>(c)];
  }
  DequantizeRow(view.type, head + c * view.dim_stride_bytes, out.data(), 1);
  return out[0];
}

// 2 layers of 3 KV heads of 64 dimensions.
KvCacheShape TwoLayersThreeHeads(GgmlType type, int64_t block_tokens) {
  KvCacheShape shape;
  shape.n_layers = 2;
  shape.n_kv_heads = 3;
  shape.head_dim = 64;
  shape.type = type;
  shape.block_tokens = block_tokens;
  return shape;
}

TEST(PagedKvLayout, StoredHeadsComeBackThroughLoadKvAndTheViewsOnEveryTarget) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  for (Isa isa : SupportedIsas()) {
    SetIsaOverride(isa);
    for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16, GgmlType::kQ8_0}) {
      const KvCacheShape shape = TwoLayersThreeHeads(type, 5);
      PagedKvCache cache(shape, 4);
      const std::string what = std::string(GgmlTypeName(type)) + " " + IsaName(isa);
      EXPECT_EQ(cache.keys_by_dim(), type != GgmlType::kQ8_0) << what;
      EXPECT_EQ(cache.values_by_dim(), kernels::ValuesByDimension(type)) << what;
      const int64_t n = 13, floats = shape.n_kv_heads * shape.head_dim;
      ASSERT_TRUE(cache.Reserve(0, n));
      // want[layer][value][position]: the floats as the cache's type holds them.
      std::vector<float> want(static_cast<size_t>(shape.n_layers * 2 * n * floats));
      auto at = [&](int64_t layer, bool value, int64_t p) { return want.data() + ((layer * 2 + value) * n + p) * floats; };
      std::vector<uint8_t> row(static_cast<size_t>(RowBytes(type, shape.head_dim)));
      for (int64_t layer = 0; layer < shape.n_layers; ++layer) {
        for (int64_t p = 0; p < n; ++p) {
          std::vector<float> k(static_cast<size_t>(floats)), v(k.size());
          for (auto& x : k) x = dist(rng);
          for (auto& x : v) x = dist(rng);
          cache.StoreKv(0, layer, p, k.data(), v.data());
          for (bool value : {false, true})
            for (int64_t h = 0; h < shape.n_kv_heads; ++h) {
              QuantizeRow(type, (value ? v : k).data() + h * shape.head_dim, row.data(), shape.head_dim);
              DequantizeRow(type, row.data(), at(layer, value, p) + h * shape.head_dim, shape.head_dim);
            }
        }
      }
      std::vector<float> got(static_cast<size_t>(floats));
      std::vector<const uint8_t*> k_blocks, v_blocks;
      for (int64_t layer = 0; layer < shape.n_layers; ++layer) {
        for (int64_t p = 0; p < n; ++p)
          for (bool value : {false, true}) {
            cache.LoadKv(value, 0, layer, p, got.data());
            for (int64_t i = 0; i < floats; ++i)
              ASSERT_EQ(got[i], at(layer, value, p)[i]) << what << " LoadKv value " << value << " position " << p;
          }
        for (int64_t h = 0; h < shape.n_kv_heads; ++h) {
          kernels::KvHeadView k, v;
          cache.HeadViews(0, layer, h, k_blocks, v_blocks, k, v);
          EXPECT_EQ(k.dim_stride_bytes != 0, cache.keys_by_dim()) << what;
          EXPECT_EQ(v.dim_stride_bytes != 0, cache.values_by_dim()) << what;
          for (int64_t p = 0; p < n; ++p)
            for (int64_t c = 0; c < shape.head_dim; ++c) {
              ASSERT_EQ(ViewElement(k, p, c, shape.head_dim), at(layer, false, p)[h * shape.head_dim + c])
                  << what << " K view, layer " << layer << " head " << h << " position " << p << " c " << c;
              ASSERT_EQ(ViewElement(v, p, c, shape.head_dim), at(layer, true, p)[h * shape.head_dim + c])
                  << what << " V view, layer " << layer << " head " << h << " position " << p << " c " << c;
            }
        }
      }
    }
    ClearIsaOverride();
  }
}

// The layout follows the target: values by dimension on AVX2 (and scalar),
// token-major where AVX-512's values pass is the faster one, never for Q8_0.
TEST(PagedKvLayout, ValuesByDimensionFollowsTheTarget) {
  for (Isa isa : SupportedIsas()) {
    SetIsaOverride(isa);
    const bool want = isa == Isa::kAvx2 || isa == Isa::kScalar;
    for (GgmlType type : {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16})
      EXPECT_EQ(kernels::ValuesByDimension(type), want) << GgmlTypeName(type) << " " << IsaName(isa);
    EXPECT_FALSE(kernels::ValuesByDimension(GgmlType::kQ8_0)) << IsaName(isa);
    ClearIsaOverride();
  }
}

// Attention reads a head at a time: a sequence's blocks of one (layer, head)
// lie back to back where their ids are consecutive (those of a fresh cache
// are), and no two heads or layers share a byte.
TEST(PagedKvLayout, AHeadsBlocksAreOneStretchOfMemory) {
  for (GgmlType type : {GgmlType::kF16, GgmlType::kQ8_0}) {
    const KvCacheShape shape = TwoLayersThreeHeads(type, 16);
    const int64_t n_blocks = 5, head_block_bytes = shape.block_tokens * RowBytes(type, shape.head_dim);
    PagedKvCache cache(shape, n_blocks);
    ASSERT_TRUE(cache.Reserve(0, n_blocks * shape.block_tokens));
    std::vector<const uint8_t*> k_blocks, v_blocks;
    std::vector<std::pair<const uint8_t*, bool>> starts;  // every head's first block, K or V
    for (int64_t layer = 0; layer < shape.n_layers; ++layer)
      for (int64_t h = 0; h < shape.n_kv_heads; ++h) {
        kernels::KvHeadView k, v;
        cache.HeadViews(0, layer, h, k_blocks, v_blocks, k, v);
        for (int64_t b = 1; b < n_blocks; ++b) {
          EXPECT_EQ(k.blocks[b], k.blocks[0] + b * head_block_bytes) << GgmlTypeName(type) << " K block " << b;
          EXPECT_EQ(v.blocks[b], v.blocks[0] + b * head_block_bytes) << GgmlTypeName(type) << " V block " << b;
        }
        starts.emplace_back(k.blocks[0], false);
        starts.emplace_back(v.blocks[0], true);
      }
    // Each head's stretch is n_blocks · head_block_bytes: stretches of one pool do not overlap.
    for (size_t i = 0; i < starts.size(); ++i)
      for (size_t j = i + 1; j < starts.size(); ++j) {
        if (starts[i].second != starts[j].second) continue;
        const int64_t apart = std::abs(starts[i].first - starts[j].first);
        EXPECT_GE(apart, n_blocks * head_block_bytes) << GgmlTypeName(type) << " heads " << i << ", " << j;
      }
  }
}

}  // namespace
}  // namespace ridge
