// The OpenAI endpoints over real HTTP on stories260K: completions and chat,
// streaming and not, agree with each other and with the single-request
// generator; stop strings, logprobs, usage, echo, the tokenizer endpoints,
// /v1/models, /health and /metrics.
#include <gtest/gtest.h>

#include <algorithm>

#include "ridge/engine/generator.h"
#include "server_test_util.h"

namespace ridge::server {
namespace {

using nlohmann::json;
using namespace testing;

class HttpEndpoints : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new TestServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static int port() { return server_->port(); }

  static json PostOk(const std::string& path, const json& body) {
    auto res = Post(port(), path, body.dump());
    EXPECT_TRUE(res);
    if (!res) return {};
    EXPECT_EQ(res->status, 200) << res->body;
    return json::parse(res->body);
  }
  static StreamResult PostStream(const std::string& path, const json& body) {
    auto res = Post(port(), path, body.dump());
    EXPECT_TRUE(res);
    if (!res) return {};
    EXPECT_EQ(res->status, 200) << res->body;
    EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
    return ParseStream(res->body, path == "/v1/chat/completions");
  }

  // The single-request path's greedy text for a prompt (the reference).
  static std::string GreedyAlone(const std::string& prompt, int64_t max_new) {
    ThreadPool pool(1);
    Generator generator(StoriesModel(), StoriesTokenizer(), pool);
    GenerateOptions options;
    options.sampling.temperature = 0;
    options.kv_type = GgmlType::kF32;
    options.max_new_tokens = max_new;
    options.stop_at_bos = true;
    return generator.Generate(prompt, options, nullptr).text;
  }

  static TestServer* server_;
};
TestServer* HttpEndpoints::server_ = nullptr;

TEST_F(HttpEndpoints, CompletionMatchesTheSingleRequestGenerator) {
  json r = PostOk("/v1/completions", {{"model", "stories260K"}, {"prompt", "Once upon a time"}, {"max_tokens", 24},
                                      {"temperature", 0}});
  EXPECT_EQ(r["object"], "text_completion");
  EXPECT_EQ(r["model"], "stories260K");
  EXPECT_EQ(r["id"].get<std::string>().rfind("cmpl-", 0), 0u);
  ASSERT_EQ(r["choices"].size(), 1u);
  const json& choice = r["choices"][0];
  EXPECT_EQ(choice["index"], 0);
  EXPECT_EQ(choice["text"], GreedyAlone("Once upon a time", 24));
  EXPECT_TRUE(choice["logprobs"].is_null());
  const int64_t n_prompt = static_cast<int64_t>(StoriesTokenizer().Encode("Once upon a time", true).size());
  EXPECT_EQ(r["usage"]["prompt_tokens"], n_prompt);
  const int64_t n_out = r["usage"]["completion_tokens"];
  EXPECT_EQ(r["usage"]["total_tokens"], n_prompt + n_out);
  EXPECT_EQ(choice["finish_reason"], n_out == 24 ? "length" : "stop");
}

TEST_F(HttpEndpoints, CompletionDefaultsToSixteenTokens) {
  json r = PostOk("/v1/completions", {{"prompt", "The cat"}, {"temperature", 0}, {"ignore_eos", true}});
  EXPECT_EQ(r["usage"]["completion_tokens"], 16);
  EXPECT_EQ(r["choices"][0]["finish_reason"], "length");
}

TEST_F(HttpEndpoints, StreamingCompletionEqualsNonStreaming) {
  json body = {{"prompt", "Lily and Ben"}, {"max_tokens", 40}, {"temperature", 0}};
  json whole = PostOk("/v1/completions", body);
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  StreamResult s = PostStream("/v1/completions", body);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.text, whole["choices"][0]["text"]);
  EXPECT_EQ(s.finish_reason, whole["choices"][0]["finish_reason"]);
  ASSERT_FALSE(s.usage.is_null());
  EXPECT_EQ(s.usage, whole["usage"]);
  // Every chunk but the usage one carries one choice and "usage": null.
  for (size_t i = 0; i + 1 < s.chunks.size(); ++i) {
    EXPECT_EQ(s.chunks[i]["object"], "text_completion");
    EXPECT_EQ(s.chunks[i]["choices"].size(), 1u);
    EXPECT_TRUE(s.chunks[i]["usage"].is_null());
  }
  EXPECT_TRUE(s.chunks.back()["choices"].empty());
  // Streamed in pieces (tokens that arrive while a chunk is written are
  // coalesced into the next one): at least a text chunk, the finish, usage.
  EXPECT_GE(s.n_chunks, 2);
}

