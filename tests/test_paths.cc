#include "test_paths.h"

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

namespace ridge::testing {

std::string SharedDir() {
  if (const char* env = std::getenv("RIDGE_SHARED_DIR"); env && *env) return env;
  return RIDGE_SHARED_DIR_DEFAULT;
}

std::string ScratchDir(const std::string& name) {
  static std::atomic<int> counter{0};
  auto dir = std::filesystem::temp_directory_path() /
             ("ridge-test-" + std::to_string(getpid()) + "-" + std::to_string(counter++) + "-" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

std::string RidgeBinary() { return RIDGE_BINARY; }

}  // namespace ridge::testing
