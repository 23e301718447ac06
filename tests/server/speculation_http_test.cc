// A server that speculates (prompt lookup or a draft model) answers greedy requests with the
// text of one that does not, streamed or not, and reports what speculation
// did per request (usage.speculative_decoding) and in /metrics under vLLM's
// spec_decode counter names.
#include <gtest/gtest.h>

#include "server_test_util.h"

namespace ridge::server {
namespace {

using nlohmann::json;
using namespace testing;

const char* kCopyPrompt =
    "Lily had a red ball. She liked to play with it every day. One day, she lost the ball in the park. "
    "Lily had a red ball. She liked to play with it every day. One day, she";

json Completion(int port, const json& body) {
  auto res = Post(port, "/v1/completions", body.dump());
  EXPECT_TRUE(res);
  if (!res) return {};
  EXPECT_EQ(res->status, 200) << res->body;
  return json::parse(res->body);
}

// The plain server's reply (and its spec-decode draft counter), from a server
// that is gone before the caller starts the speculating one: both would run
// the one shared stories model, whose forward pass is one engine's at a time.
json PlainCompletion(const json& body, double* spec_draft_metric = nullptr) {
  TestServer plain(TestEngineOptions());
  const json reply = Completion(plain.port(), body);
  if (spec_draft_metric) {
    auto metrics = Get(plain.port(), "/metrics");
    EXPECT_TRUE(metrics);
    *spec_draft_metric = metrics ? MetricValue(metrics->body, "ridge_spec_decode_num_draft_tokens_total") : -1.0;
  }
  return reply;
}

TEST(SpeculationHttp, SameGreedyTextWithPerRequestAndServerCounters) {
  EngineOptions spec_options = TestEngineOptions();
  spec_options.speculation.method = SpeculationOptions::Method::kNgram;
  spec_options.speculation.num_tokens = 4;
  spec_options.speculation.ngram_min = 1;
  const json body = {{"prompt", kCopyPrompt}, {"max_tokens", 60}, {"temperature", 0}};
  double plain_draft_metric = -1.0;
  const json a = PlainCompletion(body, &plain_draft_metric);
  TestServer spec(spec_options);
  const json b = Completion(spec.port(), body);
  EXPECT_EQ(b["choices"][0]["text"], a["choices"][0]["text"]);
  EXPECT_EQ(b["usage"]["completion_tokens"], a["usage"]["completion_tokens"]);
  EXPECT_FALSE(a["usage"].contains("speculative_decoding"));
  const json& s = b["usage"]["speculative_decoding"];
  ASSERT_TRUE(s.is_object()) << b.dump();
  EXPECT_GT(s["accepted_tokens"].get<int64_t>(), 0);
  EXPECT_GE(s["draft_tokens"].get<int64_t>(), s["accepted_tokens"].get<int64_t>());
  EXPECT_GT(s["emitted_tokens"].get<int64_t>(), s["accepted_tokens"].get<int64_t>());

  // Streamed: the same text, chunks carrying several tokens at a time.
  json stream_body = body;
  stream_body["stream"] = true;
  stream_body["stream_options"] = {{"include_usage", true}};
  auto res = Post(spec.port(), "/v1/completions", stream_body.dump());
  ASSERT_TRUE(res);
  StreamResult streamed = ParseStream(res->body, false);
  EXPECT_EQ(streamed.text, a["choices"][0]["text"]);
  EXPECT_EQ(streamed.usage["speculative_decoding"]["accepted_tokens"], s["accepted_tokens"]);

  auto metrics = Get(spec.port(), "/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(MetricValue(metrics->body, "ridge_spec_decode_num_draft_tokens_total"),
            2.0 * s["draft_tokens"].get<double>());
  EXPECT_EQ(MetricValue(metrics->body, "ridge_spec_decode_num_accepted_tokens_total"),
            2.0 * s["accepted_tokens"].get<double>());
  EXPECT_EQ(MetricValue(metrics->body, "ridge_spec_decode_num_emitted_tokens_total"),
            2.0 * s["emitted_tokens"].get<double>());
  EXPECT_EQ(plain_draft_metric, 0.0);
  // No draft model, no draft cache to report.
  EXPECT_EQ(metrics->body.find("ridge_draft_kv_cache"), std::string::npos);
}

// A server drafting with a draft model (its own loaded copy of stories260K:
// the server's model is not shared with the draft) answers with the plain
// server's text and counts what it drafted.
TEST(SpeculationHttp, SameGreedyTextWithADraftModel) {
  const std::unique_ptr<Model> draft = Model::Load(ridge::testing::Stories260kGguf());
  EngineOptions spec_options = TestEngineOptions();
  spec_options.speculation.method = SpeculationOptions::Method::kDraftModel;
  spec_options.speculation.draft = draft.get();
  spec_options.speculation.num_tokens = 4;
  const json body = {{"prompt", kCopyPrompt}, {"max_tokens", 60}, {"temperature", 0}};
  const json a = PlainCompletion(body);
  TestServer spec(spec_options);
  const json b = Completion(spec.port(), body);
  EXPECT_EQ(b["choices"][0]["text"], a["choices"][0]["text"]);
  const json& s = b["usage"]["speculative_decoding"];
  ASSERT_TRUE(s.is_object()) << b.dump();
  EXPECT_GT(s["accepted_tokens"].get<int64_t>(), 0);  // it drafts for itself
  auto metrics = Get(spec.port(), "/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(MetricValue(metrics->body, "ridge_spec_decode_num_accepted_tokens_total"),
            s["accepted_tokens"].get<double>());
  // The draft's own KV cache: a pool of blocks, all back once the request is done.
  EXPECT_GT(MetricValue(metrics->body, "ridge_draft_kv_cache_blocks_capacity"), 0);
  EXPECT_EQ(MetricValue(metrics->body, "ridge_draft_kv_cache_blocks_used"), 0);
}

// A stop string inside a run of accepted tokens ends the text exactly where
// plain decoding ends it.
TEST(SpeculationHttp, StopStringsCutTheSameText) {
  EngineOptions spec_options = TestEngineOptions();
  spec_options.speculation.method = SpeculationOptions::Method::kNgram;
  spec_options.speculation.ngram_min = 1;
  const json body = {{"prompt", kCopyPrompt}, {"max_tokens", 60}, {"temperature", 0}, {"stop", {"happy"}}};
  const json a = PlainCompletion(body);
  TestServer spec(spec_options);
  const json b = Completion(spec.port(), body);
  EXPECT_EQ(b["choices"][0]["text"], a["choices"][0]["text"]);
  EXPECT_EQ(b["choices"][0]["finish_reason"], a["choices"][0]["finish_reason"]);
  EXPECT_EQ(a["choices"][0]["finish_reason"], "stop");  // "happy" comes within max_tokens
}

}  // namespace
}  // namespace ridge::server
