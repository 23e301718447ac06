#pragma once
// The host probe: this machine's memory read bandwidth and peak arithmetic,
// measured with the thread count ridge runs with, so that benchmarks can state
// their figures as a fraction of what the hardware can do.
//
//   bandwidth: a buffer far larger than the caches (1 GiB by default), read
//              by every thread of the pool in large contiguous chunks, best
//              of several passes;
//   FP32 FMA:  vfmadd231ps (AVX-512 or AVX2), 2 FLOPs per lane;
//   BF16 dot:  vdpbf16ps (AVX512_BF16), 4 FLOPs per FP32 lane (two products
//              and their sums); absent (0) on CPUs without it;
//   int8 dot:  vpdpbusd (AVX512_VNNI), or vpmaddubsw + vpmaddwd + vpaddd on
//              AVX2, or on the amx target the AMX tiles' tdpbssd (what its
//              Q8_0 prefill runs on): 2 ops (multiply, add) per int8 product.
// Each compute kernel keeps many independent accumulator chains so that
// throughput, not latency, limits it. The ISA used is ActiveIsa()
// (RIDGE_ISA lowers it), the same choice the kernels make.
#include <cstdint>
#include <string>
#include <vector>

namespace ridge {

class ThreadPool;

struct ProbeOptions {
  int n_threads = 0;                     // 0: HardwareThreads()
  int64_t buffer_bytes = int64_t{1} << 30;  // the bandwidth buffer
  int passes = 5;                        // bandwidth passes; the best counts
  double compute_seconds = 0.3;          // per compute measurement (3 repetitions, the best counts)
};

struct ProbeResult {
  std::string cpu_name;   // /proc/cpuinfo "model name", "" if unknown
  std::string isa;        // "amx", "avx512", "avx2", "scalar"
  int n_threads = 0;
  int64_t buffer_bytes = 0;
  int passes = 0;
  double read_bytes_per_s = 0;
  double fp32_flops_per_s = 0;
  double bf16_flops_per_s = 0;  // 0: no BF16 dot on this ISA
  double int8_ops_per_s = 0;    // 0: no int8 dot on this ISA
  std::string fp32_kernel;      // e.g. "avx512 vfmadd231ps"
  std::string bf16_kernel;      // e.g. "avx512 vdpbf16ps" or "none"
  std::string int8_kernel;      // e.g. "avx512 vpdpbusd", "avx2 vpmaddubsw+vpmaddwd" or "none"
  std::string measured_at;      // UTC, ISO 8601

  // FLOP/byte where each arithmetic's roof meets the bandwidth slope (0 if absent).
  double Fp32RidgePoint() const { return read_bytes_per_s > 0 ? fp32_flops_per_s / read_bytes_per_s : 0; }
  double Bf16RidgePoint() const { return read_bytes_per_s > 0 ? bf16_flops_per_s / read_bytes_per_s : 0; }
  double Int8RidgePoint() const { return read_bytes_per_s > 0 ? int8_ops_per_s / read_bytes_per_s : 0; }
};

// Runs the probe on `pool` (or on a pool of options.n_threads made for it).
// Throws ridge::Error for options out of range or if the buffer cannot be
// allocated.
ProbeResult RunProbe(const ProbeOptions& options, ThreadPool* pool = nullptr);

// The arithmetic peaks alone (FP32, BF16, int8; the read left 0), each the
// best of 3 passes of `seconds` on `pool`: a short probe a benchmark takes
// right after a timed step, so that the step is measured against the roof it
// ran under (the host's speed drifts from minute to minute).
ProbeResult ProbeArithmetic(ThreadPool& pool, double seconds);

// Several probes of one run (`ridge bench` takes one at its start and one at
// its end): each figure's best, and how far apart the probes were. On a
// shared host a figure can halve between two probes minutes apart; a "% of
// roofline" against a roof whose probes disagree that much means little.
struct ProbeSeries {
  std::vector<ProbeResult> probes;  // as taken
  ProbeResult best;  // each figure's maximum over the probes (the rest from the first)
  int n_probes = 0;
  // (max − min) / max of each figure over the probes; 0 for a single probe.
  double read_spread = 0, fp32_spread = 0, bf16_spread = 0, int8_spread = 0;
};
// Throws ridge::Error for an empty list or probes of different ISAs or thread counts.
ProbeSeries CombineProbes(const std::vector<ProbeResult>& probes);

// $RIDGE_PROBE_FILE, else $XDG_CACHE_HOME/ridge/probe.json, else
// $HOME/.cache/ridge/probe.json.
std::string DefaultProbePath();
// Writes JSON (creating the directory); throws ridge::Error on I/O failure.
void SaveProbe(const ProbeResult& probe, const std::string& path);
// Throws ridge::Error naming the file and the field for a missing file,
// malformed JSON, a missing field or a value out of range.
ProbeResult LoadProbe(const std::string& path);
// The JSON text SaveProbe writes (and its parser, for tests and other tools).
std::string ProbeToJson(const ProbeResult& probe);
ProbeResult ProbeFromJson(const std::string& json_text, const std::string& where = "probe");

// A multi-line human report: each figure and its ridge point.
std::string FormatProbe(const ProbeResult& probe);

}  // namespace ridge
