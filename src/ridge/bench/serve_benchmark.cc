#include "ridge/bench/serve_benchmark.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "ridge/base/error.h"
#include "ridge/bench/arrivals.h"
#include "ridge/bench/openai_stream.h"

namespace ridge::bench {
namespace {

using nlohmann::json;

constexpr uint64_t kArrivalStream = 2;

void Log(std::FILE* log, const std::string& line) {
  if (log == nullptr) return;
  std::fprintf(log, "%s\n", line.c_str());
  std::fflush(log);
}

// A tqdm-like line on `log`, redrawn in place: " 37/100 [####......]  37% 00:04<00:07, 8.91 req/s".
class ProgressLine {
 public:
  ProgressLine(std::FILE* log, int64_t total) : log_(log), total_(total), start_(Clock::now()) {}
  void Update(int64_t done) {
    if (log_ == nullptr) return;
    constexpr int kWidth = 30;
    const double elapsed_s = SecondsSince(start_);
    const double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0;
    const int filled = total_ > 0 ? static_cast<int>(done * kWidth / total_) : kWidth;
    const double left_s = rate > 0 ? static_cast<double>(total_ - done) / rate : 0;
    std::fprintf(log_, "\r%*lld/%lld [%s%s] %3lld%% %s<%s, %.2f req/s", static_cast<int>(std::to_string(total_).size()),
                 static_cast<long long>(done), static_cast<long long>(total_),
                 std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(kWidth - filled), '.').c_str(),
                 static_cast<long long>(total_ > 0 ? done * 100 / total_ : 100), FormatClock(elapsed_s).c_str(),
                 FormatClock(left_s).c_str(), rate);
    if (done == total_) std::fputc('\n', log_);
    std::fflush(log_);
  }

 private:
  static std::string FormatClock(double seconds) {
    const auto s = static_cast<int64_t>(seconds);
    return s >= 3600 ? fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
                     : fmt::format("{:02}:{:02}", s / 60, s % 60);
  }
  std::FILE* log_;
  int64_t total_;
  Clock::time_point start_;
};

void Validate(const ServeBenchmarkOptions& o) {
  if (o.num_prompts < 1) Fail("--num-prompts must be >= 1, got {}", o.num_prompts);
  if (!(o.request_rate > 0)) Fail("--request-rate must be > 0 or inf, got {}", o.request_rate);
  if (!(o.burstiness > 0) || !std::isfinite(o.burstiness))
    Fail("--burstiness must be a finite number > 0, got {}", o.burstiness);
  if (o.max_concurrency && *o.max_concurrency < 1) Fail("--max-concurrency must be >= 1, got {}", *o.max_concurrency);
  if (o.endpoint.empty() || o.endpoint.front() != '/') Fail("--endpoint '{}' must start with '/'", o.endpoint);
  ApiKindForEndpoint(o.endpoint);
  if (!(o.http.timeout_s > 0) || !std::isfinite(o.http.timeout_s))
    Fail("--request-timeout must be a finite number of seconds > 0, got {}", o.http.timeout_s);
}

std::string FirstServedModel(const BaseUrl& base, const HttpOptions& http, std::string* problem) {
  const HttpReply reply = HttpGet(base, "/v1/models", http);
  if (!reply.ok()) {
    *problem = reply.transport_error.empty() ? fmt::format("GET /v1/models answered HTTP {}", reply.status)
                                             : "GET /v1/models: " + reply.transport_error;
    return "";
  }
  const json j = json::parse(reply.body, nullptr, false);
  if (j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty() &&
      j["data"][0].is_object() && j["data"][0].contains("id") && j["data"][0]["id"].is_string())
    return j["data"][0]["id"].get<std::string>();
  *problem = "GET /v1/models listed no model";
  return "";
}

}  // namespace

ServerTokenizer::ServerTokenizer(BaseUrl base, HttpOptions http, std::string model)
    : base_(std::move(base)), http_(std::move(http)), model_(std::move(model)) {}

std::string ServerTokenizer::Describe() const { return "the server's POST /tokenize at " + base_.ToString(); }

std::vector<int32_t> ServerTokenizer::Encode(const std::string& text) {
  json body{{"prompt", text}, {"add_special_tokens", false}};
  if (!model_.empty()) body["model"] = model_;
  const HttpReply reply = HttpPostJson(base_, "/tokenize", body.dump(), http_);
  if (!reply.ok())
    Fail("POST /tokenize: {}", reply.transport_error.empty()
                                   ? fmt::format("HTTP {}: {}", reply.status, ErrorMessageFromBody(reply.body))
                                   : reply.transport_error);
  const json j = json::parse(reply.body, nullptr, false);
  if (!j.is_object() || !j.contains("tokens") || !j["tokens"].is_array())
    Fail("POST /tokenize: the answer has no 'tokens' array");
  std::vector<int32_t> ids;
  for (const json& t : j["tokens"]) {
    const json& id = t.is_object() && t.contains("id") ? t["id"] : t;
    if (!id.is_number_integer()) Fail("POST /tokenize: a token id is not an integer");
    ids.push_back(id.get<int32_t>());
  }
  return ids;
}

