// HttpFront on its own, with a handler of the test's: what it counts as a
// response in flight (what OpenAiServer::Shutdown waits for).
#include "ridge/server/http_front.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>

#include "server_test_util.h"

namespace ridge::server {
namespace {

using testing::ConnectLoopback;
using testing::WaitFor;

// 64 MiB: more than a loopback socket's send and receive buffers hold, so a
// client that reads nothing holds the worker's write.
constexpr size_t kBodyBytes = size_t{64} << 20;

TEST(HttpFront, AResponseIsInFlightFromBeforeItsHandlerToItsLastByte) {
  std::atomic<bool> handler_running{false}, release_handler{false}, handler_returning{false};
  HttpFrontOptions options;
  options.worker_threads = 2;
  HttpFront front(
      options,
      [&](httplib::Request&, httplib::Response& res) {
        handler_running = true;
        while (!release_handler) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        res.set_content(std::string(kBodyBytes, 'x'), "text/plain");
        handler_returning = true;
      },
      [](int status, const std::string& message, httplib::Response& res) {
        res.status = status;
        res.set_content(message, "text/plain");
      });
  const int port = front.Bind();
  front.Start();
  EXPECT_EQ(front.responses_in_flight(), 0);

  const int fd = ConnectLoopback(port);
  ASSERT_GE(fd, 0);
  const std::string request = "GET /big HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::send(fd, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  ASSERT_TRUE(WaitFor([&] { return handler_running.load(); }));
  EXPECT_EQ(front.responses_in_flight(), 1);  // the handler runs

  release_handler = true;
  ASSERT_TRUE(WaitFor([&] { return handler_returning.load(); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(front.responses_in_flight(), 1);  // the handler is done, its answer stalled on the client

  // Read the whole answer: head, then Content-Length bytes.
  std::string got;
  char buf[1 << 16];
  size_t head_end = std::string::npos;
  while (head_end == std::string::npos || got.size() < head_end + kBodyBytes) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    ASSERT_GT(n, 0) << "the answer was cut after " << got.size() << " bytes";
    got.append(buf, static_cast<size_t>(n));
    if (head_end == std::string::npos && (head_end = got.find("\r\n\r\n")) != std::string::npos) {
      head_end += 4;
      ASSERT_NE(got.find("Content-Length: " + std::to_string(kBodyBytes)), std::string::npos)
          << got.substr(0, head_end);
    }
  }
  EXPECT_EQ(got.size(), head_end + kBodyBytes);
  EXPECT_TRUE(WaitFor([&] { return front.responses_in_flight() == 0; }));
  ::close(fd);
  front.Stop();
}

}  // namespace
}  // namespace ridge::server
