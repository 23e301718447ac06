#pragma once
// Expected failures (bad files, bad flags, bad requests) are thrown as
// ridge::Error with a message that names what was wrong and where.
// Broken invariants are bugs: RIDGE_CHECK aborts loudly.
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace ridge {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

template <typename... Args>
[[noreturn]] void Fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

[[noreturn]] inline void CheckFailed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "ridge: internal check failed: %s at %s:%d\n", expr, file, line);
  std::abort();
}

}  // namespace ridge

#define RIDGE_CHECK(cond) \
  do {                    \
    if (!(cond)) ::ridge::CheckFailed(#cond, __FILE__, __LINE__); \
  } while (0)