TEST_F(HttpEndpoints, StreamWithoutUsageHasNoUsageChunk) {
  StreamResult s = PostStream("/v1/completions", {{"prompt", "One day"}, {"max_tokens", 8}, {"stream", true}});
  EXPECT_TRUE(s.done);
  EXPECT_TRUE(s.usage.is_null());
  for (const json& c : s.chunks) EXPECT_FALSE(c.contains("usage"));
  EXPECT_FALSE(s.finish_reason.empty());
}

TEST_F(HttpEndpoints, ChatStreamingEqualsNonStreaming) {
  json body = {{"model", "stories260K"},
               {"messages", json::array({{{"role", "system"}, {"content", "Tell a story."}},
                                         {{"role", "user"}, {"content", "Once upon a time"}}})},
               {"max_completion_tokens", 30},
               {"temperature", 0}};
  json whole = PostOk("/v1/chat/completions", body);
  EXPECT_EQ(whole["object"], "chat.completion");
  EXPECT_EQ(whole["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  const json& message = whole["choices"][0]["message"];
  EXPECT_EQ(message["role"], "assistant");
  EXPECT_FALSE(message["content"].get<std::string>().empty());
  body["stream"] = true;
  body["stream_options"] = {{"include_usage", true}};
  StreamResult s = PostStream("/v1/chat/completions", body);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.text, message["content"]);
  EXPECT_EQ(s.finish_reason, whole["choices"][0]["finish_reason"]);
  EXPECT_EQ(s.usage, whole["usage"]);
  ASSERT_FALSE(s.chunks.empty());
  EXPECT_EQ(s.chunks[0]["object"], "chat.completion.chunk");
  EXPECT_EQ(s.chunks[0]["choices"][0]["delta"]["role"], "assistant");
  // The prompt is the plain transcript (stories260K has no chat template).
  const auto expected_prompt =
      StoriesTokenizer().Encode("System: Tell a story.\nUser: Once upon a time\nAssistant:", true, true);
  EXPECT_EQ(whole["usage"]["prompt_tokens"], expected_prompt.size());
}

TEST_F(HttpEndpoints, StopStringCutsTheTextInBothModes) {
  const std::string full = GreedyAlone("Once upon a time", 40);
  // Stop at the second word boundary of the reference text.
  const size_t cut = full.find(' ', full.find(' ', 1) + 1);
  ASSERT_NE(cut, std::string::npos) << full;
  const std::string stop = full.substr(cut, 3);
  const std::string expected = full.substr(0, full.find(stop));
  json body = {{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 0}, {"stop", {stop, "zzzz"}}};
  json whole = PostOk("/v1/completions", body);
  EXPECT_EQ(whole["choices"][0]["text"], expected);
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
  body["stream"] = true;
  StreamResult s = PostStream("/v1/completions", body);
  EXPECT_EQ(s.text, expected);
  EXPECT_EQ(s.finish_reason, "stop");
  EXPECT_TRUE(s.done);
}

TEST_F(HttpEndpoints, CompletionLogprobs) {
  json r = PostOk("/v1/completions",
                  {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"logprobs", 2}, {"ignore_eos", true}});
  const json& lp = r["choices"][0]["logprobs"];
  ASSERT_TRUE(lp.is_object()) << r.dump();
  ASSERT_EQ(lp["tokens"].size(), 6u);
  ASSERT_EQ(lp["token_logprobs"].size(), 6u);
  ASSERT_EQ(lp["top_logprobs"].size(), 6u);
  ASSERT_EQ(lp["text_offset"].size(), 6u);
  std::string joined;
  for (size_t i = 0; i < 6; ++i) {
    const double chosen = lp["token_logprobs"][i];
    EXPECT_LE(chosen, 0.0);
    const json& top = lp["top_logprobs"][i];
    EXPECT_GE(top.size(), 2u);
    EXPECT_LE(top.size(), 3u);
    // Greedy: the chosen token is the most likely one.
    for (auto& [text, value] : top.items()) EXPECT_LE(value.get<double>(), chosen + 1e-6) << text;
    EXPECT_EQ(lp["text_offset"][i], joined.size());
    joined += lp["tokens"][i].get<std::string>();
  }
  EXPECT_EQ(joined, r["choices"][0]["text"]);
}

