#pragma once
// Scratch directories for tests that write model-sized files: removed when
// the test process exits, so repeated runs do not fill the temp area.
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "test_paths.h"

namespace ridge::testing {

inline std::string TempDir(const std::string& name) {
  struct Dirs {
    std::vector<std::string> paths;
    ~Dirs() {
      std::error_code ec;
      for (const std::string& p : paths) std::filesystem::remove_all(p, ec);
    }
  };
  static Dirs dirs;
  dirs.paths.push_back(ScratchDir(name));
  return dirs.paths.back();
}

}  // namespace ridge::testing
