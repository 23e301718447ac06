#include "ridge/roofline/cost_model.h"

#include <gtest/gtest.h>

#include "ridge/base/error.h"

#include <cmath>

namespace ridge {
namespace {

ModelShape Preset(const char* name, GgmlType type = GgmlType::kF16) {
  return ShapeFromPreset(FindModelPreset(name), type);
}

Workload Decode(int64_t batch, int64_t context) { return {Phase::kDecode, 0, batch, context}; }
Workload Prefill(int64_t n) { return {Phase::kPrefill, n, 1, 0}; }

// A model small enough to count by hand: dim 8, 2 heads of 4, 1 KV head,
// ffn 16, vocab 10, 1 layer, every weight 2 bytes; activations and KV 2 bytes.
ModelShape Tiny() {
  ModelShape s;
  s.name = "tiny";
  s.config.n_embd = 8;
  s.config.n_heads = 2;
  s.config.n_kv_heads = 1;
  s.config.head_dim = 4;
  s.config.n_ff = 16;
  s.config.n_vocab = 10;
  s.config.n_layers = 1;
  return s;  // bytes_per_weight defaults to 2 everywhere
}

// peak 100 FLOP/s, 10 B/s: ridge point 10 FLOP/byte.
HardwareProfile Toy() { return {"toy", "toy", 100, 10, 0, "", 0, ""}; }

TEST(CostModel, HandCountedDecodeStep) {
  const PhaseCost p = AnalyzePhase(Tiny(), Decode(1, 3), Toy(), {2, 2});
  ASSERT_EQ(p.ops.size(), 7u);
  // name, FLOPs, bytes (weights + KV + activations), counted by hand:
  struct Want { const char* name; double flops, bytes; };
  const Want want[] = {
      {"QKV projections", 256, 256 + 16 + 32},  // 2·8·(8+4+4); W 8·16·2; K,V 2·4·2; x in, q out 8·2 each
      {"attention scores", 48, 24 + 16},        // 2 · 3 keys · 8; K 3·4·2; q 8·2
      {"attention x V", 48, 24 + 16},
      {"output projection", 128, 128 + 32},
      {"FFN gate/up", 512, 512 + 80},           // 2·8·32; W 8·16·2·2; (8 + 32)·2
      {"FFN down", 256, 256 + 48},
      {"LM head", 160, 160 + 16 + 40},          // logits 10 × 4 bytes
  };
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(p.ops[i].name, want[i].name);
    EXPECT_DOUBLE_EQ(p.ops[i].flops, want[i].flops) << want[i].name;
    EXPECT_DOUBLE_EQ(p.ops[i].bytes, want[i].bytes) << want[i].name;
    EXPECT_DOUBLE_EQ(p.ops[i].intensity, want[i].flops / want[i].bytes);
    // All below the ridge of 10: memory-bound, time = bytes / 10 B/s.
    EXPECT_FALSE(p.ops[i].compute_bound);
    EXPECT_DOUBLE_EQ(p.ops[i].time_s, want[i].bytes / 10);
  }
  EXPECT_DOUBLE_EQ(p.flops, 1408);
  EXPECT_DOUBLE_EQ(p.bytes, 1656);
  EXPECT_DOUBLE_EQ(p.weight_bytes, 256 + 128 + 512 + 256 + 160);
  EXPECT_DOUBLE_EQ(p.kv_bytes, 16 + 24 + 24);
  EXPECT_DOUBLE_EQ(p.time_s, 165.6);
  EXPECT_DOUBLE_EQ(p.roofline_time_s, 165.6);
  EXPECT_EQ(p.tokens, 1);
}

TEST(CostModel, HandCountedPrefillIsCausalAndComputeBoundWhenIntense) {
  // 4 prompt tokens: 4·5/2 = 10 (query, key) pairs per head.
  HardwareProfile slow_compute{"toy", "toy", 1, 1000, 0, "", 0, ""};  // ridge 0.001: everything compute-bound
  const PhaseCost p = AnalyzePhase(Tiny(), Prefill(4), slow_compute, {2, 2});
  EXPECT_DOUBLE_EQ(p.ops[1].flops, 2 * 10 * 8);
  EXPECT_DOUBLE_EQ(p.ops[1].bytes, 4 * 4 * 2 + 4 * 8 * 2);  // K of 4 tokens, Q of 4 tokens
  EXPECT_DOUBLE_EQ(p.ops[0].flops, 4 * 256);
  EXPECT_DOUBLE_EQ(p.ops[6].flops, 160);  // logits of the last token only
  for (const OpCost& op : p.ops) {
    EXPECT_TRUE(op.compute_bound) << op.name;
    EXPECT_DOUBLE_EQ(op.time_s, op.flops / 1.0);
  }
  EXPECT_EQ(p.tokens, 4);
  EXPECT_DOUBLE_EQ(p.TokensPerSecond(), 4 / p.time_s);
}

// The reference (§4): H100 ridge ≈ 295 FLOP/byte; decode at batch 1 with FP16
// weights ≈ 1 FLOP/byte; batch B multiplies it by ≈ B while weights dominate.
// ridge bench -d: a prompt of 4 after 6 cached tokens attends 6·4 + 4·5/2 = 34
// (query, key) pairs and reads all 10 keys; decode at that depth reads its
// whole context, K and V of every layer and KV head.
TEST(CostModel, PrefillAtDepthCountsTheCachedKeys) {
  Workload w = Prefill(4);
  w.depth = 6;
  const PhaseCost p = AnalyzePhase(Tiny(), w, Toy(), {2, 2});
  EXPECT_EQ(p.ops[1].name, "attention scores");
  EXPECT_DOUBLE_EQ(p.ops[1].flops, 2 * 34 * 8);      // 2 FLOPs × pairs × q_dim
  EXPECT_DOUBLE_EQ(p.ops[1].kv_bytes, 10 * 4 * 2);   // keys × kv_dim × 2 bytes
  EXPECT_DOUBLE_EQ(p.ops[2].flops, 2 * 34 * 8);
  EXPECT_DOUBLE_EQ(p.ops[2].kv_bytes, 10 * 4 * 2);
  EXPECT_TRUE(p.ops[1].attention && p.ops[2].attention && !p.ops[0].attention);
  // Depth 0 is the old prefill.
  w.depth = 0;
  EXPECT_DOUBLE_EQ(AnalyzePhase(Tiny(), w, Toy(), {2, 2}).flops, AnalyzePhase(Tiny(), Prefill(4), Toy(), {2, 2}).flops);
  w.depth = -1;
  EXPECT_THROW(AnalyzePhase(Tiny(), w, Toy()), Error);

  // llama-3.2-1b at depth 4096: KV bytes per decode token = 2 · 16 layers · 8 heads · 64 · 2 bytes · 4096.
  const PhaseCost d = AnalyzePhase(Preset("llama-3.2-1b"), Decode(1, 4096), Toy(), {2, 4});
  EXPECT_DOUBLE_EQ(d.kv_bytes, 2.0 * 16 * 8 * 64 * 2 * 4096 + 16 * 2 * 8 * 64 * 2);  // read + the new token's write
}

// A sliding window caps what a prefill at depth reads: gemma-3-1b's 512-token
// window on 5 of 6 layers.
TEST(CostModel, PrefillAtDepthInsideASlidingWindow) {
  const ModelShape g = Preset("gemma-3-1b");
  const int64_t layers = g.config.n_layers, sliding = g.config.SlidingLayerCount();
  ASSERT_GT(sliding, 0);
  Workload w = Prefill(100);
  w.depth = 1000;
  const PhaseCost p = AnalyzePhase(g, w, Toy(), {2, 4});
  const double q = static_cast<double>(g.config.q_dim());
  const double kv_dim = static_cast<double>(g.config.n_kv_heads * g.config.head_dim);
  // Global layers: 100 queries × 1000 + 100·101/2 pairs, 1100 keys; window layers: 512 pairs each, 611 keys.
  const double pairs = (layers - sliding) * (100.0 * 1000 + 5050) + sliding * 100.0 * 512;
  const double keys = (layers - sliding) * 1100.0 + sliding * 611.0;
  EXPECT_NEAR(p.ops[1].flops, 2 * pairs * q, 1e-6 * p.ops[1].flops);
  EXPECT_NEAR(p.ops[1].kv_bytes, keys * kv_dim * 2, 1e-6 * p.ops[1].kv_bytes);
}

// Attention runs at its own peak (a CPU multiplies the F16 cache in FP32 while
// quantized weights use the int8 dot): the totals' compute time adds the two.
TEST(CostModel, AttentionAtItsOwnPeak) {
  HardwareProfile hw = Toy();
  hw.attention_peak_flops = 50;
  Workload w = Prefill(4);
  w.depth = 6;
  const PhaseCost p = AnalyzePhase(Tiny(), w, hw, {2, 2});
  double attention = 0, other = 0;
  for (const OpCost& op : p.ops) {
    (op.attention ? attention : other) += op.flops;
    EXPECT_DOUBLE_EQ(op.time_s, std::max(op.flops / (op.attention ? 50.0 : 100.0), op.bytes / 10)) << op.name;
  }
  EXPECT_DOUBLE_EQ(p.compute_s, other / 100 + attention / 50);
  EXPECT_DOUBLE_EQ(p.roofline_time_s, std::max(p.compute_s, p.bytes / 10));
}

TEST(CostModel, ReferenceDecodeIntensity) {
  const HardwareProfile& h100 = FindHardware("h100");
  EXPECT_NEAR(h100.RidgePoint(), 295, 1);
  const ModelShape llama = Preset("llama-2-7b");
  const PhaseCost one = AnalyzePhase(llama, Decode(1, 16), h100);
  EXPECT_NEAR(one.intensity, 1.0, 0.02);
  EXPECT_FALSE(one.compute_bound);
  EXPECT_GT(one.weight_bytes / one.bytes, 0.99);  // weights are the bytes
  EXPECT_LT(one.flops / one.time_s / h100.peak_flops, 0.01);  // under 1 % of peak compute
  for (int64_t b : {2, 4, 8, 16, 32}) {
    const PhaseCost p = AnalyzePhase(llama, Decode(b, 16), h100);
    EXPECT_NEAR(p.intensity / one.intensity, static_cast<double>(b), 0.05 * b) << "batch " << b;
  }
  // Prefill reuses every weight for every prompt token: compute-bound.
  const PhaseCost prefill = AnalyzePhase(llama, Prefill(512), h100);
  EXPECT_TRUE(prefill.compute_bound);
  EXPECT_GT(prefill.intensity, h100.RidgePoint());
}

TEST(CostModel, PredictedTimeIsTheRooflineBound) {
  const HardwareProfile& h100 = FindHardware("h100");
  const PhaseCost p = AnalyzePhase(Preset("llama-2-7b"), Decode(1, 1024), h100);
  for (const OpCost& op : p.ops)
    EXPECT_DOUBLE_EQ(op.time_s, std::max(op.flops / h100.peak_flops, op.bytes / h100.bandwidth_bytes_per_s));
  EXPECT_GE(p.time_s, p.roofline_time_s);
  EXPECT_DOUBLE_EQ(p.roofline_time_s, std::max(p.flops / h100.peak_flops, p.bytes / h100.bandwidth_bytes_per_s));
  // Memory-bound decode: 13.5 GB of weights and ~0.5 GiB of KV at 3.35 TB/s ≈ 4.1 ms.
  EXPECT_NEAR(p.time_s * 1e3, 4.1, 0.1);
}

TEST(CostModel, BatchSweepFindsTheRidgeCrossing) {
  const HardwareProfile& h100 = FindHardware("h100");
  const ModelShape llama = Preset("llama-2-7b");
  // Without activation traffic the weight products do B FLOPs per weight
  // byte (2 FLOPs per 2-byte weight per sequence); each sequence also writes
  // its new K and V (2 × 32 layers × 4096 × 2 B) and its FP32 logits
  // (32000 × 4 B). Crossing: B × F / (W + B × e) >= ridge.
  BatchSweep sweep = SweepDecodeBatch(llama, 16, h100, {2, 0}, 1024);
  const PhaseCost one_seq = AnalyzePhase(llama, Decode(1, 16), h100, {2, 0});
  const double w = one_seq.weight_bytes, f = one_seq.flops - one_seq.ops[1].flops - one_seq.ops[2].flops;
  EXPECT_DOUBLE_EQ(f, w);  // 2 FLOPs per 2-byte weight
  const double e = 2.0 * 32 * 4096 * 2 + 32000 * 4.0;
  const double ridge = h100.RidgePoint();
  ASSERT_TRUE(sweep.matmul_crossing_batch.has_value());
  EXPECT_EQ(*sweep.matmul_crossing_batch, static_cast<int64_t>(std::ceil(ridge * w / (f - ridge * e))));
  EXPECT_EQ(*sweep.matmul_crossing_batch, 300);  // ≈ 295 × 1.014

  // A short context: weights dominate, decode crosses the ridge a little
  // later than B ≈ 295 because activations and KV add bytes per sequence.
  sweep = SweepDecodeBatch(llama, 16, h100, {}, 1024);
  ASSERT_TRUE(sweep.crossing_batch.has_value());
  const int64_t b = *sweep.crossing_batch;
  EXPECT_GT(b, 296);
  EXPECT_LT(b, 1.5 * 296);
  EXPECT_TRUE(AnalyzePhase(llama, Decode(b, 16), h100).compute_bound);
  EXPECT_FALSE(AnalyzePhase(llama, Decode(b - 1, 16), h100).compute_bound);
  ASSERT_TRUE(sweep.matmul_crossing_batch.has_value());
  EXPECT_GT(*sweep.matmul_crossing_batch, 296);
  EXPECT_LE(*sweep.matmul_crossing_batch, b);
  EXPECT_EQ(sweep.points.size(), 11u);  // 1, 2, 4, ..., 1024
  for (size_t i = 1; i < sweep.points.size(); ++i) EXPECT_GT(sweep.points[i].intensity, sweep.points[i - 1].intensity);

  // At 1024 tokens of MHA cache each sequence brings ~0.5 GiB: intensity
  // saturates near 25 FLOP/byte and decode never reaches the ridge, though
  // the weight matrix products alone do.
  sweep = SweepDecodeBatch(llama, 1024, h100, {}, 1024);
  EXPECT_FALSE(sweep.crossing_batch.has_value());
  EXPECT_NEAR(sweep.intensity_limit, 25.4, 0.5);
  EXPECT_LT(sweep.points.back().intensity, sweep.intensity_limit);
  ASSERT_TRUE(sweep.matmul_crossing_batch.has_value());
  EXPECT_LT(*sweep.matmul_crossing_batch, 1.5 * 296);
}

TEST(CostModel, WeightOnlyQuantizationCutsDecodeBytes) {
  const HardwareProfile& h100 = FindHardware("h100");
  const ModelShape llama = Preset("llama-2-7b");
  const auto rows = CompareWeightTypes(llama, {GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_0}, Decode(1, 16),
                                       Prefill(512), [&](GgmlType) { return h100; });
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_DOUBLE_EQ(rows[1].weight_bytes / rows[0].weight_bytes, (34.0 / 32) / 2);
  EXPECT_DOUBLE_EQ(rows[2].weight_bytes / rows[0].weight_bytes, (18.0 / 32) / 2);
  // Decode is memory-bound, so its time falls almost in proportion...
  EXPECT_NEAR(rows[1].decode_speedup, 2 / (34.0 / 32), 0.05);
  EXPECT_NEAR(rows[2].decode_speedup, 2 / (18.0 / 32), 0.15);
  // ...while compute-bound prefill barely moves.
  EXPECT_NEAR(rows[2].prefill_speedup, 1.0, 0.05);
  EXPECT_EQ(rows[0].decode_speedup, 1.0);
}

TEST(CostModel, RejectsBadWorkloads) {
  const HardwareProfile& h100 = FindHardware("h100");
  const ModelShape s = Preset("tinyllama-1.1b");
  EXPECT_THROW(AnalyzePhase(s, Decode(0, 16), h100), Error);
  EXPECT_THROW(AnalyzePhase(s, Decode(1, 0), h100), Error);
  EXPECT_THROW(AnalyzePhase(s, Prefill(0), h100), Error);
  EXPECT_THROW(AnalyzePhase(s, Prefill(int64_t{1} << 40), h100), Error);
  EXPECT_THROW(AnalyzePhase(s, Decode(1, 16), HardwareProfile{"x", "x", 0, 1, 0, "", 0, ""}), Error);
  EXPECT_THROW(SweepDecodeBatch(s, 16, h100, {}, 0), Error);
}

}  // namespace
}  // namespace ridge
