#include "test_paths.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>
#include <unistd.h>

namespace ridge::testing {

std::string SharedDir() {
  if (const char* env = std::getenv("RIDGE_SHARED_DIR"); env && *env) return env;
  return RIDGE_SHARED_DIR_DEFAULT;
}

std::string SourceDir() { return RIDGE_SOURCE_DIR; }

namespace {
// Scratch directories live until the test process exits, then go.
struct ScratchRegistry {
  std::mutex mutex;
  std::vector<std::filesystem::path> dirs;
  ~ScratchRegistry() {
    std::error_code ignored;
    for (const auto& d : dirs) std::filesystem::remove_all(d, ignored);
  }
};
ScratchRegistry& Registry() {
  static ScratchRegistry registry;
  return registry;
}
}  // namespace

std::string ScratchDir(const std::string& name) {
  static std::atomic<int> counter{0};
  auto dir = std::filesystem::temp_directory_path() /
             ("ridge-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::lock_guard<std::mutex> lock(Registry().mutex);
  Registry().dirs.push_back(dir);
  return dir.string();
}

std::string RidgeBinary() { return RIDGE_BINARY; }

}  // namespace ridge::testing