TEST_F(HttpEndpoints, ChatLogprobsStreamed) {
  json body = {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})},
               {"max_tokens", 5},
               {"ignore_eos", true},
               {"logprobs", true},
               {"top_logprobs", 3},
               {"stream", true}};
  StreamResult s = PostStream("/v1/chat/completions", body);
  size_t n_entries = 0;
  for (const json& c : s.chunks) {
    if (c["choices"].empty() || c["choices"][0]["logprobs"].is_null()) continue;
    for (const json& e : c["choices"][0]["logprobs"]["content"]) {
      ++n_entries;
      EXPECT_TRUE(e["token"].is_string());
      EXPECT_LE(e["logprob"].get<double>(), 0.0);
      EXPECT_TRUE(e["bytes"].is_array());
      EXPECT_EQ(e["top_logprobs"].size(), 3u);
    }
  }
  EXPECT_EQ(n_entries, 5u);
}

TEST_F(HttpEndpoints, SeededSamplingIsReproducible) {
  json body = {{"prompt", "The dog"}, {"max_tokens", 20}, {"temperature", 1.0}, {"top_p", 0.9},
               {"top_k", 40},         {"min_p", 0.01},    {"seed", 1234},       {"presence_penalty", 0.3},
               {"frequency_penalty", 0.2}, {"repetition_penalty", 1.1}};
  json a = PostOk("/v1/completions", body);
  json b = PostOk("/v1/completions", body);
  EXPECT_EQ(a["choices"][0]["text"], b["choices"][0]["text"]);
}

TEST_F(HttpEndpoints, EchoPrependsThePrompt) {
  json r = PostOk("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 5}, {"echo", true}});
  const std::string text = r["choices"][0]["text"];
  EXPECT_EQ(text.rfind("Once upon a time", 0), 0u) << text;
  StreamResult s = PostStream("/v1/completions",
                              {{"prompt", "Once upon a time"}, {"max_tokens", 5}, {"echo", true}, {"stream", true}});
  EXPECT_EQ(s.text, text);
}

TEST_F(HttpEndpoints, TokenIdPrompt) {
  const auto ids = StoriesTokenizer().Encode("Once upon a time", true);
  json by_ids = PostOk("/v1/completions", {{"prompt", ids}, {"max_tokens", 10}});
  json by_text = PostOk("/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 10}});
  EXPECT_EQ(by_ids["choices"][0]["text"], by_text["choices"][0]["text"]);
}

TEST_F(HttpEndpoints, TokenizeAndDetokenizeRoundTrip) {
  json t = PostOk("/tokenize", {{"prompt", "Hello world"}});
  const auto expected = StoriesTokenizer().Encode("Hello world", true);
  EXPECT_EQ(t["tokens"].get<std::vector<int32_t>>(), expected);
  EXPECT_EQ(t["count"], expected.size());
  EXPECT_EQ(t["max_model_len"], StoriesModel().config().n_ctx_train);
  json no_bos = PostOk("/tokenize", {{"prompt", "Hello world"}, {"add_special_tokens", false}});
  EXPECT_EQ(no_bos["count"], expected.size() - 1);
  json d = PostOk("/detokenize", {{"tokens", t["tokens"]}});
  EXPECT_EQ(d["prompt"], "Hello world");
  json chat = PostOk("/tokenize", {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})}});
  EXPECT_EQ(chat["tokens"].get<std::vector<int32_t>>(), StoriesTokenizer().Encode("User: Hi\nAssistant:", true, true));
}

