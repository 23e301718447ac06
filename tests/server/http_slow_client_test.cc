// Slow and idle clients (http_front.h): a drip of header bytes from more
// connections than there are HTTP workers does not keep normal requests from
// being answered; connections past the cap are refused with 503 at once; the
// whole-request deadline cuts a drip however steady (408); idle keep-alive
// connections are closed; a shutdown closes slow and idle connections at
// once instead of waiting for them.
#include <gtest/gtest.h>

#include <atomic>

#include "server_test_util.h"

namespace ridge::server {
namespace {

using nlohmann::json;
using namespace testing;
using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// Connections that send a request head one byte at a time, every
// `interval`, until stopped or the server closes them.
class Drip {
 public:
  Drip(int port, int n, std::chrono::milliseconds interval) {
    for (int i = 0; i < n; ++i) fds_.push_back(ConnectLoopback(port));
    thread_ = std::thread([this, interval] {
      const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: t\r\nX-Slow: ";
      for (size_t at = 0; !stop_; ++at) {
        for (int fd : fds_) {
          const char byte = at < head.size() ? head[at] : 'a';
          ::send(fd, &byte, 1, MSG_NOSIGNAL | MSG_DONTWAIT);  // fails once the server closed it: fine
        }
        std::this_thread::sleep_for(interval);
      }
    });
  }
  ~Drip() {
    Stop();
    for (int fd : fds_)
      if (fd >= 0) ::close(fd);
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  const std::vector<int>& fds() const { return fds_; }

 private:
  std::vector<int> fds_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

TEST(HttpSlowClients, ADripFromMoreConnectionsThanWorkersLeavesOthersServedAndIsCut) {
  ServerOptions options = TestServerOptions();
  options.http_threads = 4;
  options.max_connections = 40;
  options.request_timeout = std::chrono::seconds(15);
  TestServer server(TestEngineOptions(), options);
  const Clock::time_point drip_start = Clock::now();
  Drip drip(server.port(), 32, std::chrono::milliseconds(250));  // 8 times the workers
  for (int fd : drip.fds()) ASSERT_GE(fd, 0);
  ASSERT_TRUE(WaitFor([&] { return server.server().open_connections() >= 32; }, 30000));

  // While the drip goes on, normal requests are answered promptly (with
  // cpp-httplib's thread per connection, none was).
  for (int i = 0; i < 3; ++i) {
    const Clock::time_point start = Clock::now();
    auto health = Get(server.port(), "/health");
    ASSERT_TRUE(health) << httplib::to_string(health.error());
    EXPECT_EQ(health->status, 200);
    auto completion = Post(server.port(), "/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 4})");
    ASSERT_TRUE(completion) << httplib::to_string(completion.error());
    EXPECT_EQ(completion->status, 200) << completion->body;
    EXPECT_LT(SecondsSince(start), 5.0) << "normal requests must not wait behind slow clients";
  }

  // Over the cap (40, with 32 dripping): the connections beyond are refused with 503 and closed.
  ASSERT_TRUE(WaitFor([&] { return server.server().open_connections() == 32; }, 30000));
  ASSERT_LT(SecondsSince(drip_start), 10.0) << "this machine is too slow for the test's premise (the drip still "
                                               "going on): raise request_timeout";
  std::vector<int> extra;
  for (int i = 0; i < 12; ++i) extra.push_back(ConnectLoopback(server.port()));
  std::this_thread::sleep_for(std::chrono::seconds(2));  // the refusals' time to arrive
  int refused = 0, silent = 0;
  for (int fd : extra) {
    ASSERT_GE(fd, 0);
    bool closed = false;
    const std::string reply = ReadUntilClosed(fd, 200, &closed);
    if (reply.rfind("HTTP/1.1 503", 0) == 0) {
      ++refused;
      EXPECT_TRUE(closed);
      EXPECT_NE(reply.find("connections open, its limit"), std::string::npos) << reply;
    } else {
      EXPECT_EQ(reply, "");
      ++silent;
    }
    ::close(fd);
  }
  EXPECT_EQ(silent, 8);  // the 8 free places
  EXPECT_EQ(refused, 4);

  // The whole-request deadline cuts every dripping connection with a 408,
  // though each sends a byte every 250 ms.
  for (int fd : drip.fds()) {
    bool closed = false;
    const std::string reply = ReadUntilClosed(fd, 60000, &closed);
    EXPECT_TRUE(closed);
    EXPECT_EQ(reply.rfind("HTTP/1.1 408", 0), 0u) << reply;
  }
  EXPECT_GE(SecondsSince(drip_start), 14.0);  // not before the deadline (15 s from accept)
  drip.Stop();
  auto health = Get(server.port(), "/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(server.server().engine().Stats().kv.blocks_used, 0);
}

TEST(HttpSlowClients, IdleKeepAliveConnectionsAreClosed) {
  ServerOptions options = TestServerOptions();
  options.keep_alive_timeout = std::chrono::seconds(1);
  TestServer server(TestEngineOptions(), options);
  int fd = ConnectLoopback(server.port());
  ASSERT_GE(fd, 0);
  const std::string request = "GET /health HTTP/1.1\r\nHost: t\r\n\r\n";
  ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  const Clock::time_point start = Clock::now();
  bool closed = false;
  const std::string reply = ReadUntilClosed(fd, 60000, &closed);
  ::close(fd);
  EXPECT_EQ(reply.rfind("HTTP/1.1 200", 0), 0u) << reply;
  EXPECT_NE(reply.find("Connection: keep-alive"), std::string::npos) << reply;
  EXPECT_TRUE(closed);
  EXPECT_GE(SecondsSince(start), 0.5);
  EXPECT_TRUE(WaitFor([&] { return server.server().open_connections() == 0; }));
}

TEST(HttpSlowClients, ShutdownClosesSlowAndIdleConnectionsAtOnce) {
  // A stream that runs until cancelled holds the shutdown for its whole
  // grace; the slow and idle connections must be gone before it ends.
  TestServer server(LongContextModel(), LongContextTokenizer(), LongEngineOptions());
  const int port = server.port();
  std::thread stream([port] { Post(port, "/v1/completions", EndlessCompletion(/*stream=*/true).dump()); });
  ASSERT_TRUE(WaitFor([&] { return server.server().engine().Stats().running == 1; }, 300000));
  Drip drip(port, 3, std::chrono::milliseconds(200));
  int idle = ConnectLoopback(port);
  ASSERT_GE(idle, 0);
  const std::string request = "GET /health HTTP/1.1\r\nHost: t\r\n\r\n";
  ASSERT_EQ(::send(idle, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  ASSERT_TRUE(WaitFor([&] { return server.server().open_connections() >= 5; }, 30000));

  std::atomic<bool> shutdown_returned{false};
  std::thread stopper([&] {
    server.server().Shutdown(std::chrono::seconds(6));
    shutdown_returned = true;
  });
  bool closed = false;
  ReadUntilClosed(idle, 60000, &closed);
  EXPECT_TRUE(closed);
  for (int fd : drip.fds()) {
    ReadUntilClosed(fd, 60000, &closed);
    EXPECT_TRUE(closed);
  }
  EXPECT_FALSE(shutdown_returned) << "slow and idle connections were closed only at the end of the grace";
  stopper.join();
  stream.join();
  ::close(idle);
}

}  // namespace
}  // namespace ridge::server
