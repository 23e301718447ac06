// Weights repacked at load (kernels::RepackInPlace): the bytes unpack to the
// file's exactly, and MatMul / MatMulGroup of the repacked matrix give the
// same bits as of the file's rows on every dispatch target (the ISA with
// weight-panel kernels reads them in place; the others unpack per call),
// whatever the token count (decode, small batches, prefill) and thread count.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstring>
#include <iterator>
#include <random>
#include <vector>

#include "ridge/base/cpu_features.h"
#include "ridge/base/thread_pool.h"
#include "ridge/kernels/ops.h"
#include "random_weights.h"

namespace ridge::kernels {
namespace {

constexpr GgmlType kPanelTypes[] = {GgmlType::kQ8_0,  GgmlType::kQ4_0, GgmlType::kIQ4_NL, GgmlType::kMXFP4,
                                    GgmlType::kQ4_1,  GgmlType::kQ5_0, GgmlType::kQ5_1,   GgmlType::kQ4_K,
                                    GgmlType::kQ5_K,  GgmlType::kQ6_K, GgmlType::kQ3_K,   GgmlType::kQ2_K,
                                    GgmlType::kIQ4_XS};

bool IsKQuant(GgmlType type) {
  return type == GgmlType::kQ4_K || type == GgmlType::kQ5_K || type == GgmlType::kQ6_K || type == GgmlType::kQ3_K ||
         type == GgmlType::kQ2_K || type == GgmlType::kIQ4_XS;
}

// Whether isa has weight-panel kernels for the types of kPanelTypes: AVX2
// and AVX-512 for all of them (amx: AVX-512's), scalar for none.
bool PanelsOn(Isa isa) { return isa >= Isa::kAvx2; }

// Columns of the smallest test matrix of type: one block (K-quants: one super-block).
int64_t MinCols(GgmlType type) { return IsKQuant(type) ? 256 : 64; }

// The types this CPU repacks (under its own ISA).
std::vector<GgmlType> PanelTypesHere() {
  if (!PanelsOn(HardwareIsa())) return {};
  return std::vector<GgmlType>(std::begin(kPanelTypes), std::end(kPanelTypes));
}

// A repacked copy of m, packed by `isa`'s kernels (every ISA writes the same layout).
Weights Repacked(const Weights& m, Isa isa = HardwareIsa()) {
  Weights p = m;
  p.matrix.data = p.bytes.data();
  SetIsaOverride(isa);
  EXPECT_TRUE(CanRepack(p.matrix)) << IsaName(isa) << " " << GgmlTypeName(m.matrix.type);
  RepackInPlace(p.matrix, p.bytes.data());
  ClearIsaOverride();
  return p;
}

// Shapes: 1 block (less than a Q8_0 load of 2 and a Q4_0 load of 4), odd block
// counts, the tinyllama width; 1-3 panels, and 33 (Q8_0: over the driver's
// inline size, so tasks of several panels whose halves the kernel streams side
// by side, an odd one left over).
constexpr int64_t kShapes[][2] = {{32, 32}, {64, 96}, {96, 160}, {32, 2048}, {64, 224}, {1056, 64}};
// The K-quants': 1 super-block, odd counts of them, the tinyllama width, 33 panels.
constexpr int64_t kKQuantShapes[][2] = {{32, 256}, {64, 768}, {96, 1280}, {32, 2048}, {1056, 256}};

std::vector<std::array<int64_t, 2>> ShapesOf(GgmlType type) {
  std::vector<std::array<int64_t, 2>> shapes;
  if (IsKQuant(type)) {
    for (const auto& s : kKQuantShapes) shapes.push_back({s[0], s[1]});
  } else {
    for (const auto& s : kShapes) shapes.push_back({s[0], s[1]});
  }
  return shapes;
}

TEST(Repack, OnlyWholePanelsOfTypesWithWeightPanelKernels) {
  std::mt19937 rng(3);
  for (Isa isa : SupportedIsas()) {
    SetIsaOverride(isa);
    for (GgmlType type : kPanelTypes) {
      const bool panels = PanelsOn(isa);
      Weights m = RandomWeights(type, 64, MinCols(type), rng);
      EXPECT_EQ(panels, CanRepack(m.matrix)) << IsaName(isa) << " " << GgmlTypeName(type);
      EXPECT_FALSE(CanRepack(RandomWeights(type, 48, MinCols(type), rng).matrix)) << "48 rows are not whole panels";
      m.matrix.panels = true;
      EXPECT_FALSE(CanRepack(m.matrix)) << "already repacked";
    }
    EXPECT_FALSE(CanRepack(RandomWeights(GgmlType::kF16, 64, 64, rng).matrix));
    ClearIsaOverride();
  }
}

TEST(Repack, UnpackGivesTheFileBytesBack) {
  if (PanelTypesHere().empty()) GTEST_SKIP() << "no ISA with weight-panel kernels on this CPU";
  std::mt19937 rng(5);
  for (GgmlType type : PanelTypesHere()) {
    for (const auto& shape : ShapesOf(type)) {
      const Weights m = RandomWeights(type, shape[0], shape[1], rng);
      const Weights p = Repacked(m);
      EXPECT_TRUE(p.matrix.panels);
      EXPECT_NE(m.bytes, p.bytes) << "the layout changed";
      std::vector<uint8_t> back(m.bytes.size());
      UnpackPanels(p.matrix, 0, p.matrix.n_rows, back.data());
      EXPECT_EQ(m.bytes, back) << GgmlTypeName(type) << " " << shape[0] << "x" << shape[1];
      // Single rows and a range across a panel's edge, alone (a tied embedding's lookup).
      const int64_t rb = p.matrix.row_bytes, n = p.matrix.n_rows;
      for (int64_t r : {int64_t{0}, int64_t{1}, int64_t{31}, n / 2 + 3, n - 1}) {
        std::vector<uint8_t> row(static_cast<size_t>(rb), 0xee);
        UnpackPanels(p.matrix, r, r + 1, row.data());
        ASSERT_TRUE(std::equal(row.begin(), row.end(), m.bytes.begin() + r * rb))
            << GgmlTypeName(type) << " row " << r << " of " << n;
      }
      if (n > 40) {
        std::vector<uint8_t> range(static_cast<size_t>(10 * rb));
        UnpackPanels(p.matrix, 27, 37, range.data());
        ASSERT_TRUE(std::equal(range.begin(), range.end(), m.bytes.begin() + 27 * rb)) << GgmlTypeName(type);
      }
    }
  }
}

// AVX2 and AVX-512 pack every panel type into the same bytes (a model
// repacked on one reads the same weights as on the other).
TEST(Repack, Avx2AndAvx512PackTheSameBytes) {
  if (HardwareIsa() < Isa::kAvx512) GTEST_SKIP() << "needs a CPU with AVX-512";
  std::mt19937 rng(6);
  for (GgmlType type : kPanelTypes)
    for (const auto& shape : ShapesOf(type)) {
      const Weights m = RandomWeights(type, shape[0], shape[1], rng);
      EXPECT_EQ(Repacked(m, Isa::kAvx2).bytes, Repacked(m, Isa::kAvx512).bytes)
          << GgmlTypeName(type) << " " << shape[0] << "x" << shape[1];
    }
}

TEST(Repack, MatMulGivesTheSameBitsAsTheFileLayout) {
  if (PanelTypesHere().empty()) GTEST_SKIP() << "no ISA with weight-panel kernels on this CPU";
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (GgmlType type : PanelTypesHere()) {
    for (const auto& shape : ShapesOf(type)) {
      const int64_t n_rows = shape[0], n_cols = shape[1];
      const Weights m = RandomWeights(type, n_rows, n_cols, rng);
      const Weights p = Repacked(m);
      for (int64_t n_tokens : {1, 2, 3, 4, 5, 7, 8, 13, 33, 70}) {
        std::vector<float> x(static_cast<size_t>(n_tokens * n_cols));
        for (float& v : x) v = uniform(rng);
        for (int threads : {1, 3}) {
          ThreadPool pool(threads);
          for (Isa isa : SupportedIsas()) {
            SetIsaOverride(isa);
            std::vector<float> want(static_cast<size_t>(n_tokens * n_rows), 0.0f), got(want.size(), -1.0f);
            MatMul(m.matrix, x.data(), n_tokens, want.data(), pool);
            MatMul(p.matrix, x.data(), n_tokens, got.data(), pool);
            ClearIsaOverride();
            ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * 4))
                << GgmlTypeName(type) << " " << n_rows << "x" << n_cols << " tokens=" << n_tokens
                << " threads=" << threads << " isa=" << IsaName(isa);
          }
        }
      }
    }
  }
}

