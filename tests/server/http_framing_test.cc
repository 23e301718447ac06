// Strict HTTP/1.1 at the front (http_front.h, http_request_parser.h):
// pipelined requests are all answered, in order; framings that a proxy and
// the server could read differently (request smuggling) are refused with 400
// and the connection closed, so nothing smuggled behind them is answered;
// oversized heads get 431, oversized chunked bodies 413; a known path with a
// wrong method gets 405 with Allow; the auth scheme is case-insensitive;
// /metrics needs the API key unless configured open.
#include <gtest/gtest.h>

#include "server_test_util.h"

namespace ridge::server {
namespace {

using nlohmann::json;
using namespace testing;

// The status code of the first response in `reply`, or 0.
int StatusOf(const std::string& reply) {
  if (reply.rfind("HTTP/1.1 ", 0) != 0 || reply.size() < 12) return 0;
  return std::stoi(reply.substr(9, 3));
}

TEST(HttpFraming, PipelinedRequestsAreAllAnsweredInOrder) {
  TestServer server;
  const std::string tokenize_body = R"({"prompt": "Once upon a time"})";
  const std::string requests =
      "GET /health HTTP/1.1\r\nHost: t\r\n\r\n"
      "POST /tokenize HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: " +
      std::to_string(tokenize_body.size()) + "\r\n\r\n" + tokenize_body +
      "GET /v1/models HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
  const std::string reply = RawExchangeAll(server.port(), requests);
  ASSERT_EQ(CountOf(reply, "HTTP/1.1 200 OK\r\n"), 3u) << reply;
  // In order: health, then the tokens, then the model list.
  const size_t health = reply.find(R"({"status":"ok"})");
  const size_t tokens = reply.find(R"("tokens")");
  const size_t models = reply.find(R"("object":"list")");
  ASSERT_NE(health, std::string::npos) << reply;
  ASSERT_NE(tokens, std::string::npos) << reply;
  ASSERT_NE(models, std::string::npos) << reply;
  EXPECT_LT(health, tokens);
  EXPECT_LT(tokens, models);
}

TEST(HttpFraming, AmbiguousFramingsAreRefusedAndCloseTheConnection) {
  TestServer server;
  // Each carries a second request behind it that a server reading the
  // framing the other way would answer.
  const std::string smuggled = "GET /health HTTP/1.1\r\nHost: t\r\n\r\n";
  struct Case {
    std::string name;
    std::string head;
    int status;
  };
  const std::vector<Case> cases = {
      {"Content-Length and chunked", "Content-Length: 5\r\nTransfer-Encoding: chunked\r\n", 400},
      {"chunked and Content-Length", "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", 400},
      {"two different Content-Lengths", "Content-Length: 5\r\nContent-Length: 40\r\n", 400},
      {"a Content-Length list that disagrees", "Content-Length: 5, 40\r\n", 400},
      {"a Content-Length with a sign", "Content-Length: +5\r\n", 400},
      {"a coding other than chunked", "Transfer-Encoding: gzip, chunked\r\n", 501},
      {"a folded header", "Content-Length: 5\r\nX-Folded: a\r\n b\r\n", 400},
      {"white space before the colon", "Content-Length : 5\r\n", 400},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string reply =
        RawExchangeAll(server.port(), "POST /tokenize HTTP/1.1\r\nHost: t\r\n" + c.head + "\r\n0\r\n\r\n" + smuggled);
    EXPECT_EQ(StatusOf(reply), c.status) << reply;
    EXPECT_NE(reply.find("Connection: close"), std::string::npos) << reply;
    EXPECT_EQ(CountOf(reply, "HTTP/1.1 "), 1u) << "the request behind it was answered:\n" << reply;
    EXPECT_NE(reply.find(R"("error")"), std::string::npos) << reply;
  }
  // Equal duplicates are one length (RFC 9112 6.3): accepted.
  const std::string body = R"({"prompt": "x"})";
  const std::string same = std::to_string(body.size());
  const std::string reply = RawExchangeAll(
      server.port(), "POST /tokenize HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: " + same +
                         "\r\nContent-Length: " + same + "\r\n\r\n" + body);
  EXPECT_EQ(StatusOf(reply), 200) << reply;
}

TEST(HttpFraming, ChunkedBodiesAreReadAndTheirSizeLimited) {
  TestServer server;
  // A body in three chunks, with an extension and a trailer.
  const std::string chunked =
      "POST /tokenize HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
      "5;x=y\r\n{\"pro\r\n9\r\nmpt\": \"On\r\n3\r\nce\"\r\n1\r\n}\r\n0\r\nX-Trailer: 1\r\n\r\n";
  const std::string ok = RawExchangeAll(server.port(), chunked);
  EXPECT_EQ(StatusOf(ok), 200) << ok;
  EXPECT_NE(ok.find(R"("tokens")"), std::string::npos) << ok;
  // A chunk size line announcing 64 MiB (past the 4 MiB limit): 413 before any of it is sent.
  const std::string big = RawExchangeAll(
      server.port(), "POST /v1/completions HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n4000000\r\nabc");
  EXPECT_EQ(StatusOf(big), 413) << big;
  EXPECT_NE(big.find("request body is larger than"), std::string::npos) << big;
  // Many small chunks adding up past the limit: 413 too.
  ServerOptions options = TestServerOptions();
  options.max_body_bytes = 1000;
  TestServer small(TestEngineOptions(), options);
  std::string many = "POST /tokenize HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 30; ++i) many += "40\r\n" + std::string(64, 'a') + "\r\n";
  const std::string refused = RawExchangeAll(small.port(), many);
  EXPECT_EQ(StatusOf(refused), 413) << refused;
}

TEST(HttpFraming, OversizedHeadsGet431AndOversizedRequestLines414) {
  TestServer server;
  const std::string header = RawExchangeAll(
      server.port(), "GET /health HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(100 << 10, 'a') + "\r\n\r\n");
  EXPECT_EQ(StatusOf(header), 431) << header.substr(0, 300);
  std::string many = "GET /health HTTP/1.1\r\nHost: t\r\n";
  for (int i = 0; i < 200; ++i) many += "X-H" + std::to_string(i) + ": v\r\n";
  const std::string too_many = RawExchangeAll(server.port(), many + "\r\n");
  EXPECT_EQ(StatusOf(too_many), 431) << too_many.substr(0, 300);
  const std::string line = RawExchangeAll(server.port(), "GET /" + std::string(100 << 10, 'a') + " HTTP/1.1\r\n\r\n");
  EXPECT_EQ(StatusOf(line), 414) << line.substr(0, 300);
  // And the server goes on.
  auto health = Get(server.port(), "/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
}

TEST(HttpFraming, WrongMethodGets405WithAllow) {
  TestServer server;
  auto get = Get(server.port(), "/v1/completions");
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 405);
  EXPECT_EQ(get->get_header_value("Allow"), "POST");
  EXPECT_TRUE(json::parse(get->body).contains("error")) << get->body;
  auto post = Post(server.port(), "/v1/models", "{}");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 405);
  EXPECT_EQ(post->get_header_value("Allow"), "GET");
  const std::string del = RawExchangeAll(server.port(), "DELETE /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(StatusOf(del), 405) << del;
  EXPECT_NE(del.find("Allow: GET\r\n"), std::string::npos) << del;
  // A path no route knows is still 404.
  auto unknown = Get(server.port(), "/v2/nothing");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
}

TEST(HttpFraming, ExpectContinueGetsAContinueBeforeTheBody) {
  TestServer server;
  int fd = ConnectLoopback(server.port());
  ASSERT_GE(fd, 0);
  const std::string body = R"({"prompt": "Once"})";
  const std::string head = "POST /tokenize HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nConnection: close\r\n"
                           "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  ASSERT_EQ(::send(fd, head.data(), head.size(), MSG_NOSIGNAL), static_cast<ssize_t>(head.size()));
  std::string interim;
  char buf[256];
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (interim.find("\r\n\r\n") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    interim.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(interim, "HTTP/1.1 100 Continue\r\n\r\n");
  ASSERT_EQ(::send(fd, body.data(), body.size(), MSG_NOSIGNAL), static_cast<ssize_t>(body.size()));
  const std::string reply = ReadUntilClosed(fd, 30000);
  ::close(fd);
  EXPECT_EQ(StatusOf(reply), 200) << reply;
}

TEST(HttpFraming, AuthSchemeIsCaseInsensitiveAndMetricsNeedTheKey) {
  ServerOptions options = TestServerOptions();
  options.api_key = "sk-test-123";
  TestServer server(TestEngineOptions(), options);
  for (const std::string scheme : {"Bearer", "bearer", "BEARER", "bEaReR"}) {
    auto res = Get(server.port(), "/v1/models", {{"Authorization", scheme + " sk-test-123"}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 200) << scheme;
  }
  for (const std::string auth : {"Basic sk-test-123", "Bearersk-test-123", "bearer sk-test-12"}) {
    auto res = Get(server.port(), "/v1/models", {{"Authorization", auth}});
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 401) << auth;
  }
  auto open = Get(server.port(), "/metrics");
  ASSERT_TRUE(open);
  EXPECT_EQ(open->status, 401);
  auto keyed = Get(server.port(), "/metrics", {{"Authorization", "bearer sk-test-123"}});
  ASSERT_TRUE(keyed);
  EXPECT_EQ(keyed->status, 200);
  EXPECT_NE(keyed->body.find("ridge_kv_cache_blocks_capacity"), std::string::npos);

  options.metrics_need_key = false;
  TestServer public_metrics(TestEngineOptions(), options);
  auto scraped = Get(public_metrics.port(), "/metrics");
  ASSERT_TRUE(scraped);
  EXPECT_EQ(scraped->status, 200);
  auto models = Get(public_metrics.port(), "/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 401);
}

TEST(HttpFraming, ASeedPastInt64IsRefused) {
  TestServer server;
  for (const std::string seed : {"9223372036854775808", "18446744073709551615"}) {
    auto res = Post(server.port(), "/v1/completions", R"({"prompt": "Once", "max_tokens": 2, "seed": )" + seed + "}");
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, 400) << res->body;
    EXPECT_EQ(json::parse(res->body)["error"]["param"], "seed") << res->body;
  }
  auto ok = Post(server.port(), "/v1/completions", R"({"prompt": "Once", "max_tokens": 2, "seed": 9223372036854775807})");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

}  // namespace
}  // namespace ridge::server