std::string ServerTokenizer::Decode(const std::vector<int32_t>& ids) {
  json body{{"tokens", ids}};
  if (!model_.empty()) body["model"] = model_;
  const HttpReply reply = HttpPostJson(base_, "/detokenize", body.dump(), http_);
  if (!reply.ok())
    Fail("POST /detokenize: {}", reply.transport_error.empty()
                                     ? fmt::format("HTTP {}: {}", reply.status, ErrorMessageFromBody(reply.body))
                                     : reply.transport_error);
  const json j = json::parse(reply.body, nullptr, false);
  if (j.is_object())
    for (const char* key : {"prompt", "content", "text"})
      if (j.contains(key) && j[key].is_string()) return j[key].get<std::string>();
  Fail("POST /detokenize: the answer has no 'prompt', 'content' or 'text' string");
}

ServeBenchmarkResult RunServeBenchmark(const ServeBenchmarkOptions& options, PromptTokenizer* tokenizer,
                                       std::FILE* log) {
  Validate(options);
  ServeBenchmarkResult result;
  result.options = options;
  StreamTarget target;
  target.base = ParseBaseUrl(options.base_url);
  target.endpoint = options.endpoint;
  target.kind = ApiKindForEndpoint(options.endpoint);
  target.ignore_eos = options.ignore_eos;
  target.http = options.http;
  target.model = options.model;
  if (target.model.empty()) {
    std::string problem;
    target.model = FirstServedModel(target.base, target.http, &problem);
    if (target.model.empty()) Log(log, fmt::format("No model name given and {}; requests will name none", problem));
  }
  result.model = target.model;

  // How prompts are sized.
  std::unique_ptr<ServerTokenizer> server_tokenizer;
  if (tokenizer == nullptr && options.use_server_tokenizer) {
    server_tokenizer = std::make_unique<ServerTokenizer>(target.base, target.http, target.model);
    try {
      if (server_tokenizer->Encode("hello world").empty()) Fail("it gave no tokens for 'hello world'");
      server_tokenizer->Decode(server_tokenizer->Encode("hello"));
      tokenizer = server_tokenizer.get();
    } catch (const Error& e) {
      Log(log, fmt::format("The server's /tokenize is not usable ({}); prompts are sized as one word per token and "
                           "input tokens are counted from the server's usage",
                           e.what()));
    }
  }
  result.tokenizer = tokenizer ? tokenizer->Describe() : "none (one word per token; usage.prompt_tokens counted)";

  DatasetOptions dataset;
  dataset.n_requests = options.num_prompts;
  dataset.input_len = options.random_input_len;
  dataset.output_len = options.random_output_len;
  dataset.range_ratio = options.random_range_ratio;
  dataset.seed = options.seed;
  result.requests = MakeRandomDataset(dataset, tokenizer);

  if (options.test_request) {
    Log(log, "Starting initial single prompt test run...");
    const RequestRecord test = RunStreamingRequest(target, result.requests.front());
    if (!test.success)
      Fail("initial test request to {}{} failed: {} (check --base-url, --endpoint and --model)",
           target.base.ToString(), target.endpoint, test.error);
    Log(log, "Initial test run completed. Starting main benchmark run...");
  }
  Log(log, fmt::format("Traffic request rate: {}", std::isinf(options.request_rate)
                                                       ? std::string("inf")
                                                       : fmt::format("{}", options.request_rate)));
  Log(log, fmt::format("Burstiness factor: {} ({})", options.burstiness,
                       options.burstiness == 1.0 ? "Poisson process" : "Gamma distribution"));
  Log(log, fmt::format("Maximum request concurrency: {}",
                       options.max_concurrency ? std::to_string(*options.max_concurrency) : std::string("None")));

  BenchRng arrival_rng(DeriveSeed(options.seed, kArrivalStream));
  result.offsets_s = ArrivalOffsets(options.num_prompts, options.request_rate, options.burstiness, arrival_rng);
  result.records.resize(result.requests.size());
  ProgressLine progress(log, options.num_prompts);
  progress.Update(0);
  result.timing = RunLoad(
      result.offsets_s, options.max_concurrency,
      [&](int64_t i) {
        const auto k = static_cast<size_t>(i);
        result.records[k] = RunStreamingRequest(target, result.requests[k]);
      },
      [&](int64_t n_done) { progress.Update(n_done); });

  std::vector<RequestMetrics> per_request;
  per_request.reserve(result.records.size());
  for (const RequestRecord& r : result.records) {
    per_request.push_back(Summarize(ToTrace(r)));
    if (r.success && r.n_output_tokens() < r.n_output_tokens_requested) ++result.n_short_outputs;
  }
  result.metrics = Aggregate(per_request, result.timing.duration_s(), options.slo);
  result.timeline = BuildTimeline(result.records, result.timing.start, result.timing.duration_s());
  return result;
}

}  // namespace ridge::bench
