// The server under concurrent load and when clients or the server go away:
// 32 streaming clients each get exactly their single-request greedy output,
// a client that hangs up (streaming or not) has its request cancelled and
// its KV blocks freed (seen through /metrics), a full queue answers 429 with
// Retry-After, and a shutdown lets running and queued requests finish while
// refusing new ones, or cancels what runs when there is no grace.
//
// Tests that must act while a request runs use LongContextModel() and
// EndlessCompletion(): such a request runs until cancelled, so nothing here
// depends on how fast the machine is.
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

// Opens a raw connection, sends a completion request, reads until `n_events`
// SSE events arrived (0: returns right after sending), and returns the
// socket, still open; -1 if it cannot connect.
int OpenRequest(int port, const json& body, int n_events) {
  const int fd = ConnectLoopback(port);
  if (fd < 0) return -1;
  const std::string payload = body.dump();
  const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                              "Content-Length: " + std::to_string(payload.size()) + "\r\n\r\n" + payload;
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string got;
  char buf[4096];
  for (;;) {
    size_t events = 0;
    for (size_t at = got.find("data: "); at != std::string::npos; at = got.find("data: ", at + 1)) ++events;
    if (events >= static_cast<size_t>(n_events)) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 300000) <= 0) break;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    got.append(buf, static_cast<size_t>(n));
  }
  return fd;
}

double Finished(int port, const std::string& reason) {
  return ScrapeMetric(port, "ridge_request_finished_total", "finished_reason=\"" + reason + "\"");
}

