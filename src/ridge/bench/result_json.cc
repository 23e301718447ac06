#include "ridge/bench/result_json.h"

#include <cmath>
#include <ctime>
#include <fstream>

#include "ridge/base/error.h"

namespace ridge::bench {
namespace {

using nlohmann::json;

std::string LocalDate() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char text[32];
  std::strftime(text, sizeof text, "%Y%m%d-%H%M%S", &tm);
  return text;
}

void AddDistribution(json& j, const std::string& name, const Distribution& d) {
  j["mean_" + name + "_ms"] = d.mean;
  j["median_" + name + "_ms"] = d.p50;
  j["std_" + name + "_ms"] = d.std;
  j["p90_" + name + "_ms"] = d.p90;
  j["p95_" + name + "_ms"] = d.p95;
  j["p99_" + name + "_ms"] = d.p99;
  j["min_" + name + "_ms"] = d.min;
  j["max_" + name + "_ms"] = d.max;
}

}  // namespace

json BuildResultJson(const ServeBenchmarkResult& result) {
  const ServeBenchmarkOptions& o = result.options;
  const RunMetrics& m = result.metrics;
  json j;
  j["date"] = LocalDate();
  j["backend"] = ApiKindForEndpoint(o.endpoint) == ApiKind::kChatCompletions ? "openai-chat" : "openai";
  j["base_url"] = o.base_url;
  j["endpoint"] = o.endpoint;
  j["model_id"] = result.model;
  j["tokenizer_id"] = result.tokenizer;
  j["dataset_name"] = "random";
  j["num_prompts"] = o.num_prompts;
  j["random_input_len"] = o.random_input_len;
  j["random_output_len"] = o.random_output_len;
  j["random_range_ratio"] = o.random_range_ratio;
  j["seed"] = o.seed;
  j["ignore_eos"] = o.ignore_eos;
  if (std::isinf(o.request_rate)) j["request_rate"] = "inf";
  else j["request_rate"] = o.request_rate;
  j["burstiness"] = o.burstiness;
  j["max_concurrency"] = o.max_concurrency ? json(*o.max_concurrency) : json(nullptr);
  j["goodput_slo"] = FormatSlo(o.slo);

  j["duration"] = m.duration_s;
  j["completed"] = m.n_completed;
  j["failed"] = m.n_failed;
  j["total_input_tokens"] = m.total_input_tokens;
  j["total_output_tokens"] = m.total_output_tokens;
  j["request_throughput"] = m.request_throughput;
  j["request_goodput"] = m.slo.empty() ? json(nullptr) : json(m.goodput);
  j["good_requests"] = m.slo.empty() ? json(nullptr) : json(m.n_good);
  j["output_throughput"] = m.output_throughput;
  j["total_token_throughput"] = m.total_token_throughput;
  j["max_output_tokens_per_s"] = result.timeline.peak_output_tokens_per_s;
  j["max_concurrent_requests"] = result.timeline.peak_running;
  j["short_outputs"] = result.n_short_outputs;
  AddDistribution(j, "ttft", m.ttft_ms);
  AddDistribution(j, "tpot", m.tpot_ms);
  AddDistribution(j, "itl", m.itl_ms);
  AddDistribution(j, "e2el", m.e2e_ms);

  // vLLM's per-request arrays (times in seconds, as vLLM writes them).
  json input_lens = json::array(), output_lens = json::array(), ttfts = json::array(), itls = json::array();
  json texts = json::array(), errors = json::array(), requests = json::array();
  for (size_t i = 0; i < result.records.size(); ++i) {
    const RequestRecord& r = result.records[i];
    const RequestMetrics rm = Summarize(ToTrace(r));
    input_lens.push_back(r.n_prompt_tokens());
    output_lens.push_back(r.success ? r.n_output_tokens() : 0);
    ttfts.push_back(rm.ttft_ms / 1000.0);
    json itl_s = json::array(), itl_ms = json::array();
    for (const double gap_ms : rm.itl_ms) {
      itl_s.push_back(gap_ms / 1000.0);
      itl_ms.push_back(gap_ms);
    }
    itls.push_back(itl_s);
    texts.push_back(r.generated_text);
    errors.push_back(r.error);
    json req;
    req["index"] = r.index;
    req["scheduled_s"] = i < result.offsets_s.size() ? result.offsets_s[i] : 0.0;
    req["sent_s"] = MillisBetween(result.timing.start, r.send_time) / 1000.0;
    req["success"] = r.success;
    req["http_status"] = r.http_status;
    req["finish_reason"] = r.finish_reason;
    req["prompt_tokens"] = r.n_prompt_tokens();
    req["prompt_tokens_client"] = r.n_prompt_tokens_client;
    req["output_tokens"] = r.n_output_tokens();
    req["output_tokens_requested"] = r.n_output_tokens_requested;
    req["text_chunks"] = r.chunk_times.size();
    req["ttft_ms"] = rm.ttft_ms;
    req["tpot_ms"] = rm.tpot_ms;
    req["e2el_ms"] = rm.e2e_ms;
    req["itl_ms"] = itl_ms;
    req["error"] = r.error;
    requests.push_back(std::move(req));
  }
  j["input_lens"] = std::move(input_lens);
  j["output_lens"] = std::move(output_lens);
  j["ttfts"] = std::move(ttfts);
  j["itls"] = std::move(itls);
  j["generated_texts"] = std::move(texts);
  j["errors"] = std::move(errors);
  j["requests"] = std::move(requests);
  const Timeline& t = result.timeline;
  j["timeline"] = json{{"bucket_s", t.bucket_s},
                       {"bucket_start_s", t.bucket_start_s},
                       {"output_tokens_per_s", t.output_tokens_per_s},
                       {"running_time_s", t.running_time_s},
                       {"running_count", t.running_count}};
  return j;
}

void WriteResultJson(const ServeBenchmarkResult& result, const std::string& path) {
  const std::string text = BuildResultJson(result).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) Fail("--result-json '{}': cannot open the file for writing", path);
  out << text << '\n';
  out.close();
  if (!out) Fail("--result-json '{}': writing failed", path);
}

}  // namespace ridge::bench
