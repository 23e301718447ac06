// MatMul micro-benchmarks on the tinyllama-1.1b FFN shape (2048 × 5632).
//
//   decode:  one token against a stack of matrices larger than the caches
//            (> 256 MB, each call on the next matrix), as GB/s of weights
//            streamed and as % of the probed read bandwidth;
//   prefill: n_tokens against one matrix, as GFLOP/s (2 per weight per
//            token) and as % of the probed peak of the arithmetic the
//            kernel uses (int8 dot for Q8_0/Q4_0, BF16 dot for BF16, FP32
//            FMA for F32/F16).
// Threads: $RIDGE_BENCH_THREADS (default 2); target: $RIDGE_ISA.
// The probe (ridge roofline --probe's code) runs once at start-up.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "ridge/base/cpu_features.h"
#include "ridge/base/thread_pool.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/kernels/ops.h"
#include "ridge/roofline/probe.h"

namespace ridge::kernels {
namespace {

constexpr int64_t kRows = 2048;
constexpr int64_t kCols = 5632;
constexpr int64_t kStackBytes = int64_t{256} << 20;

int BenchThreads() {
  const char* env = std::getenv("RIDGE_BENCH_THREADS");
  return env && *env ? std::atoi(env) : 2;
}

ThreadPool& Pool() {
  static ThreadPool pool(BenchThreads());
  return pool;
}

const ProbeResult& Probe() {
  static const ProbeResult probe = [] {
    ProbeOptions options;
    options.n_threads = Pool().n_threads();
    ProbeResult p = RunProbe(options, &Pool());
    std::fprintf(stderr, "%s\n", FormatProbe(p).c_str());
    return p;
  }();
  return probe;
}

// One random matrix of `type`, repeated n_copies times back to back.
std::vector<uint8_t> MakeStack(GgmlType type, int64_t n_copies) {
  const int64_t row_bytes = RowBytes(type, kCols);
  std::vector<uint8_t> bytes(static_cast<size_t>(row_bytes * kRows * n_copies));
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> row(kCols);
  for (int64_t r = 0; r < kRows; ++r) {
    for (auto& v : row) v = normal(rng);
    QuantizeRow(type, row.data(), bytes.data() + r * row_bytes, kCols);
  }
  for (int64_t c = 1; c < n_copies; ++c)
    std::memcpy(bytes.data() + c * row_bytes * kRows, bytes.data(), static_cast<size_t>(row_bytes * kRows));
  return bytes;
}

std::vector<float> RandomActivations(int64_t n) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(n));
  for (auto& v : x) v = uniform(rng);
  return x;
}

void BM_Decode(benchmark::State& state, GgmlType type) {
  const double bandwidth = Probe().read_bytes_per_s;
  const int64_t matrix_bytes = RowBytes(type, kCols) * kRows;
  const int64_t n_copies = (kStackBytes + matrix_bytes - 1) / matrix_bytes;
  const std::vector<uint8_t> stack = MakeStack(type, n_copies);
  const std::vector<float> x = RandomActivations(kCols);
  std::vector<float> y(kRows);
  int64_t i = 0;
  for (auto _ : state) {
    const WeightMatrix w{type, stack.data() + (i++ % n_copies) * matrix_bytes, kRows, kCols, RowBytes(type, kCols)};
    MatMul(w, x.data(), 1, y.data(), Pool());
    benchmark::DoNotOptimize(y.data());
  }
  const double bytes = static_cast<double>(matrix_bytes) * static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["GB/s"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsRate);
  state.counters["bw%"] = benchmark::Counter(bytes / bandwidth * 100.0, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(IsaName(ActiveIsa())) + " threads=" + std::to_string(Pool().n_threads()));
}

double PeakFor(GgmlType type) {
  const ProbeResult& p = Probe();
  switch (type) {
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_0: return p.int8_ops_per_s;
    case GgmlType::kBF16: return p.bf16_flops_per_s > 0 ? p.bf16_flops_per_s : p.fp32_flops_per_s;
    default: return p.fp32_flops_per_s;
  }
}

void BM_Prefill(benchmark::State& state, GgmlType type) {
  const double peak = PeakFor(type);
  const int64_t n_tokens = state.range(0);
  const std::vector<uint8_t> matrix = MakeStack(type, 1);
  const std::vector<float> x = RandomActivations(kCols * n_tokens);
  std::vector<float> y(static_cast<size_t>(kRows * n_tokens));
  const WeightMatrix w{type, matrix.data(), kRows, kCols, RowBytes(type, kCols)};
  for (auto _ : state) {
    MatMul(w, x.data(), n_tokens, y.data(), Pool());
    benchmark::DoNotOptimize(y.data());
  }
  const double flops = 2.0 * kRows * kCols * static_cast<double>(n_tokens) * static_cast<double>(state.iterations());
  state.counters["GFLOP/s"] = benchmark::Counter(flops / 1e9, benchmark::Counter::kIsRate);
  state.counters["peak%"] = benchmark::Counter(flops / peak * 100.0, benchmark::Counter::kIsRate);
  state.SetLabel(std::string(IsaName(ActiveIsa())) + " threads=" + std::to_string(Pool().n_threads()));
}

#define RIDGE_DECODE(T) BENCHMARK_CAPTURE(BM_Decode, T, GgmlType::k##T)->UseRealTime()->MinTime(1.0)
#define RIDGE_PREFILL(T) \
  BENCHMARK_CAPTURE(BM_Prefill, T, GgmlType::k##T)->Arg(8)->Arg(64)->Arg(512)->UseRealTime()->MinTime(1.0)

RIDGE_DECODE(Q4_0);
RIDGE_DECODE(Q8_0);
RIDGE_DECODE(F16);
RIDGE_DECODE(BF16);
RIDGE_DECODE(F32);
RIDGE_PREFILL(Q4_0);
RIDGE_PREFILL(Q8_0);
RIDGE_PREFILL(F16);
RIDGE_PREFILL(BF16);
RIDGE_PREFILL(F32);

}  // namespace
}  // namespace ridge::kernels

BENCHMARK_MAIN();
