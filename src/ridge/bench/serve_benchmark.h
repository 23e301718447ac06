#pragma once
// `ridge bench serve`: a load-generating benchmark of an OpenAI-compatible
// server, after vLLM's benchmarks/benchmark_serving.py with its random
// dataset. It sizes the prompts, sends one test request, then sends every
// request on a gamma-distributed schedule (optionally capped in
// concurrency), streams the answers and times them on the client. Talks HTTP
// only.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "ridge/bench/dataset.h"
#include "ridge/bench/load_generator.h"
#include "ridge/bench/request_runner.h"
#include "ridge/bench/timeline.h"
#include "ridge/metrics/run_metrics.h"

namespace ridge::bench {

struct ServeBenchmarkOptions {
  std::string base_url = "http://127.0.0.1:8080";
  std::string endpoint = "/v1/completions";
  std::string model;  // "" = the first model the server lists at GET /v1/models
  int64_t num_prompts = 1000;
  double request_rate = std::numeric_limits<double>::infinity();  // requests/s; +inf = all at once
  double burstiness = 1.0;
  std::optional<int64_t> max_concurrency;
  int64_t random_input_len = 1024;
  int64_t random_output_len = 128;
  double random_range_ratio = 0.0;
  uint64_t seed = 0;
  Slo slo;
  bool ignore_eos = true;
  bool test_request = true;         // one request first, to fail fast on a misconfiguration
  bool use_server_tokenizer = true;  // size prompts with POST /tokenize when no tokenizer is given
  HttpOptions http;
};

struct ServeBenchmarkResult {
  ServeBenchmarkOptions options;
  std::string model;            // what the requests named ("" if none)
  std::string tokenizer;        // how prompts were sized
  std::vector<BenchRequest> requests;
  std::vector<double> offsets_s;  // scheduled send times
  std::vector<RequestRecord> records;  // by request index
  LoadTiming timing;
  RunMetrics metrics;           // Aggregate(ToTrace(records)…, duration, slo)
  Timeline timeline;
  int64_t n_short_outputs = 0;  // succeeded with fewer tokens than max_tokens
};

// Validates the options (ridge::Error names the flag). tokenizer: the model's
// own, or null to try the server's /tokenize and then fall back to the word
// approximation. log: progress lines ("Traffic request rate: …") and the
// progress bar; null = silent.
ServeBenchmarkResult RunServeBenchmark(const ServeBenchmarkOptions& options, PromptTokenizer* tokenizer,
                                       std::FILE* log);

// Tokenizer over the server's POST /tokenize and POST /detokenize, accepting
// vLLM's and llama.cpp's shapes ({"tokens": [...]}; {"prompt"|"content": "..."}).
class ServerTokenizer : public PromptTokenizer {
 public:
  ServerTokenizer(BaseUrl base, HttpOptions http, std::string model);
  std::string Describe() const override;
  std::vector<int32_t> Encode(const std::string& text) override;
  std::string Decode(const std::vector<int32_t>& ids) override;

 private:
  BaseUrl base_;
  HttpOptions http_;
  std::string model_;
};

}  // namespace ridge::bench
