// MatMul micro-benchmarks on the tinyllama-1.1b FFN shape (2048 × 5632).
//
//   read:    the same 256 MiB stack the decode runs use, read one matrix-sized
//            chunk per call by the pool's threads (the probe's read kernel):
//            the bandwidth roof for these buffers (4 KiB pages, like a mapped
//            GGUF file);
//   decode:  one token against a stack of matrices larger than the caches
//            (256 MiB, each call on the next matrix): GB/s of weights, and
//            the median ratio to a read of the same bytes right after each
//            call (paired_read%);
//   decode from cache: one token against 64 rows of the matrix (at most
//            1.4 MiB, in L2/L3; file layout, or _repacked into weight
//            panels) on ONE thread, repeated: the rate one core's arithmetic
//            allows when memory is not the limit. Decode on n cores cannot
//            beat n × this, whatever the memory delivers;
//   peak:    the probe's compute loops (FP32 FMA, BF16 dot, int8 dot) on
//            every thread in short bursts;
//   batched: n_tokens (8-64) against repacked weights, from memory (each
//            call on the next matrix of the stack) or from cache (the same
//            one): GFLOP/s and % of the int8 peak;
//   paired with Q4_0: n_tokens (16, 64) against a repacked matrix and a
//            repacked Q4_0 one in cache, calls alternated: the median ratio
//            of the two, robust to the host's drift (compare kernels here);
//   prefill: n_tokens against one matrix: GFLOP/s (2 per weight per token),
//            and % of the peak of the arithmetic the kernel uses (int8 dot
//            for the quantized types, BF16 dot for BF16 on AVX-512, FP32 FMA
//            for the rest).
// Each reports the mean and the best call: this machine is shared, and the
// best call is the one least disturbed by others (compare best with best).
// Threads: $RIDGE_BENCH_THREADS (default 2); target: $RIDGE_ISA; weights in
// huge pages: $RIDGE_BENCH_HUGEPAGES=1. The host probe (ridge roofline
// --probe's code: 1 GiB, huge pages) runs at start-up. See README.md.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <sys/mman.h>

#include "ridge/base/cpu_features.h"
#include "ridge/base/thread_pool.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/kernels/ops.h"
#include "ridge/metrics/stats.h"
#include "ridge/roofline/probe.h"
#include "ridge/roofline/probe_kernels.h"