// Every code and (sub-block) scale at its largest against activations at
// ±127: the panels' int16 partial sums meet their bound here (AVX2: Q4_0
// and Q4_1 over a block's 8 groups, Q5_0 and Q5_1 over 2, Q4_K over 8, Q5_K
// over 4, MXFP4's |level| 12 over 8; single pairs of |w|·x: Q8_0's
// 128·127·2, IQ4_NL's and IQ4_XS's 127·127·2 = 32258). An overflow or a
// saturation would move a block's sum by ~2¹⁶ of its ~2¹⁷: far outside the
// scalar rows' rounding, and no longer the same bits on every SIMD target
// and layout.
TEST(Repack, CodesAtTheirLargestKeepExactSums) {
  const int64_t n_rows = 64, n_cols = 512;
  for (GgmlType type : PanelTypesHere()) {
    Weights m;
    const int64_t row_bytes = RowBytes(type, n_cols), block_bytes = TraitsOf(type).block_bytes;
    // The codes: bytes 0xff (the largest unsigned codes and K-quant scales) but
    // Q8_0's −128, IQ4_NL's and IQ4_XS's level −127 (code 0), MXFP4's 12 (code 7).
    const uint8_t code_byte = type == GgmlType::kQ8_0                                  ? 0x80
                              : type == GgmlType::kIQ4_NL || type == GgmlType::kIQ4_XS ? 0x00
                              : type == GgmlType::kMXFP4                               ? 0x77
                                                                                       : 0xff;
    m.bytes.assign(static_cast<size_t>(row_bytes * n_rows), code_byte);
    // The scale fields then written over them (f16 0.01; MXFP4's exponent 2^-8).
    const std::vector<int> f16_offsets =
        type == GgmlType::kQ6_K   ? std::vector<int>{208}
        : type == GgmlType::kQ3_K ? std::vector<int>{108}
        : type == GgmlType::kQ2_K ? std::vector<int>{80, 82}
        : type == GgmlType::kQ4_K || type == GgmlType::kQ5_K || type == GgmlType::kQ4_1 || type == GgmlType::kQ5_1
            ? std::vector<int>{0, 2}
        : type == GgmlType::kMXFP4 ? std::vector<int>{}
                                   : std::vector<int>{0};
    const uint16_t h = F32ToF16(0.01f);
    for (int64_t b = 0; b < n_rows * n_cols / TraitsOf(type).block_elems; ++b) {
      uint8_t* block = m.bytes.data() + b * block_bytes;
      for (int offset : f16_offsets) std::memcpy(block + offset, &h, 2);
      if (type == GgmlType::kIQ4_XS) std::memset(block + 2, 0xff, 6);  // scales_h, scales_l: +31
      if (type == GgmlType::kMXFP4) block[0] = 120;
    }
    m.matrix = {type, m.bytes.data(), n_rows, n_cols, row_bytes};
    const bool repacks = CanRepack(m.matrix);
    const Weights p = repacks ? Repacked(m) : m;
    for (int64_t n_tokens : {1, 2, 4, 8, 13}) {
      std::vector<float> x(static_cast<size_t>(n_tokens * n_cols));
      for (int64_t t = 0; t < n_tokens; ++t)  // every activation ±127 after quantization, a token's sign its own
        for (int64_t c = 0; c < n_cols; ++c) x[t * n_cols + c] = t % 2 == 0 ? 1.0f : -1.0f;
      ThreadPool pool(2);
      std::vector<float> scalar(static_cast<size_t>(n_tokens * n_rows), 0.0f), simd;
      SetIsaOverride(Isa::kScalar);
      MatMul(m.matrix, x.data(), n_tokens, scalar.data(), pool);
      for (Isa isa : SupportedIsas()) {
        if (isa == Isa::kScalar) continue;
        SetIsaOverride(isa);
        std::vector<float> file(scalar.size(), -1.0f), repacked(scalar.size(), -1.0f);
        MatMul(m.matrix, x.data(), n_tokens, file.data(), pool);
        MatMul(p.matrix, x.data(), n_tokens, repacked.data(), pool);
        for (size_t i = 0; i < scalar.size(); ++i)
          ASSERT_NEAR(scalar[i], file[i], 1e-4 * std::fabs(scalar[i]))
              << GgmlTypeName(type) << " tokens=" << n_tokens << " isa=" << IsaName(isa) << " output " << i;
        if (simd.empty()) simd = file;
        EXPECT_EQ(0, std::memcmp(simd.data(), file.data(), simd.size() * 4))
            << GgmlTypeName(type) << " file layout, tokens=" << n_tokens << " isa=" << IsaName(isa);
        EXPECT_EQ(0, std::memcmp(simd.data(), repacked.data(), simd.size() * 4))
            << GgmlTypeName(type) << " repacked, tokens=" << n_tokens << " isa=" << IsaName(isa);
      }
      ClearIsaOverride();
    }
  }
}

