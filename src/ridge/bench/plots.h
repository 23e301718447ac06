#pragma once
// The --plot DIR charts of `ridge bench serve`, standalone SVG files:
//   ttft_distribution.svg   histogram of TTFT over successful requests
//   tpot_distribution.svg   histogram of TPOT (requests with > 1 token)
//   throughput.svg          output tokens/s over the run
//   running_requests.svg    requests in flight over the run
// Median, P99 (and mean) are marked on the distributions.
#include <string>
#include <vector>

#include "ridge/bench/serve_benchmark.h"

namespace ridge::bench {

// Creates dir if needed; returns the paths written. Throws ridge::Error if a
// file cannot be written.
std::vector<std::string> WritePlots(const ServeBenchmarkResult& result, const std::string& dir);

}  // namespace ridge::bench
