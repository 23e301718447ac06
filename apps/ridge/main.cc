// ridge: one binary, many subcommands (see command.h).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <memory>

#include "ridge/base/error.h"
#include "ridge/command.h"

namespace ridge::app {
std::vector<CommandSpec>& CommandRegistry() {
  static std::vector<CommandSpec> registry;
  return registry;
}
}  // namespace ridge::app

int main(int argc, char** argv) {
  using namespace ridge::app;
  CLI::App app{"ridge: an LLM inference engine that shows where the time and memory go"};
  app.require_subcommand(1);
  auto& registry = CommandRegistry();
  std::sort(registry.begin(), registry.end(), [](auto& a, auto& b) { return a.name < b.name; });
  std::vector<std::pair<CLI::App*, std::function<int()>>> runners;
  for (auto& spec : registry) {
    CLI::App* sub = app.add_subcommand(spec.name, spec.description);
    runners.emplace_back(sub, spec.setup(*sub));
  }
  // `ridge bench serve ...` is the serving benchmark, registered as bench-serve.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() >= 2 && args[0] == "bench" && args[1] == "serve") {
    args.erase(args.begin());
    args[0] = "bench-serve";
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes the arguments last-first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (auto& [sub, run] : runners)
      if (sub->parsed()) return run();
  } catch (const ridge::Error& e) {
    std::fprintf(stderr, "ridge: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ridge: unexpected error: %s\n", e.what());
    return 2;
  }
  return 0;
}
