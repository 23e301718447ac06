// `ridge serve` settings from flags, RIDGE_* variables and a --config TOML
// file: the precedence (flag > environment > file > default), the printed
// effective settings with their sources and the API key redacted, clear
// errors naming the key and the source, and values from each source reaching
// the running server.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>

#include "cli_runner.h"
#include "serve_process.h"
#include "server_test_util.h"

namespace ridge::server {
namespace {

using ridge::testing::RunRidge;
using ridge::testing::ScratchDir;
using namespace testing;

// Sets environment variables for the scope (the ridge child processes inherit them).
using EnvVars = std::vector<std::pair<std::string, std::string>>;
class ScopedEnv {
 public:
  explicit ScopedEnv(const EnvVars& vars) {
    for (const auto& [name, value] : vars) {
      names_.push_back(name);
      ::setenv(name.c_str(), value.c_str(), 1);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;
  ~ScopedEnv() {
    for (const auto& name : names_) ::unsetenv(name.c_str());
  }

 private:
  std::vector<std::string> names_;
};

std::string WriteConfig(const std::string& text) {
  const std::string path = ScratchDir("serve-settings") + "/serve.toml";
  std::ofstream(path) << text;
  return path;
}

struct Printed {
  std::string value, source;
};

// name -> value and source, from the "  name = value  (source)" lines. Parsed
// by hand: a std::regex here would instantiate libstdc++'s regex matcher in
// this binary, where it stands in for the uninstrumented copy inside
// libcpp-httplib; TSan then sees httplib's function-local regexes read
// without seeing their initialisation guard, and reports false races in every
// test whose clients run on several threads.
std::map<std::string, Printed> PrintedSettings(const std::string& output) {
  std::map<std::string, Printed> settings;
  std::istringstream in(output);
  for (std::string text; std::getline(in, text);) {
    if (text.size() < 4 || text.compare(0, 2, "  ") != 0 || text[2] == ' ' || text.back() != ')') continue;
    const size_t name_end = text.find(' ', 2);
    const size_t equals = name_end == std::string::npos ? name_end : text.find_first_not_of(' ', name_end);
    if (equals == std::string::npos || text.compare(equals, 2, "= ") != 0) continue;
    const std::string rest = text.substr(equals + 2);  // "value  (source)"
    for (size_t space = rest.find(' ', 1); space != std::string::npos; space = rest.find(' ', space + 1)) {
      const size_t open = rest.find_first_not_of(' ', space);
      if (open == std::string::npos || rest[open] != '(') continue;
      settings[text.substr(2, name_end - 2)] = {rest.substr(0, space), rest.substr(open + 1, rest.size() - open - 2)};
      break;
    }
  }
  return settings;
}

TEST(ServeSettings, FlagBeatsEnvironmentBeatsFileBeatsDefault) {
  const std::string config = WriteConfig(
      "# a comment\n"
      "host = \"10.0.0.1\"\n"
      "port = 9000\n"
      "kv-memory = \"64MiB\"\n"
      "max-queue = 7\n"
      "public-metrics = true\n"
      "request-timeout = 2.5\n");
  ScopedEnv env(EnvVars{{"RIDGE_HOST", "10.0.0.2"}, {"RIDGE_PORT", "9001"}, {"RIDGE_MAX_RUNNING", "3"}});
  const auto r = RunRidge("serve --print-config --config '" + config + "' --host 10.0.0.3");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  auto s = PrintedSettings(r.out);
  EXPECT_EQ(s["host"].value, "10.0.0.3");  // flag over env and file
  EXPECT_EQ(s["host"].source, "flag");
  EXPECT_EQ(s["port"].value, "9001");  // env over file
  EXPECT_EQ(s["port"].source, "env RIDGE_PORT");
  EXPECT_EQ(s["max-running"].value, "3");  // env over default
  EXPECT_EQ(s["kv-memory"].value, "64MiB");  // file over default
  EXPECT_EQ(s["kv-memory"].source, "file " + config + ":4");
  EXPECT_EQ(s["max-queue"].value, "7");
  EXPECT_EQ(s["public-metrics"].value, "true");
  EXPECT_EQ(s["public-metrics"].source, "file " + config + ":6");
  EXPECT_EQ(s["request-timeout"].value, "2.5");
  EXPECT_EQ(s["max-body"].value, "4MiB");  // nowhere: the default
  EXPECT_EQ(s["max-body"].source, "default");
  EXPECT_EQ(s["mmap"].value, "false");
  EXPECT_EQ(s.count("config"), 0u);  // steers the others, not a setting
  EXPECT_EQ(s.count("help"), 0u);
}

TEST(ServeSettings, EveryFlagHasAnEnvironmentVariableAndAFileKey) {
  // Each printed setting set through its RIDGE_ name is seen as coming from there.
  const auto defaults = PrintedSettings(RunRidge("serve --print-config").out);
  ASSERT_GT(defaults.size(), 20u);
  for (const auto& [name, printed] : defaults) {
    std::string env_name = "RIDGE_";
    for (char c : name) env_name += c == '-' ? '_' : static_cast<char>(std::toupper(c));
    // A valid value for every setting: its default, "true" for a flag, a path for unset strings.
    const std::string value = printed.value == "false" ? "true" : printed.value == "(unset)" ? "x" : printed.value;
    {
      ScopedEnv env(EnvVars{{env_name, value}});
      const auto s = PrintedSettings(RunRidge("serve --print-config").out);
      EXPECT_EQ(s.at(name).source, "env " + env_name) << name;
    }
    const std::string config = WriteConfig(name + " = \"" + value + "\"\n");
    const auto s = PrintedSettings(RunRidge("serve --print-config --config '" + config + "'").out);
    EXPECT_EQ(s.at(name).source, "file " + config + ":1") << name;
  }
}

TEST(ServeSettings, RidgeConfigNamesTheFileAndTheFlagBeatsIt) {
  const std::string from_env = WriteConfig("port = 9100\n");
  const std::string from_flag = WriteConfig("port = 9200\n");
  ScopedEnv env(EnvVars{{"RIDGE_CONFIG", from_env}});
  EXPECT_EQ(PrintedSettings(RunRidge("serve --print-config").out)["port"].value, "9100");
  EXPECT_EQ(PrintedSettings(RunRidge("serve --print-config --config '" + from_flag + "'").out)["port"].value,
            "9200");
}

TEST(ServeSettings, TheApiKeyIsPrintedRedactedFromEverySource) {
  const std::string config = WriteConfig("api-key = \"file-secret-123\"\n");
  const auto from_file = RunRidge("serve --print-config --config '" + config + "'");
  EXPECT_EQ(PrintedSettings(from_file.out)["api-key"].value, "(redacted)");
  EXPECT_FALSE(from_file.Has("file-secret-123")) << from_file.output();
  ScopedEnv env(EnvVars{{"RIDGE_API_KEY", "env-secret-456"}});
  const auto from_env = RunRidge("serve --print-config --api-key flag-secret-789");
  EXPECT_EQ(PrintedSettings(from_env.out)["api-key"].source, "flag");
  EXPECT_FALSE(from_env.Has("secret-")) << from_env.output();
}

TEST(ServeSettings, BadKeysAndValuesFailNamingTheKeyAndTheSource) {
  struct Case {
    std::string config;  // file text, "" for no file
    std::pair<std::string, std::string> env;  // {"", ""} for none
    std::string expected;  // in the error, after the file's path when there is one
  };
  const std::vector<Case> cases = {
      {"port = 8080\nprot = 9000\n", {}, ":2: unknown key 'prot'"},
      {"port = 70000\n", {}, "port = '70000' from file "},
      {"kv-type = \"q3_weird\"\n", {}, "--kv-type: unknown type 'q3_weird'"},
      {"kv-memory = \"lots\"\n", {}, "kv-memory = 'lots' from file "},
      {"port = [1, 2]\n", {}, ":1: 'port' must be a string, a number or a boolean"},
      {"port = 1\nport = 2\n", {}, ":2:"},  // TOML: a key given twice
      {"port = \n", {}, ":1:"},             // TOML syntax
      {"", {"RIDGE_PORT", "http"}, "port = 'http' from env RIDGE_PORT"},
      {"", {"RIDGE_PUBLIC_METRICS", "maybe"}, "public-metrics = 'maybe' from env RIDGE_PUBLIC_METRICS"},
      {"", {"RIDGE_MAX_BODY", "-1MiB"}, "max-body = '-1MiB' from env RIDGE_MAX_BODY"},
      {"", {"RIDGE_THREADS", "-2"}, "threads = '-2' from env RIDGE_THREADS"},
  };
  for (const auto& c : cases) {
    const std::string config = c.config.empty() ? "" : WriteConfig(c.config);
    ScopedEnv env(c.env.first.empty() ? EnvVars{} : EnvVars{c.env});
    const auto r = RunRidge("serve -m model.gguf" + (config.empty() ? "" : " --config '" + config + "'"));
    EXPECT_EQ(r.exit_code, 1) << c.expected << "\n" << r.output();
    EXPECT_TRUE(r.Has("ridge: error: ")) << r.output();
    EXPECT_TRUE(r.Has(c.expected)) << c.expected << "\n" << r.output();
    if (!config.empty()) {
      EXPECT_TRUE(r.Has(config)) << r.output();
    }
    EXPECT_FALSE(r.Has("listening")) << r.output();
  }
  const auto missing = RunRidge("serve -m model.gguf --config /nonexistent/serve.toml");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(missing.Has("--config: cannot read '/nonexistent/serve.toml'")) << missing.output();
  const auto no_model = RunRidge("serve");
  EXPECT_EQ(no_model.exit_code, 1);
  EXPECT_TRUE(no_model.Has("no model: give -m/--model, set RIDGE_MODEL")) << no_model.output();
}

TEST(ServeSettings, ValuesFromTheFileAndTheEnvironmentReachTheServer) {
  // The model and the API key from the file, the model's name from the environment.
  const std::string config =
      WriteConfig("model = \"" + ridge::testing::Stories260kGguf() + "\"\napi-key = \"file-key\"\n");
  ScopedEnv env(EnvVars{{"RIDGE_MODEL_NAME", "from-env"}});
  ServeProcess serve({"--config", config}, /*model=*/"");
  const int port = serve.Port();
  ASSERT_GT(port, 0) << serve.output();
  const auto s = PrintedSettings(serve.output());
  EXPECT_EQ(s.at("model").source, "file " + config + ":1");
  EXPECT_EQ(s.at("model-name").source, "env RIDGE_MODEL_NAME");
  EXPECT_EQ(s.at("port").source, "flag");
  EXPECT_EQ(Get(port, "/v1/models")->status, 401);
  const auto models = Get(port, "/v1/models", {{"Authorization", "Bearer file-key"}});
  ASSERT_TRUE(models);
  ASSERT_EQ(models->status, 200) << models->body;
  EXPECT_EQ(nlohmann::json::parse(models->body)["data"][0]["id"], "from-env");
  EXPECT_EQ(serve.Stop(SIGTERM), 0) << serve.output();
}

}  // namespace
}  // namespace ridge::server
