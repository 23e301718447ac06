#include "ridge/roofline/probe.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ridge/base/clock.h"
#include "ridge/base/cpu_features.h"
#include "ridge/base/error.h"
#include "ridge/base/huge_page_buffer.h"
#include "ridge/base/thread_pool.h"
#include "ridge/roofline/bandwidth_meter.h"
#include "ridge/roofline/probe_kernels.h"
#include "ridge/roofline/units.h"

namespace ridge {
namespace {

constexpr int kProbeVersion = 1;

std::string CpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    size_t start = line.find_first_not_of(" \t", colon + 1);
    return start == std::string::npos ? "" : line.substr(start);
  }
  return "";
}

std::string UtcNow() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Best read bandwidth over `passes` passes of a buffer of its own, in 2 MiB
// pages, first touched by the pool that reads it (pages land near the threads
// that read them).
double MeasureBandwidth(const ProbeOptions& options, ThreadPool& pool, int64_t& buffer_bytes_used) {
  const HugePageBuffer buffer = HugePageBuffer::Allocate(static_cast<size_t>(options.buffer_bytes),
                                                        /*prefault=*/false, "the host probe's bandwidth buffer");
  BandwidthMeter meter(pool, {buffer.data(), buffer.size_bytes()});
  buffer_bytes_used = meter.read_bytes();
  // Word i of the buffer holds i, so the sum of a pass proves every word was
  // read exactly once.
  const int64_t n_words = static_cast<int64_t>(buffer.size_bytes() / 8);
  const int64_t n_tasks = int64_t{pool.n_threads()} * 16;
  auto* words = reinterpret_cast<uint64_t*>(buffer.data());
  pool.ParallelFor(n_tasks, [&](int64_t task, int) {
    for (int64_t i = n_words * task / n_tasks, end = n_words * (task + 1) / n_tasks; i < end; ++i)
      words[i] = static_cast<uint64_t>(i);
  });
  const auto n_read = static_cast<uint64_t>(meter.read_bytes() / 8);
  const uint64_t expected = n_read % 2 == 0 ? (n_read / 2) * (n_read - 1) : n_read * ((n_read - 1) / 2);
  double best = 0;
  for (int pass = 0; pass < options.passes + 1; ++pass) {  // pass 0 warms up (TLB, frequency)
    uint64_t sum = 0;
    const double rate = meter.ReadBytesPerSecond(&sum);
    RIDGE_CHECK(sum == expected);  // every byte was read
    if (pass > 0) best = std::max(best, rate);
  }
  return best;
}

// Best ops/s of `kernel` run on every thread of the pool at once.
double MeasureCompute(const probe::ComputeKernel& kernel, const ProbeOptions& options, ThreadPool& pool) {
  if (!kernel.run) return 0;
  const float one = 1.0f;
  // Calibrate on one thread: iterations per second.
  int64_t iterations = 1000;
  double seconds = 0;
  for (;;) {
    const Clock::time_point start = Clock::now();
    volatile double sink = kernel.run(iterations, one);
    (void)sink;
    seconds = SecondsSince(start);
    if (seconds >= 0.01 || iterations > (int64_t{1} << 40)) break;
    iterations *= 4;
  }
  const double iterations_per_s = static_cast<double>(iterations) / std::max(seconds, 1e-9);
  constexpr int kTasksPerThread = 4;
  const int64_t n_tasks = int64_t{pool.n_threads()} * kTasksPerThread;
  const int64_t per_task =
      std::max<int64_t>(1000, static_cast<int64_t>(iterations_per_s * options.compute_seconds / kTasksPerThread));
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    std::atomic<int64_t> sink{0};
    const Clock::time_point start = Clock::now();
    pool.ParallelFor(n_tasks, [&](int64_t, int) { sink += static_cast<int64_t>(kernel.run(per_task, one)); });
    const double elapsed = SecondsSince(start);
    RIDGE_CHECK(sink.load() > 0);
    best = std::max(best, static_cast<double>(n_tasks * per_task) * kernel.ops_per_iteration / elapsed);
  }
  return best;
}

// Every figure of a probe but the read.
ProbeResult ArithmeticOnly(const ProbeOptions& options, ThreadPool& pool) {
  const Isa isa = ActiveIsa();
  const probe::IsaKernels kernels = probe::KernelsFor(isa);
  ProbeResult r;
  r.cpu_name = CpuName();
  r.isa = IsaName(isa);
  r.n_threads = pool.n_threads();
  r.measured_at = UtcNow();
  r.fp32_kernel = kernels.fp32_fma.name;
  r.bf16_kernel = kernels.bf16_dot.run ? kernels.bf16_dot.name : "none";
  r.int8_kernel = kernels.int8_dot.run ? kernels.int8_dot.name : "none";
  r.fp32_flops_per_s = MeasureCompute(kernels.fp32_fma, options, pool);
  r.bf16_flops_per_s = MeasureCompute(kernels.bf16_dot, options, pool);
  r.int8_ops_per_s = MeasureCompute(kernels.int8_dot, options, pool);
  return r;
}

