#include "ridge/roofline/probe.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <vector>

#include "ridge/base/cpu_features.h"
#include "ridge/base/error.h"
#include "ridge/base/thread_pool.h"
#include "ridge/roofline/probe_kernels.h"
#include "test_paths.h"

namespace ridge {
namespace {

// Every chain of every kernel ran every iteration: the returned sums are exact.
TEST(ProbeKernels, ComputeExactlyWhatTheyClaimOnEverySupportedIsa) {
  for (Isa isa : SupportedIsas()) {
    SCOPED_TRACE(IsaName(isa));
    const probe::IsaKernels k = probe::KernelsFor(isa);
    for (int64_t n : {1, 7, 1000}) {
      ASSERT_NE(k.fp32_fma.run, nullptr);
      EXPECT_EQ(k.fp32_fma.run(n, 1.0f), 12.0 * n);
      if (k.bf16_dot.run) {
        EXPECT_EQ(k.bf16_dot.run(n, 1.0f), 2 * 12.0 * n);
      }
      if (k.int8_dot.run) {
        EXPECT_EQ(k.int8_dot.run(n, 1.0f), 4 * 12.0 * n);
      }
    }
    EXPECT_EQ(k.bf16_dot.run != nullptr, isa >= Isa::kAvx512);
    EXPECT_EQ(k.int8_dot.run != nullptr, isa != Isa::kScalar);
    EXPECT_GT(k.fp32_fma.ops_per_iteration, 0);
  }
}

TEST(ProbeKernels, ReadSumMatchesAPlainSum) {
  constexpr size_t kBytes = 64 * 1000;
  std::unique_ptr<uint8_t, decltype(&std::free)> buf(static_cast<uint8_t*>(std::aligned_alloc(64, kBytes)), std::free);
  for (size_t i = 0; i < kBytes; ++i) buf.get()[i] = static_cast<uint8_t>(i * 7 + 3);
  uint64_t expected = 0;
  for (size_t i = 0; i < kBytes; i += 8) {
    uint64_t word;
    std::memcpy(&word, buf.get() + i, 8);
    expected += word;
  }
  for (Isa isa : SupportedIsas()) {
    SCOPED_TRACE(IsaName(isa));
    const probe::IsaKernels k = probe::KernelsFor(isa);
    EXPECT_EQ(k.read_sum(buf.get(), kBytes), expected);
    EXPECT_EQ(k.read_sum(buf.get(), 64 * 9), [&] {  // a tail shorter than one unrolled round
      uint64_t s = 0;
      for (size_t i = 0; i < 64 * 9; i += 8) {
        uint64_t word;
        std::memcpy(&word, buf.get() + i, 8);
        s += word;
      }
      return s;
    }());
  }
}

// A short probe (small buffer, short measurements): every figure is positive
// and the optional ones exist exactly when the ISA has them. Not a timing test.
TEST(Probe, ShortRunGivesPlausibleFigures) {
  ThreadPool pool(2);
  ProbeOptions options;
  options.buffer_bytes = 16 << 20;
  options.passes = 2;
  options.compute_seconds = 0.02;
  const ProbeResult r = RunProbe(options, &pool);
  EXPECT_EQ(r.n_threads, 2);
  EXPECT_EQ(r.isa, IsaName(ActiveIsa()));
  EXPECT_GT(r.buffer_bytes, 15 << 20);
  EXPECT_LE(r.buffer_bytes, 16 << 20);
  EXPECT_GT(r.read_bytes_per_s, 1e8);
  EXPECT_GT(r.fp32_flops_per_s, 1e8);
  EXPECT_EQ(r.bf16_flops_per_s > 0, ActiveIsa() >= Isa::kAvx512);
  EXPECT_EQ(r.int8_ops_per_s > 0, ActiveIsa() != Isa::kScalar);
  EXPECT_EQ(r.bf16_kernel == "none", ActiveIsa() < Isa::kAvx512);
  EXPECT_FALSE(r.measured_at.empty());
  EXPECT_DOUBLE_EQ(r.Fp32RidgePoint(), r.fp32_flops_per_s / r.read_bytes_per_s);
  const std::string text = FormatProbe(r);
  EXPECT_NE(text.find("memory read bandwidth"), std::string::npos);
  EXPECT_NE(text.find("ridge point"), std::string::npos);
}

// The peaks alone, as `ridge bench` pairs them with each prefill repetition:
// the arithmetic the full probe measures, no read.
TEST(Probe, ArithmeticAloneGivesThePeaksAndNoRead) {
  ThreadPool pool(2);
  const ProbeResult r = ProbeArithmetic(pool, 0.02);
  EXPECT_EQ(r.n_threads, 2);
  EXPECT_EQ(r.isa, IsaName(ActiveIsa()));
  EXPECT_EQ(r.read_bytes_per_s, 0);
  EXPECT_GT(r.fp32_flops_per_s, 1e8);
  EXPECT_EQ(r.bf16_flops_per_s > 0, ActiveIsa() >= Isa::kAvx512);
  EXPECT_EQ(r.int8_ops_per_s > 0, ActiveIsa() != Isa::kScalar);
  EXPECT_THROW(ProbeArithmetic(pool, 0), Error);
  EXPECT_THROW(ProbeArithmetic(pool, 61), Error);
}

TEST(Probe, RejectsBadOptions) {
  ProbeOptions o;
  o.buffer_bytes = 1000;
  EXPECT_THROW(RunProbe(o), Error);
  o = {};
  o.passes = 0;
  EXPECT_THROW(RunProbe(o), Error);
  o = {};
  o.compute_seconds = 0;
  EXPECT_THROW(RunProbe(o), Error);
  o = {};
  o.n_threads = -1;
  EXPECT_THROW(RunProbe(o), Error);
}

ProbeResult Sample() {
  ProbeResult p;
  p.cpu_name = "Test CPU \"quoted\"";
  p.isa = "avx2";
  p.n_threads = 2;
  p.buffer_bytes = 1 << 30;
  p.passes = 5;
  p.read_bytes_per_s = 21.5e9;
  p.fp32_flops_per_s = 1.9e11;
  p.bf16_flops_per_s = 0;
  p.int8_ops_per_s = 7.25e11;
  p.fp32_kernel = "avx2 vfmadd231ps";
  p.bf16_kernel = "none";
  p.int8_kernel = "avx2 vpmaddubsw+vpmaddwd";
  p.measured_at = "2025-01-02T03:04:05Z";
  return p;
}

TEST(Probe, CombiningTakesEachFiguresBestAndItsSpread) {
  ProbeResult a, b;
  a.isa = b.isa = "avx2";
  a.n_threads = b.n_threads = 2;
  a.read_bytes_per_s = 20e9, b.read_bytes_per_s = 10e9;
  a.fp32_flops_per_s = 100e9, b.fp32_flops_per_s = 125e9;
  a.int8_ops_per_s = b.int8_ops_per_s = 400e9;
  const ProbeSeries s = CombineProbes({a, b});
  EXPECT_EQ(s.n_probes, 2);
  EXPECT_EQ(s.best.read_bytes_per_s, 20e9);
  EXPECT_EQ(s.best.fp32_flops_per_s, 125e9);
  EXPECT_EQ(s.best.int8_ops_per_s, 400e9);
  EXPECT_DOUBLE_EQ(s.read_spread, 0.5);
  EXPECT_DOUBLE_EQ(s.fp32_spread, 0.2);
  EXPECT_EQ(s.int8_spread, 0);
  EXPECT_EQ(s.bf16_spread, 0);  // absent in both
  EXPECT_EQ(CombineProbes({a}).read_spread, 0);
  b.isa = "avx512";
  EXPECT_THROW(CombineProbes({a, b}), Error);
  EXPECT_THROW(CombineProbes({}), Error);
}

TEST(Probe, SaveAndLoadRoundTrip) {
  const std::string path = testing::ScratchDir("probe") + "/nested/dir/probe.json";
  SaveProbe(Sample(), path);
  const ProbeResult r = LoadProbe(path);
  const ProbeResult s = Sample();
  EXPECT_EQ(r.cpu_name, s.cpu_name);
  EXPECT_EQ(r.isa, s.isa);
  EXPECT_EQ(r.n_threads, s.n_threads);
  EXPECT_EQ(r.buffer_bytes, s.buffer_bytes);
  EXPECT_EQ(r.passes, s.passes);
  EXPECT_EQ(r.read_bytes_per_s, s.read_bytes_per_s);
  EXPECT_EQ(r.fp32_flops_per_s, s.fp32_flops_per_s);
  EXPECT_EQ(r.bf16_flops_per_s, 0);
  EXPECT_EQ(r.int8_ops_per_s, s.int8_ops_per_s);
  EXPECT_EQ(r.int8_kernel, s.int8_kernel);
  EXPECT_EQ(r.measured_at, s.measured_at);
}

TEST(Probe, DefaultPathHonoursTheEnvironment) {
  setenv("RIDGE_PROBE_FILE", "/tmp/x/probe.json", 1);
  EXPECT_EQ(DefaultProbePath(), "/tmp/x/probe.json");
  unsetenv("RIDGE_PROBE_FILE");
  setenv("XDG_CACHE_HOME", "/tmp/cachehome", 1);
  EXPECT_EQ(DefaultProbePath(), "/tmp/cachehome/ridge/probe.json");
  unsetenv("XDG_CACHE_HOME");
  if (const char* home = std::getenv("HOME")) {
    EXPECT_EQ(DefaultProbePath(), std::string(home) + "/.cache/ridge/probe.json");
  }
}

TEST(Probe, BadFilesAreNamedErrors) {
  EXPECT_THROW(LoadProbe("/nonexistent/probe.json"), Error);
  const std::string good = ProbeToJson(Sample());
  EXPECT_NO_THROW(ProbeFromJson(good));
  auto expect_error = [](const std::string& json, const std::string& needle) {
    try {
      ProbeFromJson(json, "p.json");
      ADD_FAILURE() << "no error for " << json;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("p.json"), std::string::npos) << e.what();
    }
  };
  expect_error("{not json", "not valid JSON");
  expect_error("[1, 2]", "object");
  auto with = [&](const char* key, const std::string& value) {
    std::string j = good;
    const size_t at = j.find(std::string("\"") + key + "\"");
    const size_t colon = j.find(':', at), end = j.find_first_of(",\n", colon + 2);
    return j.replace(colon + 2, end - colon - 2, value);
  };
  auto without = [&](const char* key) {
    std::string j = good;
    const size_t at = j.find(std::string("\"") + key + "\"");
    const size_t line_start = j.rfind('\n', at), line_end = j.find('\n', at);
    return j.erase(line_start, line_end - line_start);
  };
  expect_error(with("ridge_probe_version", "2"), "version");
  expect_error(with("read_bytes_per_s", "0"), "read_bytes_per_s");
  expect_error(with("fp32_flops_per_s", "-5"), "fp32_flops_per_s");
  expect_error(with("int8_ops_per_s", "\"fast\""), "int8_ops_per_s");
  expect_error(with("isa", "\"neon\""), "neon");
  expect_error(with("n_threads", "0"), "n_threads");
  expect_error(without("fp32_kernel"), "fp32_kernel");
}

}  // namespace
}  // namespace ridge
