// ridge bench-serve (also `ridge bench serve`): a load-generating benchmark
// of an OpenAI-compatible server, after vLLM's benchmark_serving.py with its
// random dataset. The report goes to stdout; progress and notes to stderr.
//
//   ridge bench-serve --base-url http://127.0.0.1:8080 --num-prompts 200 --request-rate 4
//       --random-input-len 256 --random-output-len 64 --goodput ttft:500 tpot:50
//       --result-json run.json --plot plots/
//
// `ridge bench serve ...` reaches this command too: main.cc rewrites those
// two words to "bench-serve" before parsing (cmd_bench.cc owns `ridge bench`).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/bench/arrivals.h"
#include "ridge/bench/plots.h"
#include "ridge/bench/report.h"
#include "ridge/bench/result_json.h"
#include "ridge/bench/serve_benchmark.h"
#include "ridge/command.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/tokenizer/tokenizer.h"

namespace ridge::app {
namespace {

struct BenchServeFlags {
  bench::ServeBenchmarkOptions options;
  std::string request_rate = "inf";
  std::vector<std::string> goodput;
  std::string result_json;
  std::string plot_dir;
  std::string tokenizer_from;
  bool no_server_tokenizer = false;
  bool no_ignore_eos = false;
  bool skip_test_request = false;
  bool no_progress = false;
  int64_t max_concurrency = 0;
};

// The model's own tokenizer, for sizing prompts exactly.
class GgufPromptTokenizer : public bench::PromptTokenizer {
 public:
  explicit GgufPromptTokenizer(const std::string& path)
      : path_(path), tokenizer_(Tokenizer::FromGguf(GgufFile::Open(path))) {}
  std::string Describe() const override { return "the tokenizer of " + path_; }
  std::vector<int32_t> Encode(const std::string& text) override { return tokenizer_.Encode(text, false); }
  std::string Decode(const std::vector<int32_t>& ids) override { return tokenizer_.Decode(ids); }

