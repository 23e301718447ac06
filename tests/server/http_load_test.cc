// The server under concurrent load and when clients or the server go away:
// 32 streaming clients each get exactly their single-request greedy output,
// a client that hangs up mid-stream has its request cancelled and its KV
// blocks freed (seen through /metrics), a full queue answers 429 with
// Retry-After, and a shutdown finishes or cancels what runs.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "server_test_util.h"

namespace ridge::server {
namespace {

using nlohmann::json;
using namespace testing;

json CompletionBody(const std::string& prompt, int max_tokens, bool stream) {
  return json{{"prompt", prompt}, {"max_tokens", max_tokens}, {"temperature", 0}, {"stream", stream}};
}

// Opens a raw connection, sends a streaming request, reads until `n_events`
// SSE events arrived, and returns the socket (still open).
int OpenStream(int port, const json& body, int n_events) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return -1;
  const std::string payload = body.dump();
  const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                              "Content-Length: " + std::to_string(payload.size()) + "\r\n\r\n" + payload;
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string got;
  char buf[4096];
  while (true) {
    size_t events = 0;
    for (size_t at = got.find("data: "); at != std::string::npos; at = got.find("data: ", at + 1)) ++events;
    if (events >= static_cast<size_t>(n_events)) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 30000) <= 0) break;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return fd;
}

TEST(HttpLoad, ClientThatHangsUpMidStreamIsCancelledAndItsBlocksFreed) {
  TestServer server;
  EXPECT_EQ(ScrapeMetric(server.port(), "ridge_request_finished_total", "abort"), 0.0);
  // A long generation (it never stops early), read for a few events only.
  json body = CompletionBody("Once upon a time", 480, true);
  body["ignore_eos"] = true;
  int fd = OpenStream(server.port(), body, 3);
  ASSERT_GE(fd, 0);
  // While it streams, it holds KV blocks.
  EXPECT_GT(ScrapeMetric(server.port(), "ridge_kv_cache_blocks_used"), 0.0);
  ::close(fd);
  // Cancelled (not finished by length) and every block back.
  EXPECT_TRUE(WaitFor([&] { return ScrapeMetric(server.port(), "ridge_request_finished_total", "abort") == 1.0; }));
  EXPECT_TRUE(WaitFor([&] { return ScrapeMetric(server.port(), "ridge_kv_cache_blocks_used") == 0.0; }));
  EXPECT_EQ(ScrapeMetric(server.port(), "ridge_kv_cache_usage_ratio"), 0.0);
  EXPECT_EQ(ScrapeMetric(server.port(), "ridge_num_requests_running"), 0.0);
  EXPECT_EQ(ScrapeMetric(server.port(), "ridge_request_finished_total", "length"), 0.0);
  // The aborted request did not run to its end.
  EXPECT_LT(ScrapeMetric(server.port(), "ridge_generation_tokens_total"), 480.0);
  // And the server keeps serving.
  auto res = Post(server.port(), "/v1/completions", CompletionBody("The cat", 5, false).dump());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(HttpLoad, FullQueueAnswers429WithRetryAfter) {
  EngineOptions engine = TestEngineOptions();
  engine.max_running = 1;
  engine.max_waiting = 1;
  ServerOptions options = TestServerOptions();
  options.retry_after_s = 3;
  TestServer server(engine, options);
  json body = CompletionBody("Once upon a time", 480, true);
  body["ignore_eos"] = true;
  int running = OpenStream(server.port(), body, 2);  // runs
  ASSERT_GE(running, 0);
  ASSERT_TRUE(WaitFor([&] { return server.server().engine().Stats().running == 1; }));
  std::thread waiting_client([&] { Post(server.port(), "/v1/completions", body.dump()); });  // waits
  ASSERT_TRUE(WaitFor([&] { return server.server().engine().Stats().waiting == 1; }));
  auto res = Post(server.port(), "/v1/completions", CompletionBody("The cat", 4, false).dump());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 429);
  EXPECT_EQ(res->get_header_value("Retry-After"), "3");
  json error = json::parse(res->body)["error"];
  EXPECT_EQ(error["code"], "queue_full");
  EXPECT_TRUE(error["message"].is_string());
  ::close(running);
  waiting_client.join();
  // Once the queue drains, requests are accepted again.
  ASSERT_TRUE(WaitFor([&] { return server.server().engine().Stats().waiting == 0; }));
  auto later = Post(server.port(), "/v1/completions", CompletionBody("The cat", 4, false).dump());
  ASSERT_TRUE(later);
  EXPECT_EQ(later->status, 200);
}

TEST(HttpLoad, ShutdownWithoutGraceCancelsRunningStreams) {
  TestServer server;
  json body = CompletionBody("Once upon a time", 480, true);
  body["ignore_eos"] = true;
  std::string raw;
  bool answered = false;
  std::thread client([&] {
    auto res = Post(server.port(), "/v1/completions", body.dump());
    if (res) {
      answered = true;
      raw = res->body;
    }
  });
  ASSERT_TRUE(WaitFor([&] { return server.server().engine().Stats().running == 1; }));
  server.server().Shutdown(std::chrono::milliseconds(0));
  client.join();
  // The stream ended with an error event and [DONE], not mid-air.
  ASSERT_TRUE(answered);
  const auto events = SseData(raw);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_NE(events[events.size() - 2].find("\"error\""), std::string::npos) << events[events.size() - 2];
  EXPECT_EQ(server.server().engine().Stats().kv.blocks_used, 0);
}

}  // namespace
}  // namespace ridge::server