TEST(Repack, MatMulGroupMixesRepackedAndFileLayout) {
  const std::vector<GgmlType> types = PanelTypesHere();
  if (types.empty()) GTEST_SKIP() << "no ISA with weight-panel kernels on this CPU";
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const int64_t n_rows = 64, n_cols = 256;  // whole blocks of every panel type, Q4_K's super-blocks included
  // Gate and up of a few experts, a pair of each type: one of each pair repacked, the other not.
  std::vector<Weights> file, mixed;
  for (size_t i = 0; i < 2 * types.size(); ++i) {
    file.push_back(RandomWeights(types[i / 2], n_rows, n_cols, rng));
    mixed.push_back(i % 2 == 0 ? Repacked(file.back()) : file.back());
    mixed.back().matrix.data = mixed.back().bytes.data();
  }
  const int64_t token_counts[] = {1, 2, 9};
  std::vector<float> x(static_cast<size_t>(types.size() * 12 * n_cols));  // each pair's tokens, ≤ 12 of them
  for (float& v : x) v = uniform(rng);
  ThreadPool pool(2);
  for (Isa isa : SupportedIsas()) {
    SetIsaOverride(isa);
    std::vector<std::vector<float>> want(file.size()), got(file.size());
    std::vector<MatMulJob> jobs;
    int64_t first = 0;
    for (size_t i = 0; i < file.size(); ++i) {
      const int64_t n = token_counts[(i / 2) % 3];
      want[i].assign(static_cast<size_t>(n * n_rows), 0.0f);
      got[i].assign(want[i].size(), -1.0f);
      MatMul(file[i].matrix, x.data() + first * n_cols, n, want[i].data(), pool);
      jobs.push_back({&mixed[i].matrix, x.data() + first * n_cols, n, got[i].data()});
      if (i % 2 == 1) first += n;
    }
    MatMulGroup(jobs, pool);
    ClearIsaOverride();
    for (size_t i = 0; i < file.size(); ++i)
      ASSERT_EQ(0, std::memcmp(want[i].data(), got[i].data(), want[i].size() * 4))
          << "product " << i << " isa=" << IsaName(isa);
  }
}

}  // namespace
}  // namespace ridge::kernels
