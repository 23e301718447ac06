#pragma once
// Runs the built `ridge` binary as a user would, for command-line tests.
#include <string>

namespace ridge::testing {

struct CliResult {
  int exit_code = -1;   // -1 if it did not exit normally
  std::string out;      // standard output
  std::string err;      // standard error
  std::string output() const { return out + err; }
  bool Has(const std::string& needle) const { return output().find(needle) != std::string::npos; }
};

// `args` is appended to the binary's path and run by /bin/sh (quote as in a shell).
CliResult RunRidge(const std::string& args);
// A whole command line run by /bin/sh (e.g. `mpirun -np 2 <RidgeBinary()> run ...`).
CliResult RunCommand(const std::string& command);

}  // namespace ridge::testing
