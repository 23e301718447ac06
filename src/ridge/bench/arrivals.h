#pragma once
// When each request of a serving benchmark is sent, as vLLM's
// benchmark_serving schedules them: the first at once, then gaps drawn from
// Gamma(shape = burstiness, scale = 1 / (rate × burstiness)), so the mean gap
// is 1 / rate and its variance 1 / (rate² × burstiness):
//   burstiness = 1  → exponential gaps, a Poisson process;
//   burstiness < 1  → burstier (clumps and lulls), > 1 → more regular.
// An infinite rate sends everything at time 0.
#include <cstdint>
#include <string>
#include <vector>

#include "ridge/bench/random.h"

namespace ridge::bench {

// Offsets in seconds from the benchmark start, non-decreasing, offsets[0] = 0.
// rate_per_s: > 0 (may be +inf); burstiness: finite and > 0. Throws
// ridge::Error otherwise, or for n_requests < 0.
std::vector<double> ArrivalOffsets(int64_t n_requests, double rate_per_s, double burstiness, BenchRng& rng);

// Parses --request-rate: a positive number, or "inf" (also "infinity", any case).
double ParseRequestRate(const std::string& text);

}  // namespace ridge::bench
