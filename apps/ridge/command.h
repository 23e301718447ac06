#pragma once
// Subcommands register themselves: each cmd_*.cc defines a static
// CommandRegistration whose setup adds a CLI11 subcommand and its callback.
// main.cc needs no edit when a command is added.
//
// CLI11 is header-only and costs ~5 CPU-seconds in every file that includes
// it, so this header only names CLI::App: files that add options include
// <CLI/CLI.hpp> themselves.
#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace ridge::app {

struct CommandSpec {
  std::string name;
  std::string description;
  // Adds options to `sub` and returns the function to run when it is chosen.
  std::function<std::function<int()>(CLI::App& sub)> setup;
};

std::vector<CommandSpec>& CommandRegistry();

struct CommandRegistration {
  explicit CommandRegistration(CommandSpec spec) { CommandRegistry().push_back(std::move(spec)); }
};

// Help of the --mmap flag that run, bench and serve share.
inline constexpr const char* kMmapFlagHelp =
    "use the weights mapped from the file (4 KiB pages, shared page cache, faster start) instead of a copy in "
    "2 MiB pages (faster decode: fewer TLB misses while streaming the weights)";

}  // namespace ridge::app