namespace ridge::kernels {
namespace {

constexpr int64_t kRows = 2048;
constexpr int64_t kCols = 5632;
// A 2048-wide model's LM head: 8 K-quant super-blocks a row (Llama 3.2 1B's tied Q6_K head is 128256 × 2048).
constexpr int64_t kHeadCols = 2048;
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

// Best read bandwidth of BM_ReadBandwidth, for the decode runs' ratio, and
// best peaks of BM_Peak (index: 0 FP32 FMA, 1 BF16 dot, 2 int8 dot), for prefill.
double g_best_read_bytes_per_s = 0;
double g_best_peak[3] = {0, 0, 0};

probe::IsaKernels ProbeKernels() { return probe::KernelsFor(ActiveIsa()); }

// [n_rows, n_cols] of type, seeded.
std::vector<uint8_t> RandomMatrix(GgmlType type, int64_t n_rows = kRows, int64_t n_cols = kCols) {
  const int64_t row_bytes = RowBytes(type, n_cols);
  std::vector<uint8_t> bytes(static_cast<size_t>(row_bytes * n_rows));
  std::mt19937 rng(42);
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> row(static_cast<size_t>(n_cols));
  for (int64_t r = 0; r < n_rows; ++r) {
    for (auto& v : row) v = normal(rng);
    QuantizeRow(type, row.data(), bytes.data() + r * row_bytes, n_cols);
  }
  return bytes;
}

// The matrix ([n_rows, n_cols] of type) repeated to fill >= 256 MiB, so every
// call reads from memory.
// Backed by 4 KiB pages like a mapped GGUF file, or by transparent huge pages
// with RIDGE_BENCH_HUGEPAGES=1 (fewer TLB misses: in this VM a plain read
// goes from ~42 to ~60 GB/s).
struct Stack {
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> storage;
  uint8_t* bytes = nullptr;
  int64_t n_rows = 0, n_cols = 0, matrix_bytes = 0, n_copies = 0;
  explicit Stack(GgmlType type, int64_t rows = kRows, int64_t cols = kCols) : n_rows(rows), n_cols(cols) {
    const std::vector<uint8_t> one = RandomMatrix(type, n_rows, n_cols);
    matrix_bytes = static_cast<int64_t>(one.size());
    n_copies = (kStackBytes + matrix_bytes - 1) / matrix_bytes;
    constexpr size_t kHuge = size_t{2} << 20;
    const size_t n_bytes = (static_cast<size_t>(matrix_bytes * n_copies) + kHuge - 1) / kHuge * kHuge;
    storage.reset(static_cast<uint8_t*>(std::aligned_alloc(kHuge, n_bytes)));
    bytes = storage.get();
    const char* huge = std::getenv("RIDGE_BENCH_HUGEPAGES");
    madvise(bytes, n_bytes, huge && std::atoi(huge) ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    for (int64_t c = 0; c < n_copies; ++c) std::memcpy(bytes + c * matrix_bytes, one.data(), one.size());
  }
};

struct CallTimer {
  double best_s = 1e30;
  std::chrono::steady_clock::time_point start;
  void Start() { start = std::chrono::steady_clock::now(); }
  void Stop() {
    best_s = std::min(best_s, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
};

void Label(benchmark::State& state) {
  state.SetLabel(std::string(IsaName(ActiveIsa())) + " threads=" + std::to_string(Pool().n_threads()));
}

void BM_ReadBandwidth(benchmark::State& state) {
  Probe();
  const probe::IsaKernels kernels = ProbeKernels();
  const Stack stack(GgmlType::kQ4_0);
  const int64_t n_tasks = 8 * Pool().n_threads();
  const int64_t task_bytes = stack.matrix_bytes / n_tasks / 64 * 64;
  std::vector<uint64_t> sums(static_cast<size_t>(n_tasks));
  CallTimer timer;
  int64_t i = 0;
  for (auto _ : state) {
    const uint8_t* m = stack.bytes + (i++ % stack.n_copies) * stack.matrix_bytes;
    timer.Start();
    Pool().ParallelFor(n_tasks, [&](int64_t t, int) {
      sums[static_cast<size_t>(t)] += kernels.read_sum(m + t * task_bytes, static_cast<size_t>(task_bytes));
    });
    timer.Stop();
  }
  benchmark::DoNotOptimize(sums.data());
  const double bytes = static_cast<double>(task_bytes * n_tasks);
  g_best_read_bytes_per_s = std::max(g_best_read_bytes_per_s, bytes / timer.best_s);
  state.counters["GB/s"] = benchmark::Counter(bytes * static_cast<double>(state.iterations()) / 1e9,
                                              benchmark::Counter::kIsRate);
  state.counters["best_GB/s"] = bytes / timer.best_s / 1e9;
  state.counters["probe_GB/s"] = Probe().read_bytes_per_s / 1e9;
  Label(state);
}

// Seconds a read of the matrix of the stack half a stack away from matrix m
// takes (the probe's read kernel on the pool's threads, the same pages),
// scaled to the whole matrix: the other half of a paired ratio.
double PairedReadSeconds(const Stack& stack, int64_t m) {
  static const probe::IsaKernels kernels = ProbeKernels();
  const int64_t n_tasks = 8 * Pool().n_threads();
  const int64_t task_bytes = stack.matrix_bytes / n_tasks / 64 * 64;
  std::vector<uint64_t> sums(static_cast<size_t>(n_tasks));
  const uint8_t* other = stack.bytes + ((m + stack.n_copies / 2) % stack.n_copies) * stack.matrix_bytes;
  const auto start = std::chrono::steady_clock::now();
  Pool().ParallelFor(n_tasks, [&](int64_t t, int) {
    sums[static_cast<size_t>(t)] += kernels.read_sum(other + t * task_bytes, static_cast<size_t>(task_bytes));
  });
  const double read_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  benchmark::DoNotOptimize(sums.data());
  return read_s * static_cast<double>(stack.matrix_bytes) / static_cast<double>(task_bytes * n_tasks);
}

struct PairedCalls {
  double best_s;              // the fastest call
  double median_paired_read;  // median over calls of (read time / call time)
};

// MatMul of n_tokens (x: [n_tokens, stack.n_cols]) against the stack's
// matrices in turn (`panels`: repacked at load), each call followed by a paired read.
PairedCalls TimePairedCalls(benchmark::State& state, const Stack& stack, GgmlType type, bool panels,
                            const std::vector<float>& x, int64_t n_tokens) {
  std::vector<float> y(static_cast<size_t>(stack.n_rows * n_tokens));
  std::vector<double> ratios;
  CallTimer timer;
  int64_t i = 0;
  for (auto _ : state) {
    const int64_t m = i++ % stack.n_copies;
    WeightMatrix w{type, stack.bytes + m * stack.matrix_bytes, stack.n_rows, stack.n_cols,
                   RowBytes(type, stack.n_cols)};
    w.panels = panels;
    timer.Start();
    MatMul(w, x.data(), n_tokens, y.data(), Pool());
    const auto kernel_end = std::chrono::steady_clock::now();
    timer.Stop();
    benchmark::DoNotOptimize(y.data());
    state.PauseTiming();
    const double kernel_s = std::chrono::duration<double>(kernel_end - timer.start).count();
    ratios.push_back(PairedReadSeconds(stack, m) / kernel_s);
    state.ResumeTiming();
  }
  return {timer.best_s, Describe(ratios).p50};
}

// Each decode call is followed by a read of another matrix of the stack
// (same bytes, same pages, the probe's read kernel on the same threads): the
// median of the per-pair ratios is robust to the bandwidth this shared host
// gives us drifting from second to second.
void BM_Decode(benchmark::State& state, GgmlType type) {
  const Stack stack(type);
  const std::vector<float> x(kCols, 0.5f);
  const PairedCalls calls = TimePairedCalls(state, stack, type, false, x, 1);
  const double bytes = static_cast<double>(stack.matrix_bytes);
  state.counters["GB/s"] = benchmark::Counter(bytes * static_cast<double>(state.iterations()) / 1e9,
                                              benchmark::Counter::kIsRate);
  state.counters["best_GB/s"] = bytes / calls.best_s / 1e9;
  state.counters["paired_read%"] = calls.median_paired_read * 100;
  if (g_best_read_bytes_per_s > 0) state.counters["best/read%"] = bytes / calls.best_s / g_best_read_bytes_per_s * 100;
  state.counters["best/probe%"] = bytes / calls.best_s / Probe().read_bytes_per_s * 100;
  Label(state);
}

// n_tokens (1-9: decode, a verifying pass of speculation, a small expert
// group) against the same kind of stack as BM_Decode, in the file's layout
// or repacked at load (weight panels: the active ISA's panel kernel), with the
// paired read after each call: how close a few tokens come to one weight read.
// Repacks w (its writable bytes) in place into weight panels; false (and the
// benchmark marked skipped) where the active ISA has none for the type.
bool RepackOrSkip(benchmark::State& state, WeightMatrix& w, uint8_t* bytes) {
  if (!CanRepack(w)) {
    state.SkipWithError("no weight panels for this type on this target");
    return false;
  }
  RepackInPlace(w, bytes);
  return true;
}

// Every matrix of the stack, as RepackOrSkip.
bool RepackStack(benchmark::State& state, GgmlType type, Stack& stack) {
  for (int64_t c = 0; c < stack.n_copies; ++c) {
    uint8_t* bytes = stack.bytes + c * stack.matrix_bytes;
    WeightMatrix w{type, bytes, stack.n_rows, stack.n_cols, RowBytes(type, stack.n_cols)};
    if (!RepackOrSkip(state, w, bytes)) return false;
  }
  return true;
}

// [n_tokens, n_cols] activations, uniform in [-1, 1), seeded.
std::vector<float> RandomActivations(int64_t n_tokens, int64_t n_cols = kCols) {
  std::vector<float> x(static_cast<size_t>(n_cols * n_tokens));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (auto& v : x) v = uniform(rng);
  return x;
}

// n_cols: kCols (tinyllama's FFN), or kHeadCols over as many bytes.
void BM_FewTokens(benchmark::State& state, GgmlType type, bool repacked, int64_t n_cols) {
  const int64_t n_tokens = state.range(0);
  Stack stack(type, kRows * kCols / n_cols, n_cols);
  if (repacked && !RepackStack(state, type, stack)) return;
  const std::vector<float> x = RandomActivations(n_tokens, n_cols);
  const PairedCalls calls = TimePairedCalls(state, stack, type, repacked, x, n_tokens);
  state.counters["best_GB/s"] = static_cast<double>(stack.matrix_bytes) / calls.best_s / 1e9;
  state.counters["paired_read%"] = calls.median_paired_read * 100;
  Label(state);
}

// Arg: the matrix's columns (kCols or kHeadCols).
void BM_DecodeFromCache(benchmark::State& state, GgmlType type, bool repacked) {
  constexpr int64_t kCachedRows = 64;
  const int64_t n_cols = state.range(0);
  std::vector<uint8_t> matrix = RandomMatrix(type, kCachedRows, n_cols);
  WeightMatrix w{type, matrix.data(), kCachedRows, n_cols, RowBytes(type, n_cols)};
  if (repacked && !RepackOrSkip(state, w, matrix.data())) return;
  const std::vector<float> x = RandomActivations(1, n_cols);
  std::vector<float> y(kCachedRows);
  ThreadPool one_core(1);
  for (auto _ : state) {
    MatMul(w, x.data(), 1, y.data(), one_core);
    benchmark::DoNotOptimize(y.data());
  }
  state.counters["GB/s"] = benchmark::Counter(
      static_cast<double>(kCachedRows * w.row_bytes) * static_cast<double>(state.iterations()) / 1e9,
      benchmark::Counter::kIsRate);
  state.SetLabel(std::string(IsaName(ActiveIsa())) + " one thread");
}

// The probe's compute loops in ~2 ms bursts on every thread; best burst.
void BM_Peak(benchmark::State& state) {
  const int which = static_cast<int>(state.range(0));
  const probe::IsaKernels kernels = ProbeKernels();
  const probe::ComputeKernel& k = which == 0 ? kernels.fp32_fma : which == 1 ? kernels.bf16_dot : kernels.int8_dot;
  if (k.run == nullptr) {
    state.SkipWithError("no such arithmetic on this target");
    return;
  }
  const int64_t n_tasks = Pool().n_threads();
  constexpr int64_t kIterations = 1 << 16;
  double sink = 0;
  CallTimer timer;
  for (auto _ : state) {
    timer.Start();
    Pool().ParallelFor(n_tasks, [&](int64_t, int) { benchmark::DoNotOptimize(sink += k.run(kIterations, 1.0f)); });
    timer.Stop();
  }
  const double ops = static_cast<double>(n_tasks * kIterations) * k.ops_per_iteration;
  g_best_peak[which] = std::max(g_best_peak[which], ops / timer.best_s);
  state.counters["best_GOP/s"] = ops / timer.best_s / 1e9;
  state.SetLabel(std::string(k.name) + " threads=" + std::to_string(Pool().n_threads()));
}

// The arithmetic each type's prefill kernel runs on this target: int8 dots
// for the quantized types (vpdpbusd, or vpmaddubsw + vpmaddwd on AVX2), BF16
// dots for BF16 on AVX-512, FP32 FMA otherwise.
int PeakIndexFor(GgmlType type) {
  if (TraitsOf(type).block_elems > 1) return 2;
  return type == GgmlType::kBF16 && ActiveIsa() >= Isa::kAvx512 ? 1 : 0;
}

double PeakFor(GgmlType type) {
  const ProbeResult& p = Probe();
  const int i = PeakIndexFor(type);
  if (g_best_peak[i] > 0) return g_best_peak[i];
  return i == 2 ? p.int8_ops_per_s : i == 1 ? p.bf16_flops_per_s : p.fp32_flops_per_s;
}

// MatMul of n_tokens (x: [n_tokens, kCols]) against matrix_at(i) on call i;
// returns the best call's seconds.
template <typename MatrixAt>
double BestCallSeconds(benchmark::State& state, MatrixAt matrix_at, const std::vector<float>& x, int64_t n_tokens) {
  std::vector<float> y(static_cast<size_t>(kRows * n_tokens));
  CallTimer timer;
  int64_t i = 0;
  for (auto _ : state) {
    const WeightMatrix w = matrix_at(i++);
    timer.Start();
    MatMul(w, x.data(), n_tokens, y.data(), Pool());
    timer.Stop();
    benchmark::DoNotOptimize(y.data());
  }
  return timer.best_s;
}

// GFLOP/s (mean and best call) of n_tokens against one kRows × kCols matrix, and the best against `peak`.
void SetFlopCounters(benchmark::State& state, int64_t n_tokens, double best_s, double peak) {
  const double flops = 2.0 * kRows * kCols * static_cast<double>(n_tokens);
  state.counters["GFLOP/s"] = benchmark::Counter(flops * static_cast<double>(state.iterations()) / 1e9,
                                                 benchmark::Counter::kIsRate);
  state.counters["best_GFLOP/s"] = flops / best_s / 1e9;
  state.counters["best/peak%"] = flops / best_s / peak * 100;
  state.counters["peak_GFLOP/s"] = peak / 1e9;
}

// Batched decode: n_tokens (8, 16, 64) against weights repacked at load, each
// call on the next matrix of the stack (from memory, like a model's step) or
// on the same one (in cache): GFLOP/s and % of the int8 peak. The gap
// between the two is what reading the weights from memory costs the tiles.
void BM_Batched(benchmark::State& state, GgmlType type, bool from_memory) {
  const double peak = PeakFor(type);
  const int64_t n_tokens = state.range(0);
  Stack stack(type);
  if (!RepackStack(state, type, stack)) return;
  const double best_s = BestCallSeconds(
      state,
      [&](int64_t i) {
        const int64_t m = from_memory ? i % stack.n_copies : 0;
        WeightMatrix w{type, stack.bytes + m * stack.matrix_bytes, kRows, kCols, RowBytes(type, kCols)};
        w.panels = true;
        return w;
      },
      RandomActivations(n_tokens), n_tokens);
  SetFlopCounters(state, n_tokens, best_s, peak);
  state.counters["best_GB/s"] = static_cast<double>(stack.matrix_bytes) / best_s / 1e9;
  Label(state);
}

// n_tokens against a repacked matrix of `type` and against a repacked Q4_0
// one (both in cache), the two calls back to back in alternating order: the
// median over pairs of (Q4_0's time / type's time) is the type's speed
// relative to Q4_0 in the same seconds. Each pair sees the same host, so
// the ratio does not follow the host's speed as separate runs' GFLOP/s do
// (10-20 % apart within minutes); it still moves ~10 % between runs, with
// what else shares the cores. To compare two versions of one kernel, build
// both into one binary behind a switch and alternate them the same way
// (docs/benchmarks.md, "Issue 15 on a Zen 5: calls alternated in one process").
void BM_PairedWithQ4_0(benchmark::State& state, GgmlType type) {
  const int64_t n_tokens = state.range(0);
  std::vector<uint8_t> bytes = RandomMatrix(type), q4_0_bytes = RandomMatrix(GgmlType::kQ4_0);
  WeightMatrix w{type, bytes.data(), kRows, kCols, RowBytes(type, kCols)};
  WeightMatrix q4_0{GgmlType::kQ4_0, q4_0_bytes.data(), kRows, kCols, RowBytes(GgmlType::kQ4_0, kCols)};
  if (!RepackOrSkip(state, w, bytes.data()) || !RepackOrSkip(state, q4_0, q4_0_bytes.data())) return;
  const std::vector<float> x = RandomActivations(n_tokens);
  std::vector<float> y(static_cast<size_t>(kRows * n_tokens));
  const auto call_s = [&](const WeightMatrix& m) {
    const auto start = std::chrono::steady_clock::now();
    MatMul(m, x.data(), n_tokens, y.data(), Pool());
    benchmark::DoNotOptimize(y.data());
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<double> ratios;
  double best_s = 1e30;
  for (auto _ : state) {
    const bool q4_0_first = ratios.size() % 2 == 1;
    const double q4_0_before = q4_0_first ? call_s(q4_0) : 0;
    const double type_s = call_s(w);
    const double q4_0_s = q4_0_first ? q4_0_before : call_s(q4_0);
    ratios.push_back(q4_0_s / type_s);
    best_s = std::min(best_s, type_s);
  }
  state.counters["best_GFLOP/s"] = 2.0 * kRows * kCols * static_cast<double>(n_tokens) / best_s / 1e9;
  state.counters["vs_Q4_0%"] = Describe(ratios).p50 * 100;
  Label(state);
}

void BM_Prefill(benchmark::State& state, GgmlType type) {
  const double peak = PeakFor(type);
  const int64_t n_tokens = state.range(0);
  const std::vector<uint8_t> matrix = RandomMatrix(type);
  const WeightMatrix w{type, matrix.data(), kRows, kCols, RowBytes(type, kCols)};
  const double best_s = BestCallSeconds(state, [&](int64_t) { return w; }, RandomActivations(n_tokens), n_tokens);
  SetFlopCounters(state, n_tokens, best_s, peak);
  Label(state);
}

BENCHMARK(BM_ReadBandwidth)->UseRealTime()->MinTime(2.0);
BENCHMARK(BM_Peak)->Arg(0)->Arg(1)->Arg(2)->UseRealTime()->MinTime(1.0);

#define RIDGE_DECODE(T) BENCHMARK_CAPTURE(BM_Decode, T, GgmlType::k##T)->UseRealTime()->MinTime(2.0)
#define RIDGE_DECODE_FROM_CACHE(T)                                    \
  BENCHMARK_CAPTURE(BM_DecodeFromCache, T, GgmlType::k##T, false) \
      ->Arg(kCols)                                                \
      ->Arg(kHeadCols)                                            \
      ->UseRealTime()                                             \
      ->MinTime(1.0)
#define RIDGE_DECODE_FROM_CACHE_REPACKED(T) \
  BENCHMARK_CAPTURE(BM_DecodeFromCache, T##_repacked, GgmlType::k##T, true) \
      ->Arg(kCols)                                                         \
      ->Arg(kHeadCols)                                                     \
      ->UseRealTime()                                                      \
      ->MinTime(1.0)
#define RIDGE_PREFILL(T) \
  BENCHMARK_CAPTURE(BM_Prefill, T, GgmlType::k##T)->Arg(8)->Arg(16)->Arg(64)->Arg(512)->UseRealTime()->MinTime(2.0)

#define RIDGE_FEW_TOKENS(T)                                                                                     \
  BENCHMARK_CAPTURE(BM_FewTokens, T##_file, GgmlType::k##T, false, kCols)->DenseRange(1, 9)->UseRealTime()->MinTime(0.5); \
  BENCHMARK_CAPTURE(BM_FewTokens, T##_repacked, GgmlType::k##T, true, kCols)->DenseRange(1, 9)->UseRealTime()->MinTime(0.5)
// One token against a 2048-wide LM head's shape.
#define RIDGE_HEAD(T)                                                                         \
  BENCHMARK_CAPTURE(BM_FewTokens, T##_head_file, GgmlType::k##T, false, kHeadCols)->Arg(1)    \
      ->UseRealTime()                                                                         \
      ->MinTime(0.5);                                                                         \
  BENCHMARK_CAPTURE(BM_FewTokens, T##_head_repacked, GgmlType::k##T, true, kHeadCols)->Arg(1) \
      ->UseRealTime()                                                                         \
      ->MinTime(0.5)

#define RIDGE_BATCHED(T)                                                                                 \
  BENCHMARK_CAPTURE(BM_Batched, T##_memory, GgmlType::k##T, true)->Arg(8)->Arg(16)->Arg(64)->UseRealTime()->MinTime(1.0); \
  BENCHMARK_CAPTURE(BM_Batched, T##_cache, GgmlType::k##T, false)->Arg(8)->Arg(16)->Arg(64)->UseRealTime()->MinTime(1.0)

#define RIDGE_PAIRED_WITH_Q4_0(T) \
  BENCHMARK_CAPTURE(BM_PairedWithQ4_0, T, GgmlType::k##T)->Arg(16)->Arg(64)->UseRealTime()->MinTime(1.0)

RIDGE_PAIRED_WITH_Q4_0(Q8_0);
RIDGE_PAIRED_WITH_Q4_0(Q4_K);
RIDGE_PAIRED_WITH_Q4_0(Q5_K);
RIDGE_PAIRED_WITH_Q4_0(Q6_K);
RIDGE_PAIRED_WITH_Q4_0(IQ4_NL);
RIDGE_BATCHED(Q8_0);
RIDGE_BATCHED(Q4_0);
RIDGE_BATCHED(Q4_K);
RIDGE_BATCHED(Q6_K);
RIDGE_FEW_TOKENS(Q8_0);
RIDGE_FEW_TOKENS(Q4_0);
RIDGE_FEW_TOKENS(Q4_K);
RIDGE_FEW_TOKENS(Q5_K);
RIDGE_FEW_TOKENS(Q6_K);
RIDGE_HEAD(Q8_0);
RIDGE_HEAD(Q6_K);
RIDGE_DECODE(Q4_0);
RIDGE_DECODE(Q8_0);
RIDGE_DECODE(Q4_1);
RIDGE_DECODE(Q5_0);
RIDGE_DECODE(Q5_1);
RIDGE_DECODE(IQ4_NL);
RIDGE_DECODE(F16);
RIDGE_DECODE(BF16);
RIDGE_DECODE(F32);
RIDGE_DECODE(Q4_K);
RIDGE_DECODE(Q6_K);
RIDGE_DECODE(Q2_K);
RIDGE_DECODE(Q3_K);
RIDGE_DECODE(Q5_K);
RIDGE_DECODE(IQ4_XS);
RIDGE_DECODE_FROM_CACHE(Q4_0);
RIDGE_DECODE_FROM_CACHE(Q8_0);
RIDGE_DECODE_FROM_CACHE(Q4_1);
RIDGE_DECODE_FROM_CACHE(Q5_0);
RIDGE_DECODE_FROM_CACHE(Q5_1);
RIDGE_DECODE_FROM_CACHE(IQ4_NL);
RIDGE_DECODE_FROM_CACHE(F16);
RIDGE_DECODE_FROM_CACHE(BF16);
RIDGE_DECODE_FROM_CACHE(Q4_K);
RIDGE_DECODE_FROM_CACHE(Q6_K);
RIDGE_DECODE_FROM_CACHE(Q2_K);
RIDGE_DECODE_FROM_CACHE(Q3_K);
RIDGE_DECODE_FROM_CACHE(Q5_K);
RIDGE_DECODE_FROM_CACHE(IQ4_XS);
RIDGE_DECODE_FROM_CACHE_REPACKED(Q8_0);
RIDGE_DECODE_FROM_CACHE_REPACKED(Q4_0);
RIDGE_DECODE_FROM_CACHE_REPACKED(Q4_K);
RIDGE_DECODE_FROM_CACHE_REPACKED(Q5_K);
RIDGE_DECODE_FROM_CACHE_REPACKED(Q6_K);
RIDGE_PREFILL(Q4_0);
RIDGE_PREFILL(Q8_0);
RIDGE_PREFILL(Q4_1);
RIDGE_PREFILL(Q5_0);
RIDGE_PREFILL(Q5_1);
RIDGE_PREFILL(IQ4_NL);
RIDGE_PREFILL(F16);
RIDGE_PREFILL(BF16);
RIDGE_PREFILL(F32);
RIDGE_PREFILL(Q4_K);
RIDGE_PREFILL(Q6_K);
RIDGE_PREFILL(Q2_K);
RIDGE_PREFILL(Q3_K);
RIDGE_PREFILL(Q5_K);
RIDGE_PREFILL(IQ4_XS);

}  // namespace
}  // namespace ridge::kernels

BENCHMARK_MAIN();