TEST(HttpLoad, ThirtyTwoConcurrentStreamsEqualTheirSingleRequestOutputs) {
  TestServer server;
  const std::vector<std::string> seeds = {"Once upon a time", "The cat", "Tom and Lily went to the park",
                                          "One day", "Lily had a red ball", "The sun", "A little bird",
                                          "Ben and his mom went to the store"};
  struct Job {
    json body;
    std::string alone;
    StreamResult got;
  };
  std::vector<Job> jobs(32);
  for (size_t i = 0; i < jobs.size(); ++i) {
    // Varied prompts (some sharing prefixes, for the prefix cache) and lengths.
    std::string prompt = seeds[i % seeds.size()];
    if (i >= seeds.size()) prompt += std::string(i / seeds.size(), '!') + " and then";
    jobs[i].body = CompletionBody(prompt, 20 + static_cast<int>(i % 5) * 10, true);
  }
  // One at a time first: the reference.
  for (Job& job : jobs) {
    auto res = Post(server.port(), "/v1/completions", job.body.dump());
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    ASSERT_EQ(res->status, 200) << res->body;
    StreamResult alone = ParseStream(res->body, false);
    ASSERT_TRUE(alone.done);
    job.alone = alone.text;
  }
  const double finished_before = Finished(server.port(), "length") + Finished(server.port(), "stop");
  // Then all 32 at once.
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (Job& job : jobs) {
    threads.emplace_back([&, p = &job] {
      ++ready;
      while (ready.load() < 32) std::this_thread::yield();
      auto res = Post(server.port(), "/v1/completions", p->body.dump());
      if (res && res->status == 200) p->got = ParseStream(res->body, false);
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < jobs.size(); ++i) {
    EXPECT_TRUE(jobs[i].got.done) << i;
    EXPECT_FALSE(jobs[i].got.finish_reason.empty()) << i;
    EXPECT_EQ(jobs[i].got.text, jobs[i].alone) << jobs[i].body.dump();
  }
  // Afterwards no KV block is in use, nothing runs or waits.
  const EngineStats stats = server.server().engine().Stats();
  EXPECT_EQ(stats.running, 0);
  EXPECT_EQ(stats.waiting, 0);
  EXPECT_EQ(stats.kv.blocks_used, 0);
  EXPECT_EQ(stats.kv.sequences, 0);
  EXPECT_EQ(ScrapeMetric(server.port(), "ridge_kv_cache_blocks_used"), 0.0);
  EXPECT_EQ(ScrapeMetric(server.port(), "ridge_kv_cache_usage_ratio"), 0.0);
  EXPECT_EQ(ScrapeMetric(server.port(), "ridge_num_requests_running"), 0.0);
  EXPECT_EQ(Finished(server.port(), "length") + Finished(server.port(), "stop") - finished_before, 32.0);
}

TEST(HttpLoad, ClientThatHangsUpMidStreamIsCancelledAndItsBlocksFreed) {
  TestServer server(LongContextModel(), LongContextTokenizer(), LongEngineOptions());
  int fd = OpenRequest(server.port(), EndlessCompletion(/*stream=*/true), 3);
  ASSERT_GE(fd, 0);
  // While it streams, it holds KV blocks.
  EXPECT_GT(ScrapeMetric(server.port(), "ridge_kv_cache_blocks_used"), 0.0);
  EXPECT_EQ(ScrapeMetric(server.port(), "ridge_num_requests_running"), 1.0);
  ::close(fd);
  // Cancelled, and every block back.
  EXPECT_TRUE(WaitFor([&] { return Finished(server.port(), "abort") == 1.0; }, 300000));
  EXPECT_EQ(ScrapeMetric(server.port(), "ridge_kv_cache_blocks_used"), 0.0);
  EXPECT_EQ(ScrapeMetric(server.port(), "ridge_kv_cache_usage_ratio"), 0.0);
  EXPECT_EQ(ScrapeMetric(server.port(), "ridge_num_requests_running"), 0.0);
  EXPECT_EQ(Finished(server.port(), "length"), 0.0);
  // And the server keeps serving.
  auto res = Post(server.port(), "/v1/completions", CompletionBody("The cat", 5, false).dump());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

TEST(HttpLoad, NonStreamingClientThatHangsUpIsCancelledToo) {
  TestServer server(LongContextModel(), LongContextTokenizer(), LongEngineOptions());
  int fd = OpenRequest(server.port(), EndlessCompletion(/*stream=*/false), 0);
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(WaitFor([&] { return server.server().engine().Stats().running == 1; }, 300000));
  ::close(fd);
  // The handler, waiting for the answer, sees the connection closed (RequestPeerGone).
  EXPECT_TRUE(WaitFor([&] { return Finished(server.port(), "abort") == 1.0; }, 300000));
  EXPECT_EQ(ScrapeMetric(server.port(), "ridge_kv_cache_blocks_used"), 0.0);
}

TEST(HttpLoad, FullQueueAnswers429WithRetryAfter) {
  EngineOptions engine = LongEngineOptions();
  engine.max_running = 1;
  engine.max_waiting = 1;
  ServerOptions options = TestServerOptions();
  options.retry_after_s = 3;
  TestServer server(LongContextModel(), LongContextTokenizer(), engine, options);
  int running = OpenRequest(server.port(), EndlessCompletion(true), 1);  // runs
  ASSERT_GE(running, 0);
  ASSERT_TRUE(WaitFor([&] { return server.server().engine().Stats().running == 1; }, 300000));
  int waiting = OpenRequest(server.port(), EndlessCompletion(true), 0);  // waits
  ASSERT_GE(waiting, 0);
  ASSERT_TRUE(WaitFor([&] { return server.server().engine().Stats().waiting == 1; }, 300000));
  auto res = Post(server.port(), "/v1/completions", CompletionBody("The cat", 4, false).dump());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 429);
  EXPECT_EQ(res->get_header_value("Retry-After"), "3");
  json error = json::parse(res->body)["error"];
  EXPECT_EQ(error["code"], "queue_full");
  EXPECT_TRUE(error["message"].is_string());
  // Once both hang up, requests are accepted again.
  ::close(running);
  ::close(waiting);
  ASSERT_TRUE(WaitFor([&] { return Finished(server.port(), "abort") == 2.0; }, 300000));
  auto later = Post(server.port(), "/v1/completions", CompletionBody("The cat", 4, false).dump());
  ASSERT_TRUE(later);
  EXPECT_EQ(later->status, 200);
}

TEST(HttpLoad, ShutdownRefusesNewWorkAndLetsQueuedRequestsFinish) {
  EngineOptions engine = LongEngineOptions();
  engine.max_running = 1;
  TestServer server(LongContextModel(), LongContextTokenizer(), engine);
  // A runs (until its client hangs up); B waits behind it.
  int a = OpenRequest(server.port(), EndlessCompletion(true), 1);
  ASSERT_GE(a, 0);
  ASSERT_TRUE(WaitFor([&] { return server.server().engine().Stats().running == 1; }, 300000));
  StreamResult b;
  std::thread b_client([&] {
    auto res = Post(server.port(), "/v1/completions", CompletionBody("The cat", 20, true).dump());
    if (res && res->status == 200) b = ParseStream(res->body, false);
  });
  ASSERT_TRUE(WaitFor([&] { return server.server().engine().Stats().waiting == 1; }, 300000));
  std::thread stopper([&] { server.server().Shutdown(std::chrono::minutes(10)); });
  // Draining: health and new requests answer 503 (A keeps the server up).
  EXPECT_TRUE(WaitFor([&] {
    auto h = Get(server.port(), "/health");
    return h && h->status == 503;
  }, 300000));
  auto refused = Post(server.port(), "/v1/completions", CompletionBody("The cat", 4, false).dump());
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_EQ(json::parse(refused->body)["error"]["type"], "server_error");
  // A's client leaves; B, accepted before the shutdown, runs to its end.
  ::close(a);
  b_client.join();
  stopper.join();
  EXPECT_TRUE(b.done);
  EXPECT_EQ(b.finish_reason, "length");
  EXPECT_EQ(server.server().engine().Stats().kv.blocks_used, 0);
}

// A whole (non-streaming) answer finished within the grace reaches its client
// in full: the shutdown waits for the front to write it, not only for the
// generation to end.
TEST(HttpLoad, ShutdownWithGraceAnswersARunningWholeRequestInFull) {
  TestServer server(LongContextModel(), LongContextTokenizer(), LongEngineOptions());
  constexpr int kTokens = 4000;  // long enough to be seen running on a fast machine
  int status = 0;
  json body;
  std::thread client([&] {
    const json request{{"prompt", "Once upon a time"},
                       {"max_tokens", kTokens},
                       {"ignore_eos", true},
                       {"temperature", 0},
                       {"stream", false}};
    auto res = Post(server.port(), "/v1/completions", request.dump());
    if (res) {
      status = res->status;
      body = json::parse(res->body, nullptr, /*allow_exceptions=*/false);
    }
  });
  ASSERT_TRUE(WaitFor([&] { return server.server().engine().Stats().running == 1; }, 300000));
  server.server().Shutdown(std::chrono::minutes(10));
  client.join();
  EXPECT_EQ(status, 200);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"]["completion_tokens"], kTokens);
}

TEST(HttpLoad, ShutdownWithoutGraceCancelsRunningStreams) {
  TestServer server(LongContextModel(), LongContextTokenizer(), LongEngineOptions());
  std::string raw;
  bool answered = false;
  std::thread client([&] {
    auto res = Post(server.port(), "/v1/completions", EndlessCompletion(true).dump());
    if (res) {
      answered = true;
      raw = res->body;
    }
  });
  ASSERT_TRUE(WaitFor([&] { return server.server().engine().Stats().running == 1; }, 300000));
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
