#pragma once
// `ridge serve` as a child process: its stdout and stderr read together, its
// port from the "listening on" line, and a signal to stop it.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "stories_model.h"
#include "test_paths.h"

namespace ridge::server::testing {

class ServeProcess {
 public:
  // `model` "" passes no -m (the model comes from RIDGE_MODEL or a --config file).
  // `launcher` (an absolute path first) runs ridge, e.g. {"/usr/bin/mpirun", "-np", "2"}.
  explicit ServeProcess(std::vector<std::string> extra_args,
                        const std::string& model = ridge::testing::Stories260kGguf(),
                        std::vector<std::string> launcher = {}) {
    launched_ = !launcher.empty();
    std::vector<std::string> args = std::move(launcher);
    args.insert(args.end(), {ridge::testing::RidgeBinary(), "serve", "--port", "0", "--threads", "2", "--kv-memory",
                             "16MiB"});
    if (!model.empty()) args.insert(args.end(), {"-m", model});
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
    // A launcher killed outright could leave its children running: it gets to end them first.
    if (pid_ > 0 && !exited_ && launched_) Stop(SIGTERM, 20000);
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
    return WaitForExit(timeout_ms);
  }
  // The exit status (128 + the signal's number if one ended it), or -1 if it
  // runs on past the timeout.
  int WaitForExit(int timeout_ms) {
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
  bool launched_ = false;
  std::string output_;
};

}  // namespace ridge::server::testing
