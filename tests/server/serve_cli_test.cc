// `ridge serve` as a process: it prints its address and KV pool, answers
// requests, and exits 0 on SIGTERM and on SIGINT, also with a stream running.
// (stdout and stderr are read together.)
#include <gtest/gtest.h>

#include "serve_process.h"
#include "server_test_util.h"

namespace ridge::server {
namespace {

using nlohmann::json;
using namespace testing;

TEST(ServeCli, PrintsAddressAndKvPoolServesAndExitsZeroOnSigterm) {
  ServeProcess serve({"--model-name", "tiny"});
  const int port = serve.Port();
  ASSERT_GT(port, 0) << serve.output();
  EXPECT_NE(serve.output().find("KV pool"), std::string::npos) << serve.output();
  EXPECT_NE(serve.output().find("chat template: plain"), std::string::npos) << serve.output();
  auto res = Post(port, "/v1/chat/completions",
                  R"({"model": "tiny", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4})");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(json::parse(res->body)["model"], "tiny");
  EXPECT_EQ(serve.Stop(SIGTERM), 0) << serve.output();
  EXPECT_NE(serve.output().find("SIGTERM received"), std::string::npos) << serve.output();
}

TEST(ServeCli, SigintWithARunningStreamCancelsItAndExitsZero) {
  // A request that runs until cancelled (see LongContextModel).
  ServeProcess serve({"--shutdown-grace", "0", "--kv-tokens", std::to_string(kLongContext)}, LongContextModelPath());
  const int port = serve.Port();
  ASSERT_GT(port, 0) << serve.output();
  std::string body;
  std::thread client([&] {
    auto res = Post(port, "/v1/completions", EndlessCompletion(/*stream=*/true).dump());
    if (res) body = res->body;
  });
  ASSERT_TRUE(WaitFor([&] { return ScrapeMetric(port, "ridge_num_requests_running") == 1.0; }, 300000));
  EXPECT_EQ(serve.Stop(SIGINT), 0) << serve.output();
  client.join();
  // The stream was cancelled: an error event, then [DONE].
  const auto events = SseData(body);
  ASSERT_GE(events.size(), 2u);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_NE(events[events.size() - 2].find("\"error\""), std::string::npos) << events[events.size() - 2];
}

TEST(ServeCli, SigtermWithSlowAndIdleConnectionsExitsWithinTheGrace) {
  ServeProcess serve({"--shutdown-grace", "1"});
  const int port = serve.Port();
  ASSERT_GT(port, 0) << serve.output();
  // A connection sending half a request head, and an idle keep-alive one.
  const int slow = ConnectLoopback(port);
  ASSERT_GE(slow, 0);
  const std::string half = "POST /v1/completions HTTP/1.1\r\nHost: t\r\nX-Slow: a";
  ASSERT_EQ(::send(slow, half.data(), half.size(), MSG_NOSIGNAL), static_cast<ssize_t>(half.size()));
  const int idle = ConnectLoopback(port);
  ASSERT_GE(idle, 0);
  const std::string request = "GET /health HTTP/1.1\r\nHost: t\r\n\r\n";
  ASSERT_EQ(::send(idle, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  ASSERT_TRUE(WaitFor([&] { return ScrapeMetric(port, "ridge_num_requests_running") == 0.0; }));
  const auto start = std::chrono::steady_clock::now();
  // The grace (1 s) and 4 s for the process to wind down; before, the slow
  // connection kept it alive until killed, the idle one ~5 s past the grace.
  EXPECT_EQ(serve.Stop(SIGTERM, 5000), 0) << serve.output();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 5.0);
  ::close(slow);
  ::close(idle);
}

TEST(ServeCli, BadFlagsFailClearly) {
  ServeProcess serve({"--kv-type", "q3_weird"});
  EXPECT_NE(serve.Stop(0), 0);  // signal 0 sends nothing: just wait for the exit
  EXPECT_NE(serve.output().find("--kv-type: unknown type 'q3_weird'"), std::string::npos) << serve.output();
  EXPECT_EQ(serve.output().find("listening"), std::string::npos);
}

}  // namespace
}  // namespace ridge::server