template <typename T>
T Field(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.contains(key)) Fail("{}: field '{}' is missing", where, key);
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    Fail("{}: field '{}' has the wrong type", where, key);
  }
}

double RateField(const nlohmann::json& j, const char* key, const std::string& where, bool may_be_zero) {
  const double v = Field<double>(j, key, where);
  if (!std::isfinite(v) || v < 0 || (!may_be_zero && v == 0))
    Fail("{}: field '{}' = {} is out of range (must be {} 0)", where, key, v, may_be_zero ? ">=" : ">");
  return v;
}

void CheckComputeSeconds(double seconds) {
  if (!(seconds > 0 && seconds <= 60)) Fail("host probe: compute seconds must be in (0, 60], got {}", seconds);
}

}  // namespace

ProbeResult RunProbe(const ProbeOptions& options, ThreadPool* pool) {
  if (options.n_threads < 0 || options.n_threads > 4096) Fail("host probe: thread count {} is out of range", options.n_threads);
  if (options.buffer_bytes < (int64_t{1} << 20)) Fail("host probe: the buffer must be at least 1 MiB");
  if (options.passes < 1 || options.passes > 1000) Fail("host probe: passes must be in 1..1000, got {}", options.passes);
  CheckComputeSeconds(options.compute_seconds);
  std::unique_ptr<ThreadPool> own_pool;
  if (!pool) {
    own_pool = std::make_unique<ThreadPool>(options.n_threads > 0 ? options.n_threads : HardwareThreads());
    pool = own_pool.get();
  }
  int64_t buffer_bytes = 0;
  const double read_bytes_per_s = MeasureBandwidth(options, *pool, buffer_bytes);
  ProbeResult r = ArithmeticOnly(options, *pool);
  r.passes = options.passes;
  r.buffer_bytes = buffer_bytes;
  r.read_bytes_per_s = read_bytes_per_s;
  return r;
}

ProbeResult ProbeArithmetic(ThreadPool& pool, double seconds) {
  CheckComputeSeconds(seconds);
  ProbeOptions options;
  options.compute_seconds = seconds;
  return ArithmeticOnly(options, pool);
}

std::string DefaultProbePath() {
  if (const char* env = std::getenv("RIDGE_PROBE_FILE"); env && *env) return env;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return std::string(xdg) + "/ridge/probe.json";
  if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/ridge/probe.json";
  return ".ridge-probe.json";
}

std::string ProbeToJson(const ProbeResult& p) {
  nlohmann::ordered_json j;
  j["ridge_probe_version"] = kProbeVersion;
  j["cpu_name"] = p.cpu_name;
  j["isa"] = p.isa;
  j["n_threads"] = p.n_threads;
  j["buffer_bytes"] = p.buffer_bytes;
  j["passes"] = p.passes;
  j["read_bytes_per_s"] = p.read_bytes_per_s;
  j["fp32_flops_per_s"] = p.fp32_flops_per_s;
  j["bf16_flops_per_s"] = p.bf16_flops_per_s;
  j["int8_ops_per_s"] = p.int8_ops_per_s;
  j["fp32_kernel"] = p.fp32_kernel;
  j["bf16_kernel"] = p.bf16_kernel;
  j["int8_kernel"] = p.int8_kernel;
  j["measured_at"] = p.measured_at;
  return j.dump(2) + "\n";
}

