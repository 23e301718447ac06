// `ridge serve` as a process: it prints its address and KV pool, answers
// requests, and exits 0 on SIGTERM and on SIGINT, also with a stream running.
// (stdout and stderr are read together.)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <cctype>

#include "server_test_util.h"
#include "test_paths.h"

namespace ridge::server {
namespace {

using nlohmann::json;
using namespace testing;

class ServeProcess {
 public:
  explicit ServeProcess(std::vector<std::string> extra_args,
                        const std::string& model = ridge::testing::Stories260kGguf()) {
    std::vector<std::string> args = {ridge::testing::RidgeBinary(), "serve", "-m", model, "--port", "0",
                                     "--threads", "2", "--kv-memory", "16MiB"};
    args.insert(args.end(), extra_args.begin(), extra_args.end());
    int out[2];
    if (::pipe(out) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], 1);
      ::dup2(out[1], 2);
      ::close(out[0]);
      ::close(out[1]);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(out[1]);
    out_fd_ = out[0];
  }
  ~ServeProcess() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (out_fd_ >= 0) ::close(out_fd_);
  }

  // Reads stdout until `needle` appears at or after `from`; returns the text read so far.
  std::string ReadUntil(const std::string& needle, int timeout_ms = 300000, size_t from = 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    char buf[1024];
    while (output_.find(needle, from) == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd p{out_fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      ssize_t n = ::read(out_fd_, buf, sizeof(buf));
      if (n <= 0) break;
      output_.append(buf, static_cast<size_t>(n));
    }
    return output_;
  }

  // The port from "listening on http://127.0.0.1:PORT", or -1.
  int Port() {
    const std::string prefix = "listening on http://127.0.0.1:";
    ReadUntil(prefix);
    const size_t at = output_.find(prefix);
    if (at == std::string::npos) return -1;
    ReadUntil("\n", 300000, at);  // the whole line
    int port = 0;
    size_t i = at + prefix.size();
    for (; i < output_.size() && std::isdigit(static_cast<unsigned char>(output_[i])); ++i)
      port = port * 10 + (output_[i] - '0');
    return i > at + prefix.size() ? port : -1;
  }

  // Sends the signal and waits for the exit status (-1 on timeout).
  int Stop(int signal_number, int timeout_ms = 300000) {
    ::kill(pid_, signal_number);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        ReadUntil("\x01", 200);  // drain what is left
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }
  const std::string& output() const { return output_; }

 private:
  pid_t pid_ = -1;
  int out_fd_ = -1;
  bool exited_ = false;
  std::string output_;
};

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
  EXPECT_EQ(serve.Stop(0), 1);  // signal 0 sends nothing: just wait for the exit
  EXPECT_NE(serve.output().find("--kv-type: unknown type 'q3_weird'"), std::string::npos) << serve.output();
  EXPECT_EQ(serve.output().find("listening"), std::string::npos);
}

}  // namespace
}  // namespace ridge::server
