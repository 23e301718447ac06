#pragma once
// A one-line progress bar on stderr for commands that write gigabytes
// (gen-model, quantize): redrawn in place with '\r' when the shown
// percentage changes, finished with a newline.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace ridge::app {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label) : label_(std::move(label)), start_(std::chrono::steady_clock::now()) {}
  ~ProgressBar() {
    if (drawn_ && !finished_) std::fputc('\n', stderr);
  }

  void Update(uint64_t done_bytes, uint64_t total_bytes) {
    const int percent = total_bytes == 0 ? 100 : static_cast<int>(done_bytes * 100 / total_bytes);
    if (percent == last_percent_) return;
    last_percent_ = percent;
    constexpr int kWidth = 30;
    const int filled = percent * kWidth / 100;
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const double done_mib = static_cast<double>(done_bytes) / (1024.0 * 1024.0);
    const double total_mib = static_cast<double>(total_bytes) / (1024.0 * 1024.0);
    std::fprintf(stderr, "\r%s [%s%s] %3d%%  %.1f / %.1f MiB  %.0f MiB/s", label_.c_str(),
                 std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(kWidth - filled), '.').c_str(), percent, done_mib, total_mib,
                 seconds > 0.0 ? done_mib / seconds : 0.0);
    std::fflush(stderr);
    drawn_ = true;
    if (percent == 100) Finish();
  }

  void Finish() {
    if (drawn_ && !finished_) std::fputc('\n', stderr);
    finished_ = true;
  }

 private:
  std::string label_;
  std::chrono::steady_clock::time_point start_;
  int last_percent_ = -1;
  bool drawn_ = false;
  bool finished_ = false;
};

}  // namespace ridge::app