ProbeResult ProbeFromJson(const std::string& text, const std::string& where) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    Fail("{}: not valid JSON (byte {}): {}", where, e.byte, e.what());
  }
  if (!j.is_object()) Fail("{}: expected a JSON object", where);
  const int version = Field<int>(j, "ridge_probe_version", where);
  if (version != kProbeVersion) Fail("{}: probe format version {} (this ridge reads {})", where, version, kProbeVersion);
  ProbeResult p;
  p.cpu_name = Field<std::string>(j, "cpu_name", where);
  p.isa = Field<std::string>(j, "isa", where);
  if (p.isa != "scalar" && p.isa != "avx2" && p.isa != "avx512" && p.isa != "amx")
    Fail("{}: field 'isa' = '{}' is not scalar, avx2, avx512 or amx", where, p.isa);
  p.n_threads = Field<int>(j, "n_threads", where);
  if (p.n_threads < 1) Fail("{}: field 'n_threads' = {} must be >= 1", where, p.n_threads);
  p.buffer_bytes = Field<int64_t>(j, "buffer_bytes", where);
  p.passes = Field<int>(j, "passes", where);
  p.read_bytes_per_s = RateField(j, "read_bytes_per_s", where, false);
  p.fp32_flops_per_s = RateField(j, "fp32_flops_per_s", where, false);
  p.bf16_flops_per_s = RateField(j, "bf16_flops_per_s", where, true);
  p.int8_ops_per_s = RateField(j, "int8_ops_per_s", where, true);
  p.fp32_kernel = Field<std::string>(j, "fp32_kernel", where);
  p.bf16_kernel = Field<std::string>(j, "bf16_kernel", where);
  p.int8_kernel = Field<std::string>(j, "int8_kernel", where);
  p.measured_at = Field<std::string>(j, "measured_at", where);
  return p;
}

void SaveProbe(const ProbeResult& probe, const std::string& path) {
  const std::filesystem::path file(path);
  std::error_code ec;
  if (file.has_parent_path()) {
    std::filesystem::create_directories(file.parent_path(), ec);
    if (ec) Fail("cannot create the directory of {}: {}", path, ec.message());
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) Fail("cannot open {} for writing: {}", path, std::strerror(errno));
  out << ProbeToJson(probe);
  out.close();
  if (!out) Fail("cannot write {}", path);
}

ProbeResult LoadProbe(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("cannot open the probe file {} (run `ridge roofline --probe` to make one)", path);
  std::ostringstream text;
  text << in.rdbuf();
  return ProbeFromJson(text.str(), path);
}

ProbeSeries CombineProbes(const std::vector<ProbeResult>& probes) {
  if (probes.empty()) Fail("combining probes: no probe given");
  ProbeSeries series;
  series.probes = probes;
  series.best = probes.front();
  series.n_probes = static_cast<int>(probes.size());
  for (const ProbeResult& p : probes)
    if (p.isa != series.best.isa || p.n_threads != series.best.n_threads)
      Fail("combining probes: {} kernels on {} threads and {} on {} are not the same roof", series.best.isa,
           series.best.n_threads, p.isa, p.n_threads);
  // One figure over every probe: its best goes into `best`, its spread is returned.
  const auto combine = [&](double ProbeResult::*figure) {
    double lo = probes.front().*figure, hi = lo;
    for (const ProbeResult& p : probes) {
      lo = std::min(lo, p.*figure);
      hi = std::max(hi, p.*figure);
    }
    series.best.*figure = hi;
    return hi > 0 ? (hi - lo) / hi : 0.0;
  };
  series.read_spread = combine(&ProbeResult::read_bytes_per_s);
  series.fp32_spread = combine(&ProbeResult::fp32_flops_per_s);
  series.bf16_spread = combine(&ProbeResult::bf16_flops_per_s);
  series.int8_spread = combine(&ProbeResult::int8_ops_per_s);
  return series;
}

std::string FormatProbe(const ProbeResult& p) {
  std::string out;
  out += fmt::format("host probe: {} — {} thread{}, {} kernels, measured {}\n", p.cpu_name.empty() ? "CPU" : p.cpu_name,
                     p.n_threads, p.n_threads == 1 ? "" : "s", p.isa, p.measured_at);
  out += fmt::format("  {:<38} {:>14}   ({} buffer, best of {} passes)\n", "memory read bandwidth",
                     FormatSi(p.read_bytes_per_s, "B/s"), FormatBytes(static_cast<double>(p.buffer_bytes)), p.passes);
  auto row = [&](const std::string& label, double rate, const char* unit, double ridge) {
    if (rate <= 0) {
      out += fmt::format("  {:<38} {:>14}\n", label, "not available");
      return;
    }
    out += fmt::format("  {:<38} {:>14}   ridge point {:.1f} {}/byte\n", label, FormatSi(rate, unit), ridge,
                       std::string(unit).substr(0, std::string(unit).find('/')));
  };
  row("FP32 FMA (" + p.fp32_kernel + ")", p.fp32_flops_per_s, "FLOP/s", p.Fp32RidgePoint());
  row("BF16 dot (" + p.bf16_kernel + ")", p.bf16_flops_per_s, "FLOP/s", p.Bf16RidgePoint());
  row("int8 dot (" + p.int8_kernel + ")", p.int8_ops_per_s, "OP/s", p.Int8RidgePoint());
  return out;
}

}  // namespace ridge
