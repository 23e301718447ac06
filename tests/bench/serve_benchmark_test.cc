// The benchmark end to end against a scripted fake server (fake_openai_server.h):
// client-side timings bounded by the server's scripted delays, counts,
// failures of each kind, the concurrency cap, chat streams, server-side
// tokenization, and the JSON and plot outputs.
#include "ridge/bench/serve_benchmark.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "fake_openai_server.h"
#include "ridge/base/error.h"
#include "ridge/bench/plots.h"
#include "ridge/bench/report.h"
#include "ridge/bench/result_json.h"
#include "test_paths.h"

namespace ridge::bench {
namespace {

using ridge::testing::FakeOpenAiServer;
using ridge::testing::FakeServerConfig;

// Upper bounds only catch a client that is grossly wrong (a sanitizer build
// on a loaded machine is slow); the lower bounds are what the server enforces.
constexpr double kSlackMs = 3000;

ServeBenchmarkOptions Options(const FakeOpenAiServer& server, int64_t n, int64_t output_len) {
  ServeBenchmarkOptions o;
  o.base_url = server.base_url();
  o.num_prompts = n;
  o.random_input_len = 12;
  o.random_output_len = output_len;
  o.seed = 1;
  o.http.timeout_s = 30;
  return o;
}

TEST(ServeBenchmarkTest, ClientTimingsAndCountsMatchTheScriptedServer) {
  FakeServerConfig config;
  config.first_token_delay_ms = 40;
  config.chunk_interval_ms = 15;
  FakeOpenAiServer server(config);
  ServeBenchmarkOptions o = Options(server, 8, 6);
  o.request_rate = 50;
  o.slo.ttft_ms = 1e9;
  const ServeBenchmarkResult r = RunServeBenchmark(o, nullptr, nullptr);

  EXPECT_EQ(server.n_completion_requests(), 9);  // the test request and 8
  EXPECT_EQ(r.model, "fake-model");
  for (const nlohmann::json& body : server.bodies()) {
    EXPECT_EQ(body["model"], "fake-model");
    EXPECT_EQ(body["max_tokens"], 6);
    EXPECT_EQ(body["ignore_eos"], true);
    EXPECT_EQ(body["stream"], true);
  }
  const RunMetrics& m = r.metrics;
  EXPECT_EQ(m.n_completed, 8);
  EXPECT_EQ(m.n_failed, 0);
  EXPECT_EQ(m.n_good, 8);
  EXPECT_EQ(m.total_output_tokens, 48);
  EXPECT_EQ(m.total_input_tokens, 8 * 12);  // the server's usage: one token per word, as its /tokenize
  EXPECT_NE(r.tokenizer.find("/tokenize"), std::string::npos);
  for (const BenchRequest& q : r.requests) EXPECT_EQ(q.n_prompt_tokens, 12);

  // The server writes chunk k no earlier than 40 + 15·k ms after it got the
  // request (sleep_for never returns early), so that bounds each receipt from
  // below. A single gap can be shorter than 15 ms on the client (the chunk
  // before it may have been read late), so gaps are checked through sums.
  EXPECT_GE(m.ttft_ms.min, 40);
  EXPECT_LT(m.ttft_ms.max, 40 + kSlackMs);
  EXPECT_EQ(m.itl_ms.count, 8u * 5u);
  EXPECT_GE(m.e2e_ms.min, 40 + 5 * 15);
  EXPECT_LT(m.e2e_ms.max, 115 + kSlackMs);
  for (const RequestRecord& rec : r.records) {
    EXPECT_TRUE(rec.success) << rec.error;
    ASSERT_EQ(rec.chunk_times.size(), 6u);
    for (size_t k = 0; k < 6; ++k)
      EXPECT_GE(MillisBetween(rec.send_time, rec.chunk_times[k]), 40.0 + 15.0 * static_cast<double>(k));
    EXPECT_EQ(rec.generated_text, " t0 t1 t2 t3 t4 t5");
    EXPECT_EQ(rec.finish_reason, "length");
    const RequestMetrics one = Summarize(ToTrace(rec));
    EXPECT_NEAR(one.ttft_ms, MillisBetween(rec.send_time, rec.chunk_times[0]), 1e-9);
    EXPECT_NEAR(one.e2e_ms, MillisBetween(rec.send_time, rec.chunk_times[5]), 1e-9);
    EXPECT_NEAR(one.e2e_ms, one.ttft_ms + one.tpot_ms * 5, 1e-6);
    double itl_sum_ms = 0;
    for (const double gap : one.itl_ms) itl_sum_ms += gap;
    EXPECT_NEAR(itl_sum_ms, one.e2e_ms - one.ttft_ms, 1e-6);
  }
  // Requests were sent on the schedule, not earlier.
  for (size_t i = 0; i < r.records.size(); ++i)
    EXPECT_GE(MillisBetween(r.timing.start, r.records[i].send_time), r.offsets_s[i] * 1000 - 1e-6);
  EXPECT_GE(r.timing.duration_s(), r.offsets_s.back());
  EXPECT_NEAR(m.request_throughput, 8 / r.timing.duration_s(), 1e-9);
}

TEST(ServeBenchmarkTest, ConcurrencyCapSeenByTheServer) {
  FakeServerConfig config;
  config.first_token_delay_ms = 30;
  config.chunk_interval_ms = 5;
  FakeOpenAiServer server(config);
  ServeBenchmarkOptions o = Options(server, 10, 4);
  o.max_concurrency = 2;
  o.test_request = false;
  const ServeBenchmarkResult r = RunServeBenchmark(o, nullptr, nullptr);
  EXPECT_EQ(r.metrics.n_completed, 10);
  EXPECT_LE(server.max_in_flight(), 2);
  EXPECT_LE(r.timeline.peak_running, 2);
  EXPECT_EQ(r.timeline.peak_running, 2);
}

TEST(ServeBenchmarkTest, InfiniteRateWithoutACapSendsEverythingAtOnce) {
  FakeServerConfig config;
  config.first_token_delay_ms = 300;
  FakeOpenAiServer server(config);
  ServeBenchmarkOptions o = Options(server, 5, 2);  // within cpp-httplib's listen backlog of 5
  o.test_request = false;
  const ServeBenchmarkResult r = RunServeBenchmark(o, nullptr, nullptr);
  EXPECT_EQ(r.metrics.n_completed, 5);
  EXPECT_EQ(server.max_in_flight(), 5);
  EXPECT_EQ(r.timeline.peak_running, 5);
}

TEST(ServeBenchmarkTest, FailuresOfEveryKindAreCountedNotFatal) {
  using Failure = FakeServerConfig::Failure;
  for (const Failure failure : {Failure::kHttp500, Failure::kErrorEvent, Failure::kDropConnection}) {
    FakeServerConfig config;
    config.first_token_delay_ms = 5;
    config.chunk_interval_ms = 2;
    config.fail_every = 3;
    config.failure = failure;
    FakeOpenAiServer server(config);
    ServeBenchmarkOptions o = Options(server, 9, 4);
    o.test_request = false;
    o.max_concurrency = 3;
    const ServeBenchmarkResult r = RunServeBenchmark(o, nullptr, nullptr);
    EXPECT_EQ(r.metrics.n_completed, 6) << static_cast<int>(failure);
    EXPECT_EQ(r.metrics.n_failed, 3);
    EXPECT_EQ(r.metrics.total_output_tokens, 24);
    int64_t n_failed = 0;
    for (const RequestRecord& rec : r.records) {
      if (rec.success) continue;
      ++n_failed;
      EXPECT_FALSE(rec.error.empty());
      if (failure == Failure::kHttp500) {
        EXPECT_EQ(rec.http_status, 500);
        EXPECT_NE(rec.error.find("scripted failure"), std::string::npos) << rec.error;
      }
      if (failure == Failure::kErrorEvent) {
        EXPECT_NE(rec.error.find("scripted mid-stream error"), std::string::npos) << rec.error;
      }
    }
    EXPECT_EQ(n_failed, 3);
  }
}

TEST(ServeBenchmarkTest, ChatEndpointSkipsTheRoleChunk) {
  FakeServerConfig config;
  config.first_token_delay_ms = 30;
  FakeOpenAiServer server(config);
  ServeBenchmarkOptions o = Options(server, 3, 5);
  o.endpoint = "/v1/chat/completions";
  const ServeBenchmarkResult r = RunServeBenchmark(o, nullptr, nullptr);
  EXPECT_EQ(r.metrics.n_completed, 3);
  EXPECT_EQ(r.metrics.total_output_tokens, 15);
  EXPECT_GE(r.metrics.ttft_ms.min, 30);  // the role-only chunk came at once but is not a token
  for (const nlohmann::json& body : server.bodies()) EXPECT_TRUE(body.contains("messages"));
}

TEST(ServeBenchmarkTest, BundledTokensAndMissingUsage) {
  FakeServerConfig config;
  config.first_token_delay_ms = 5;
  config.tokens_per_chunk = 2;
  FakeOpenAiServer with_usage(config);
  ServeBenchmarkResult r = RunServeBenchmark(Options(with_usage, 3, 6), nullptr, nullptr);
  EXPECT_EQ(r.metrics.total_output_tokens, 18);  // usage counts 6 tokens in 3 chunks
  EXPECT_EQ(r.metrics.itl_ms.count, 3u * 2u);
  config.send_usage = false;
  FakeOpenAiServer without_usage(config);
  r = RunServeBenchmark(Options(without_usage, 3, 6), nullptr, nullptr);
  EXPECT_EQ(r.metrics.total_output_tokens, 9);  // no usage: one token per chunk
  EXPECT_EQ(r.n_short_outputs, 3);
  EXPECT_EQ(r.metrics.total_input_tokens, 3 * 12);  // the dataset's counts
}

TEST(ServeBenchmarkTest, WithoutServerTokenizerWordsApproximateTokens) {
  FakeServerConfig config;
  config.first_token_delay_ms = 5;
  config.tokenizer_endpoints = false;
  FakeOpenAiServer server(config);
  const ServeBenchmarkResult r = RunServeBenchmark(Options(server, 2, 3), nullptr, nullptr);
  EXPECT_EQ(r.metrics.n_completed, 2);
  EXPECT_NE(r.tokenizer.find("one word per token"), std::string::npos);
  for (const BenchRequest& q : r.requests) EXPECT_FALSE(q.prompt_tokens_exact);
}

TEST(ServeBenchmarkTest, MisconfigurationFailsFastWithTheReason) {
  FakeOpenAiServer server;
  ServeBenchmarkOptions o = Options(server, 2, 3);
  o.endpoint = "/v2/completions";  // 404 on the fake server
  try {
    RunServeBenchmark(o, nullptr, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("initial test request"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("404"), std::string::npos) << e.what();
  }
  o = Options(server, 2, 3);
  o.burstiness = 0;
  EXPECT_THROW(RunServeBenchmark(o, nullptr, nullptr), Error);
  o = Options(server, 2, 3);
  o.base_url = "https://127.0.0.1:1";
  EXPECT_THROW(RunServeBenchmark(o, nullptr, nullptr), Error);
}

TEST(ServeBenchmarkTest, JsonAndPlotsFromARealRun) {
  FakeServerConfig config;
  config.first_token_delay_ms = 10;
  config.chunk_interval_ms = 3;
  config.fail_every = 5;
  FakeOpenAiServer server(config);
  ServeBenchmarkOptions o = Options(server, 10, 4);
  o.request_rate = 100;
  o.burstiness = 0.5;
  o.test_request = false;
  o.slo.ttft_ms = 1e9;
  const ServeBenchmarkResult r = RunServeBenchmark(o, nullptr, nullptr);
  const std::string dir = ridge::testing::ScratchDir("bench_serve_outputs");
  WriteResultJson(r, dir + "/result.json");
  std::ifstream in(dir + "/result.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  EXPECT_EQ(j["completed"], 8);
  EXPECT_EQ(j["failed"], 2);
  EXPECT_EQ(j["num_prompts"], 10);
  EXPECT_EQ(j["request_rate"], 100.0);
  EXPECT_EQ(j["burstiness"], 0.5);
  EXPECT_EQ(j["total_output_tokens"], 32);
  EXPECT_DOUBLE_EQ(j["mean_ttft_ms"].get<double>(), r.metrics.ttft_ms.mean);
  EXPECT_DOUBLE_EQ(j["p99_itl_ms"].get<double>(), r.metrics.itl_ms.p99);
  EXPECT_EQ(j["request_goodput"].get<double>(), r.metrics.goodput);
  ASSERT_EQ(j["requests"].size(), 10u);
  ASSERT_EQ(j["ttfts"].size(), 10u);
  ASSERT_EQ(j["itls"].size(), 10u);
  int64_t failed = 0;
  for (size_t i = 0; i < 10; ++i) {
    const nlohmann::json& q = j["requests"][i];
    EXPECT_EQ(q["index"], static_cast<int64_t>(i));
    if (!q["success"].get<bool>()) {
      ++failed;
      EXPECT_EQ(j["output_lens"][i], 0);
      EXPECT_FALSE(j["errors"][i].get<std::string>().empty());
      continue;
    }
    EXPECT_NEAR(j["ttfts"][i].get<double>() * 1000, q["ttft_ms"].get<double>(), 1e-6);
    EXPECT_EQ(q["itl_ms"].size(), 3u);
    EXPECT_EQ(j["output_lens"][i], 4);
  }
  EXPECT_EQ(failed, 2);
  EXPECT_FALSE(j["timeline"]["output_tokens_per_s"].empty());

  const auto written = WritePlots(r, dir + "/plots");
  ASSERT_EQ(written.size(), 4u);
  for (const char* name : {"ttft_distribution.svg", "tpot_distribution.svg", "throughput.svg", "running_requests.svg"}) {
    std::ifstream svg(dir + "/plots/" + name);
    const std::string text((std::istreambuf_iterator<char>(svg)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text.rfind("<?xml", 0), 0u) << name;
    EXPECT_NE(text.find("</svg>"), std::string::npos) << name;
    EXPECT_NE(text.find("8 ok / 2 failed"), std::string::npos) << name;
  }
  const std::string report = FormatServingReport(r);
  EXPECT_NE(report.find("Successful requests:                     8"), std::string::npos);
  EXPECT_NE(report.find("Request goodput (req/s):"), std::string::npos);
}

}  // namespace
}  // namespace ridge::bench