TEST_F(HttpEndpoints, SpecialTokenTextsAreParsedUnlessTheRequestSaysNot) {
  const int32_t eos = StoriesTokenizer().eos_id();
  ASSERT_GE(eos, 0);
  const std::string text = "The end." + StoriesTokenizer().TokenPiece(eos);
  json parsed = PostOk("/tokenize", {{"prompt", text}, {"add_special_tokens", false}});
  EXPECT_EQ(parsed["tokens"].get<std::vector<int32_t>>(), StoriesTokenizer().Encode(text, false, true));
  EXPECT_EQ(parsed["tokens"].back(), eos);
  json literal = PostOk("/tokenize", {{"prompt", text}, {"add_special_tokens", false}, {"parse_special", false}});
  const auto literal_ids = literal["tokens"].get<std::vector<int32_t>>();
  EXPECT_EQ(literal_ids, StoriesTokenizer().Encode(text, false, false));
  EXPECT_EQ(std::count(literal_ids.begin(), literal_ids.end(), eos), 0);
  // A completion prompt takes the same option.
  json completion = PostOk("/v1/completions", {{"prompt", text}, {"max_tokens", 1}, {"parse_special", false}});
  EXPECT_EQ(completion["usage"]["prompt_tokens"], literal_ids.size() + (StoriesTokenizer().add_bos() ? 1 : 0));
}

TEST_F(HttpEndpoints, ModelsHealthAndMetrics) {
  auto models = Get(port(), "/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 200);
  json m = json::parse(models->body);
  EXPECT_EQ(m["object"], "list");
  ASSERT_EQ(m["data"].size(), 1u);
  EXPECT_EQ(m["data"][0]["id"], "stories260K");
  EXPECT_EQ(m["data"][0]["object"], "model");
  auto one = Get(port(), "/v1/models/stories260K");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->status, 200);
  auto missing = Get(port(), "/v1/models/gpt-4");
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(json::parse(missing->body)["error"]["code"], "model_not_found");

  auto health = Get(port(), "/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);

  PostOk("/v1/completions", {{"prompt", "Once"}, {"max_tokens", 4}, {"ignore_eos", true}});
  auto metrics = Get(port(), "/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->get_header_value("Content-Type"), kPrometheusContentType);
  const std::string& text = metrics->body;
  for (const char* family : {"ridge_time_to_first_token_seconds", "ridge_inter_token_latency_seconds",
                             "ridge_e2e_request_latency_seconds", "ridge_request_queue_time_seconds"})
    EXPECT_NE(text.find(std::string("# TYPE ") + family + " histogram"), std::string::npos) << family;
  EXPECT_GE(MetricValue(text, "ridge_time_to_first_token_seconds_count"), 1.0);
  EXPECT_GE(MetricValue(text, "ridge_generation_tokens_total"), 4.0);
  EXPECT_EQ(MetricValue(text, "ridge_kv_cache_usage_ratio"), 0.0);
  EXPECT_EQ(MetricValue(text, "ridge_num_requests_running"), 0.0);
  EXPECT_EQ(MetricValue(text, "ridge_num_requests_waiting"), 0.0);
  EXPECT_EQ(MetricValue(text, "ridge_kv_cache_blocks_used"), 0.0);
  EXPECT_GT(MetricValue(text, "ridge_kv_cache_blocks_capacity"), 0.0);
  EXPECT_NE(text.find("model_name=\"stories260K\""), std::string::npos);
}

}  // namespace
}  // namespace ridge::server
