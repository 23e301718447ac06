#pragma once
// A subcommand's settings from four sources, strongest first:
//   1. its flags (--port 8081),
//   2. environment variables named RIDGE_ + the long flag name in capitals,
//      '-' as '_' (RIDGE_PORT, RIDGE_KV_MEMORY, RIDGE_PUBLIC_METRICS=true);
//      an empty variable counts as unset,
//   3. a TOML file of `long-flag-name = value` lines (port = 8081,
//      kv-memory = "4GiB", public-metrics = true), given by --config or
//      RIDGE_CONFIG,
//   4. the flags' defaults.
// Values from the environment and the file go through the same CLI11
// conversion and checks as flags, so a bad one fails the same way, with an
// error that names the key and where it came from. deploy/README.md is the
// operator's view.
#include <string>
#include <vector>

namespace CLI {
class App;
}  // namespace CLI

namespace ridge::app {

struct EffectiveSetting {
  std::string name;    // the long flag name, "kv-memory"
  std::string value;   // as given, or the default; "" when unset
  std::string source;  // "flag", "env RIDGE_KV_MEMORY", "file /etc/ridge/serve.toml:3", "default"
};

// The environment variable of a long flag name: "kv-memory" -> "RIDGE_KV_MEMORY".
std::string SettingEnvName(const std::string& name);

// Fills every option of `sub` that was not given as a flag from the
// environment or from the TOML file `config_path` ("" for none), runs its
// conversion and checks, and returns every setting with its source, in the
// order the options were declared. Options named in `meta` (config,
// print-config: they steer this and are not settings) are left out.
// Throws ridge::Error for an unreadable or malformed file, an unknown key,
// a key given twice, or a value the option refuses.
std::vector<EffectiveSetting> ResolveSettings(CLI::App& sub, const std::string& config_path,
                                              const std::vector<std::string>& meta);

// One line per setting, "  name = value   (source)", with the values of the
// names in `secret` shown as "(redacted)".
std::string FormatSettings(const std::vector<EffectiveSetting>& settings, const std::vector<std::string>& secret);

}  // namespace ridge::app
