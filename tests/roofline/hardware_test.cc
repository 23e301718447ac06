#include "ridge/roofline/hardware.h"

#include <gtest/gtest.h>

#include "ridge/base/error.h"
#include "ridge/roofline/model_presets.h"
#include "ridge/roofline/model_shape.h"
#include "ridge/roofline/probe.h"

namespace ridge {
namespace {

TEST(Hardware, ProfilesAndRidgePoints) {
  EXPECT_NEAR(FindHardware("h100").RidgePoint(), 295.2, 0.1);  // 989 T / 3.35 T
  EXPECT_NEAR(FindHardware("h200").RidgePoint(), 206.0, 0.1);  // 989 T / 4.8 T
  EXPECT_NEAR(FindHardware("a100").RidgePoint(), 153.0, 0.1);  // 312 T / 2.039 T
  EXPECT_NEAR(FindHardware("l4").RidgePoint(), 403.3, 0.1);    // 121 T / 0.3 T
  EXPECT_NEAR(FindHardware("rtx4090").RidgePoint(), 163.9, 0.1);  // 165.2 T / 1.008 T
  for (const HardwareProfile& h : BuiltinHardware()) {
    EXPECT_GT(h.peak_flops, 0) << h.name;
    EXPECT_GT(h.bandwidth_bytes_per_s, 0) << h.name;
    EXPECT_GT(h.memory_bytes, 0) << h.name;
    EXPECT_FALSE(h.peak_note.empty()) << h.name;
  }
  try {
    FindHardware("b200");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("h100"), std::string::npos) << e.what();
  }
}

TEST(Hardware, HostRoofFollowsTheKernelArithmetic) {
  ProbeResult p;
  p.isa = "avx512";
  p.n_threads = 2;
  p.read_bytes_per_s = 20e9;
  p.fp32_flops_per_s = 200e9;
  p.bf16_flops_per_s = 400e9;
  p.int8_ops_per_s = 800e9;
  EXPECT_EQ(HostProfile(p, GgmlType::kF32).peak_flops, 200e9);
  EXPECT_EQ(HostProfile(p, GgmlType::kF16).peak_flops, 200e9);  // widened to f32, FMA
  EXPECT_EQ(HostProfile(p, GgmlType::kBF16).peak_flops, 400e9);  // the BF16 dot (AVX-512)
  EXPECT_EQ(HostProfile(p, GgmlType::kQ8_0).peak_flops, 800e9);
  EXPECT_EQ(HostProfile(p, GgmlType::kQ4_0).peak_flops, 800e9);
  EXPECT_EQ(HostProfile(p, GgmlType::kQ4_0).RidgePoint(), 40.0);
  // Attention: FP32 FMA over an F16 cache, the BF16 dot over a BF16 one.
  EXPECT_EQ(HostProfile(p, GgmlType::kQ4_0).AttentionPeak(), 200e9);
  EXPECT_EQ(HostProfile(p, GgmlType::kQ4_0, GgmlType::kBF16).AttentionPeak(), 400e9);
  EXPECT_EQ(HostProfile(p, GgmlType::kQ4_0, GgmlType::kQ8_0).AttentionPeak(), 200e9);
  // Without int8 dots (AVX2 without VNNI has the maddubs path; scalar has neither).
  p.int8_ops_per_s = 0;
  EXPECT_EQ(HostProfile(p, GgmlType::kQ8_0).peak_flops, 200e9);
  p.bf16_flops_per_s = 0;  // AVX2: a BF16 cache and BF16 weights are widened to f32 too
  EXPECT_EQ(HostProfile(p, GgmlType::kBF16).peak_flops, 200e9);
  EXPECT_EQ(HostProfile(p, GgmlType::kQ4_0, GgmlType::kBF16).AttentionPeak(), 200e9);
  p.read_bytes_per_s = 0;
  EXPECT_THROW(HostProfile(p, GgmlType::kF16), Error);
}

TEST(ModelPresets, ShapesAndParameterCounts) {
  const ModelPreset& tiny = FindModelPreset("tinyllama-1.1b");
  EXPECT_EQ(tiny.config.n_embd, 2048);
  EXPECT_EQ(tiny.config.n_ff, 5632);
  EXPECT_EQ(tiny.config.n_layers, 22);
  EXPECT_EQ(tiny.config.n_heads, 32);
  EXPECT_EQ(tiny.config.n_kv_heads, 4);
  EXPECT_EQ(tiny.config.n_vocab, 32000);
  EXPECT_EQ(tiny.config.head_dim, 64);
  EXPECT_FALSE(tiny.tied_embeddings);
  const ModelPreset& l32 = FindModelPreset("llama-3.2-1b");
  EXPECT_EQ(l32.config.n_ff, 8192);
  EXPECT_EQ(l32.config.n_kv_heads, 8);
  EXPECT_EQ(l32.config.n_vocab, 128256);
  EXPECT_TRUE(l32.tied_embeddings);
  EXPECT_EQ(FindModelPreset("llama-2-70b").config.head_dim, 128);
  // Published parameter counts (F16: 2 bytes per weight; norms are F32 and tiny).
  const struct { const char* name; double params; } published[] = {
      {"tinyllama-1.1b", 1.100e9}, {"llama-3.2-1b", 1.236e9}, {"llama-2-7b", 6.738e9},
      {"llama-3-8b", 8.030e9},     {"llama-2-70b", 68.98e9},
  };
  for (const auto& p : published) {
    const ModelShape s = ShapeFromPreset(FindModelPreset(p.name), GgmlType::kF16);
    EXPECT_NEAR(s.total_weight_bytes / 2 / p.params, 1.0, 0.005) << p.name;
  }
  for (const ModelPreset& p : ModelPresets()) {
    EXPECT_EQ(p.config.n_embd % p.config.n_heads, 0) << p.name;
    EXPECT_EQ(p.config.n_heads % p.config.n_kv_heads, 0) << p.name;
    EXPECT_EQ(&FindModelPreset(p.name), &p);
  }
  EXPECT_THROW(FindModelPreset("gpt-2"), Error);
  EXPECT_NE(ModelPresetNames().find("llama-3-8b"), std::string::npos);
}

}  // namespace
}  // namespace ridge
