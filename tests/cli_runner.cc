#include "cli_runner.h"

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "test_paths.h"

namespace ridge::testing {

CliResult RunRidge(const std::string& args) { return RunCommand(RidgeBinary() + " " + args); }

CliResult RunCommand(const std::string& command_line) {
  const std::string err_path = ScratchDir("cli-stderr") + "/stderr.txt";
  const std::string command = command_line + " 2>'" + err_path + "'";
  CliResult r;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  std::stringstream text;
  text << err.rdbuf();
  r.err = text.str();
  return r;
}

}  // namespace ridge::testing
