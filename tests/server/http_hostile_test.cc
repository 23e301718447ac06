// Hostile HTTP: every bad request answers a 4xx with an OpenAI error object
// (never a crash, never a 5xx), and the server keeps serving after each.
// Also the API key (401) and the body size limit (413).
#include <gtest/gtest.h>

#include "server_test_util.h"

namespace ridge::server {
namespace {

using nlohmann::json;
using namespace testing;

struct HostileRequest {
  std::string name;
  std::string path;
  std::string body;
  int status;          // expected status
  std::string param;   // expected error.param ("" = not checked)
};

std::vector<HostileRequest> HostileRequests() {
  const std::string long_prompt = [] {
    std::string s;
    for (int i = 0; i < 1500; ++i) s += "tree ";  // well over the 512-token context
    return s;
  }();
  std::vector<HostileRequest> r = {
      {"bad JSON", "/v1/completions", "{\"prompt\": ", 400, ""},
      {"not an object", "/v1/completions", "[1,2,3]", 400, ""},
      {"empty body", "/v1/completions", "", 400, ""},
      {"wrong type", "/v1/completions", R"({"prompt": "x", "max_tokens": "ten"})", 400, "max_tokens"},
      {"huge number", "/v1/completions", R"({"prompt": "x", "max_tokens": 1e308})", 400, "max_tokens"},
      {"huge integer", "/v1/completions", R"({"prompt": "x", "max_tokens": 123456789012345678901234567890})", 400,
       "max_tokens"},
      {"max_tokens past the context", "/v1/completions", R"({"prompt": "x", "max_tokens": 100000})", 400,
       "max_tokens"},
      {"negative max_tokens", "/v1/completions", R"({"prompt": "x", "max_tokens": -5})", 400, "max_tokens"},
      {"temperature out of range", "/v1/completions", R"({"prompt": "x", "temperature": -1})", 400, "temperature"},
      {"top_p out of range", "/v1/chat/completions",
       R"({"messages": [{"role": "user", "content": "x"}], "top_p": 7})", 400, "top_p"},
      {"invalid UTF-8", "/v1/completions", "{\"prompt\": \"caf\xe9\"}", 400, ""},
      {"invalid UTF-8 in chat", "/v1/chat/completions",
       "{\"messages\": [{\"role\": \"user\", \"content\": \"\xff\"}]}", 400, ""},
      {"lone surrogate", "/v1/completions", R"({"prompt": "\udc00"})", 400, ""},
      {"unknown model", "/v1/completions", R"({"model": "gpt-4", "prompt": "x"})", 404, "model"},
      {"unknown model (chat)", "/v1/chat/completions",
       R"({"model": "llama", "messages": [{"role": "user", "content": "x"}]})", 404, "model"},
      {"n=2", "/v1/completions", R"({"prompt": "x", "n": 2})", 400, "n"},
      {"n=2 (chat)", "/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "n": 2})", 400,
       "n"},
      {"prompt longer than the context", "/v1/completions", json{{"prompt", long_prompt}}.dump(), 400, "prompt"},
      {"chat longer than the context", "/v1/chat/completions",
       json{{"messages", json::array({{{"role", "user"}, {"content", long_prompt}}})}}.dump(), 400, "messages"},
      {"token id outside the vocabulary", "/v1/completions", R"({"prompt": [1, 600]})", 400, "prompt[1]"},
      {"empty prompt without BOS", "/v1/completions", R"({"prompt": [], "max_tokens": 3})", 400, "prompt"},
      {"missing messages", "/v1/chat/completions", R"({"model": "stories260K"})", 400, "messages"},
      {"nesting bomb", "/v1/completions", std::string(50000, '[') + std::string(50000, ']'), 400, ""},
      {"detokenize out of range", "/detokenize", R"({"tokens": [1, 99999]})", 400, "tokens[1]"},
      {"tokenize wrong type", "/tokenize", R"({"prompt": {"a": 1}})", 400, "prompt"},
      {"unknown path", "/v1/engines", "{}", 404, ""},
      {"10 MB body", "/v1/completions", json{{"prompt", std::string(10 << 20, 'a')}}.dump(), 413, ""},
  };
  return r;
}

void ExpectServing(int port) {
  auto health = Get(port, "/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST(HttpHostile, EveryBadRequestGetsA4xxAndTheServerKeepsServing) {
  TestServer server;
  for (const HostileRequest& h : HostileRequests()) {
    SCOPED_TRACE(h.name);
    auto res = Post(server.port(), h.path, h.body);
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, h.status) << res->body.substr(0, 300);
    json body;
    ASSERT_NO_THROW(body = json::parse(res->body)) << res->body.substr(0, 300);
    ASSERT_TRUE(body.contains("error"));
    const json& e = body["error"];
    EXPECT_TRUE(e["message"].is_string());
    EXPECT_FALSE(e["message"].get<std::string>().empty());
    EXPECT_TRUE(e["type"].is_string());
    EXPECT_TRUE(e.contains("param"));
    EXPECT_TRUE(e.contains("code"));
    if (!h.param.empty()) {
      EXPECT_EQ(e["param"], h.param) << e["message"];
    }
    ExpectServing(server.port());
  }
  // Streaming requests are validated before the stream starts: a plain 400.
  auto res = Post(server.port(), "/v1/completions", R"({"prompt": "x", "stream": true, "top_k": "all"})");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["error"]["param"], "top_k");
  // And real work still gets done.
  auto ok = Post(server.port(), "/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 5})");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(server.server().engine().Stats().kv.blocks_used, 0);
}

TEST(HttpHostile, BrokenHttpIsRefused) {
  TestServer server;
  const std::vector<std::string> raw = {
      "GARBAGE\r\n\r\n",
      "POST /v1/completions HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
      "POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
      "POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nZZZ\r\nabc\r\n0\r\n\r\n",
      "POST /v1/completions HTTP/1.1\r\nContent-Length: 100\r\n\r\n{\"prompt\"",  // body cut short
      std::string("GET /health HTTP/1.1\r\nX: \0\x01\x02\r\n\r\n", 30),
      "GET /" + std::string(20000, 'a') + " HTTP/1.1\r\n\r\n",
  };
  for (const std::string& bytes : raw) {
    // A request the server is still waiting to complete (a body cut short)
    // gets no answer within the timeout: that is fine too.
    std::string reply = RawExchange(server.port(), bytes, 800);
    // Either an HTTP error status or a closed connection; never a 2xx or 5xx.
    if (!reply.empty()) {
      EXPECT_EQ(reply.rfind("HTTP/1.1 4", 0), 0u) << reply.substr(0, 200);
    }
    ExpectServing(server.port());
  }
}

TEST(HttpHostile, ApiKeyIsRequiredWhenSet) {
  ServerOptions options = TestServerOptions();
  options.api_key = "sk-test-123";
  TestServer server(TestEngineOptions(), options);
  const std::string body = R"({"prompt": "Once", "max_tokens": 3})";
  for (const httplib::Headers& headers :
       {httplib::Headers{}, httplib::Headers{{"Authorization", "Bearer wrong"}},
        httplib::Headers{{"Authorization", "sk-test-123"}}, httplib::Headers{{"Authorization", "Bearer "}},
        httplib::Headers{{"Authorization", "Bearer sk-test-1234"}}}) {
    auto res = Post(server.port(), "/v1/completions", body, headers);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 401);
    EXPECT_EQ(json::parse(res->body)["error"]["code"], "invalid_api_key");
    auto models = Get(server.port(), "/v1/models", headers);
    ASSERT_TRUE(models);
    EXPECT_EQ(models->status, 401);
  }
  const httplib::Headers good = {{"Authorization", "Bearer sk-test-123"}};
  auto res = Post(server.port(), "/v1/completions", body, good);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  auto models = Get(server.port(), "/v1/models", good);
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 200);
  // Health stays open for probes (metrics: see http_framing_test.cc).
  ExpectServing(server.port());
}

TEST(HttpHostile, BodySizeLimitIsConfigurable) {
  ServerOptions options = TestServerOptions();
  options.max_body_bytes = 1024;
  TestServer server(TestEngineOptions(), options);
  auto big = Post(server.port(), "/v1/completions", json{{"prompt", std::string(2000, 'a')}}.dump());
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(json::parse(big->body)["error"]["code"], "request_too_large");
  auto small = Post(server.port(), "/v1/completions", R"({"prompt": "Once", "max_tokens": 2})");
  ASSERT_TRUE(small);
  EXPECT_EQ(small->status, 200);
}

}  // namespace
}  // namespace ridge::server