 private:
  std::string path_;
  Tokenizer tokenizer_;
};

void AddFlags(CLI::App& sub, BenchServeFlags& f) {
  bench::ServeBenchmarkOptions& o = f.options;
  sub.add_option("--base-url", o.base_url, "server address, http://HOST:PORT[/PREFIX]")->capture_default_str();
  sub.add_option("--endpoint", o.endpoint, "/v1/completions or /v1/chat/completions")->capture_default_str();
  sub.add_option("--model", o.model, "model name sent in requests (default: the first of GET /v1/models)");
  sub.add_option("--num-prompts", o.num_prompts, "number of requests")->capture_default_str();
  sub.add_option("--request-rate", f.request_rate,
                 "requests per second, or inf to send all at once (arrivals: gamma process, see --burstiness)")
      ->capture_default_str();
  sub.add_option("--burstiness", o.burstiness,
                 "gamma shape of the inter-arrival times: 1 = Poisson, < 1 burstier, > 1 more regular")
      ->capture_default_str();
  sub.add_option("--max-concurrency", f.max_concurrency, "most requests in flight at once (default: no limit)");
  sub.add_option("--random-input-len", o.random_input_len, "prompt tokens per request")->capture_default_str();
  sub.add_option("--random-output-len", o.random_output_len, "output tokens per request (max_tokens, ignore_eos)")
      ->capture_default_str();
  sub.add_option("--random-range-ratio", o.random_range_ratio,
                 "lengths drawn uniformly from [L*(1-X), L*(1+X)], X in [0, 1)")
      ->capture_default_str();
  sub.add_option("--seed", o.seed, "seed for prompts, lengths and arrival times")->capture_default_str();
  sub.add_option("--goodput", f.goodput, "service-level objectives KEY:MS with KEY ttft, tpot or e2el")
      ->expected(1, 3);
  sub.add_option("--result-json", f.result_json, "write the figures and per-request data to FILE");
  sub.add_option("--plot", f.plot_dir, "write SVG charts (TTFT/TPOT distributions, throughput, running requests)");
  sub.add_option("--tokenizer-from", f.tokenizer_from,
                 "size prompts with this GGUF's tokenizer (default: the server's /tokenize if it has one)");
  sub.add_flag("--no-server-tokenizer", f.no_server_tokenizer,
               "do not use the server's /tokenize: one word is taken as one token");
  sub.add_flag("--no-ignore-eos", f.no_ignore_eos, "do not send ignore_eos (outputs may then end early)");
  sub.add_option("--api-key", o.http.api_key, "bearer token (default: $OPENAI_API_KEY)");
  sub.add_option("--request-timeout", o.http.timeout_s, "seconds a request may stay silent before it fails")
      ->capture_default_str();
  sub.add_flag("--skip-test-request", f.skip_test_request, "do not send the initial single test request");
  sub.add_flag("--no-progress", f.no_progress, "no progress bar or notes on stderr");
}

int RunBenchServe(BenchServeFlags& f) {
  try {
    bench::ServeBenchmarkOptions o = f.options;
    o.request_rate = bench::ParseRequestRate(f.request_rate);
    if (f.max_concurrency != 0) o.max_concurrency = f.max_concurrency;
    std::string slo_text;
    for (const std::string& pair : f.goodput) slo_text += pair + " ";
    o.slo = ParseSlo(slo_text);
    if (!f.goodput.empty() && o.slo.empty()) Fail("--goodput: no KEY:MS pair given");
    o.ignore_eos = !f.no_ignore_eos;
    o.test_request = !f.skip_test_request;
    o.use_server_tokenizer = !f.no_server_tokenizer;
    if (o.http.api_key.empty())
      if (const char* key = std::getenv("OPENAI_API_KEY"); key != nullptr) o.http.api_key = key;
    std::unique_ptr<GgufPromptTokenizer> tokenizer;
    if (!f.tokenizer_from.empty()) tokenizer = std::make_unique<GgufPromptTokenizer>(f.tokenizer_from);
    std::FILE* log = f.no_progress ? nullptr : stderr;

    const bench::ServeBenchmarkResult result = bench::RunServeBenchmark(o, tokenizer.get(), log);

    int64_t n_listed = 0;
    for (const bench::RequestRecord& r : result.records) {
      if (r.success || n_listed >= 10) continue;
      if (n_listed++ == 0) std::fprintf(stderr, "Failed requests during benchmark run detected (capping to 10):\n");
      std::fprintf(stderr, "Error %lld (request %lld): %s\n", static_cast<long long>(n_listed - 1),
                   static_cast<long long>(r.index), r.error.c_str());
    }
    if (result.n_short_outputs > 0)
      std::fprintf(stderr,
                   "note: %lld successful requests generated fewer tokens than max_tokens "
                   "(does the server honour ignore_eos?)\n",
                   static_cast<long long>(result.n_short_outputs));
    std::fputs(bench::FormatServingReport(result).c_str(), stdout);
    std::fflush(stdout);
    if (!f.result_json.empty()) {
      bench::WriteResultJson(result, f.result_json);
      std::fprintf(stderr, "wrote %s\n", f.result_json.c_str());
    }
    if (!f.plot_dir.empty())
      for (const std::string& path : bench::WritePlots(result, f.plot_dir)) std::fprintf(stderr, "wrote %s\n", path.c_str());
    return 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "ridge: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ridge: unexpected error: %s\n", e.what());
    return 2;
  }
}

constexpr const char* kDescription = "Load-test an OpenAI-compatible server: TTFT, TPOT, ITL, E2E, throughput, goodput";

CommandRegistration kBenchServe{{"bench-serve", kDescription, [](CLI::App& sub) -> std::function<int()> {
  auto flags = std::make_shared<BenchServeFlags>();
  AddFlags(sub, *flags);
  return [flags] { return RunBenchServe(*flags); };
}}};

}  // namespace
}  // namespace ridge::app
