// Clients that drop mid-stream several at a time (issue 11: six streams,
// three reset at once while three keep reading, crashed the server in
// Engine::DropCancelled). In a loop: the server stays up, the readers that
// kept reading get complete streams, and every KV block comes back.
//
// The dropped streams are endless (LongContextModel, EndlessCompletion), so
// they are surely mid-stream when reset however fast or slow the machine;
// every wait has a bound far beyond what a loaded machine needs.
#include <gtest/gtest.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include <thread>

#include "server_test_util.h"

namespace ridge::server {
namespace {

using nlohmann::json;
using namespace testing;

// A streaming completion on a raw socket, so that the test decides when and
// how it ends: Reset() aborts the connection (RST), as a client that crashed.
class DroppedStream {
 public:
  DroppedStream(int port, const json& body) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return;
    const std::string payload = body.dump();
    const std::string request = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                "Content-Length: " + std::to_string(payload.size()) + "\r\n\r\n" + payload;
    sent_ = ::send(fd_, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size());
  }
  ~DroppedStream() {
    if (fd_ >= 0) ::close(fd_);
  }
  DroppedStream(const DroppedStream&) = delete;
  DroppedStream& operator=(const DroppedStream&) = delete;

  // Reads until `n` SSE data events arrived; false if the stream ended first.
  bool ReadEvents(int n) {
    if (!sent_) return false;
    char buf[4096];
    for (;;) {
      int events = 0;
      for (size_t at = got_.find("data: "); at != std::string::npos; at = got_.find("data: ", at + 1)) ++events;
      if (events >= n) return true;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 300000) <= 0) return false;
      const ssize_t r = ::recv(fd_, buf, sizeof(buf), 0);
      if (r <= 0) return false;
      got_.append(buf, static_cast<size_t>(r));
    }
  }

  void Reset() {
    linger hard{1, 0};  // close() then sends RST instead of FIN
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &hard, sizeof(hard));
    ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_ = -1;
  bool sent_ = false;
  std::string got_;
};

// A response read to its end by a thread (httplib::Result cannot wait in a vector).
struct Reply {
  bool ok = false;
  int status = 0;
  std::string body;
  std::string error;
};

Reply PostAndRead(int port, const std::string& body) {
  httplib::Result res = Post(port, "/v1/completions", body);
  if (!res) return Reply{false, 0, {}, httplib::to_string(res.error())};
  return Reply{true, res->status, res->body, {}};
}

double FinishedTotal(int port, const std::string& reason) {
  return ScrapeMetric(port, "ridge_request_finished_total", "finished_reason=\"" + reason + "\"");
}

TEST(HttpDisconnect, ConcurrentMidStreamResetsLeaveTheServerUpAndEveryBlockFree) {
  TestServer server(LongContextModel(), LongContextTokenizer(), LongEngineOptions());
  const int port = server.port();
  constexpr int kRounds = 5;
  constexpr int kPairs = 3;  // per round: 3 streams reset, 3 read to the end
  constexpr int kMaxTokens = 400;
  const json kept_body = {{"prompt", "Once upon a time"}, {"max_tokens", kMaxTokens}, {"ignore_eos", true},
                          {"temperature", 0}, {"stream", true}, {"stream_options", {{"include_usage", true}}}};
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    std::vector<std::unique_ptr<DroppedStream>> dropped;
    std::vector<std::thread> readers;
    std::vector<Reply> kept(kPairs);
    for (int i = 0; i < kPairs; ++i) {
      dropped.push_back(std::make_unique<DroppedStream>(port, EndlessCompletion(/*stream=*/true)));
      readers.emplace_back([&, i] { kept[static_cast<size_t>(i)] = PostAndRead(port, kept_body.dump()); });
    }
    // Every dropped stream is producing; then all of them go at once.
    for (auto& d : dropped) EXPECT_TRUE(d->ReadEvents(3));
    for (auto& d : dropped) d->Reset();
    for (auto& r : readers) r.join();
    for (int i = 0; i < kPairs; ++i) {
      const Reply& reply = kept[static_cast<size_t>(i)];
      ASSERT_TRUE(reply.ok) << "reader " << i << ": " << reply.error;
      EXPECT_EQ(reply.status, 200);
      StreamResult s = ParseStream(reply.body, /*chat=*/false);
      EXPECT_TRUE(s.done) << "reader " << i;
      EXPECT_EQ(s.finish_reason, "length") << "reader " << i;
      ASSERT_FALSE(s.usage.is_null()) << "reader " << i;
      EXPECT_EQ(s.usage["completion_tokens"], kMaxTokens) << "reader " << i;
    }
  }
  // Every dropped request was cancelled and gave its blocks back.
  EXPECT_TRUE(WaitFor([&] { return FinishedTotal(port, "abort") == kRounds * kPairs; }, 300000))
      << "aborted: " << FinishedTotal(port, "abort");
  EXPECT_EQ(FinishedTotal(port, "length"), kRounds * kPairs);
  EXPECT_EQ(ScrapeMetric(port, "ridge_kv_cache_blocks_used"), 0.0);
  EXPECT_EQ(ScrapeMetric(port, "ridge_num_requests_running"), 0.0);
  const EngineStats stats = server.server().engine().Stats();
  EXPECT_EQ(stats.kv.blocks_free, stats.kv.blocks_total);
  // And it keeps serving.
  auto res = Post(port, "/v1/completions", json{{"prompt", "The cat"}, {"max_tokens", 5}}.dump());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
}

}  // namespace
}  // namespace ridge::server
