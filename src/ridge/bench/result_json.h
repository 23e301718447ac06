#pragma once
// The --result-json file of `ridge bench serve`: vLLM's result keys (so
// tools that read benchmark_serving results read ours: "completed",
// "request_throughput", "mean_ttft_ms", "p99_itl_ms", "ttfts" and "itls" in
// seconds as vLLM writes them, …), the run's settings, and per-request
// records and the timeline with units in their names.
#include <string>

#include <nlohmann/json.hpp>

#include "ridge/bench/serve_benchmark.h"

namespace ridge::bench {

nlohmann::json BuildResultJson(const ServeBenchmarkResult& result);

// Writes BuildResultJson (indented) to path; invalid UTF-8 in generated text
// is replaced, not fatal. Throws ridge::Error if the file cannot be written.
void WriteResultJson(const ServeBenchmarkResult& result, const std::string& path);

}  // namespace ridge::bench
