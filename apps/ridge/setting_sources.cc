#include "ridge/setting_sources.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <toml++/toml.h>

#include "ridge/base/error.h"

namespace ridge::app {
namespace {

struct FileValue {
  std::string text;  // the value as CLI11 would read it on the command line
  int64_t line = 0;
  bool scalar = true;  // false for arrays and tables, which no option takes
};

// key -> value of a flat TOML file.
std::map<std::string, FileValue> ReadConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("--config: cannot read '{}'", path);
  std::ostringstream text;
  text << in.rdbuf();
  toml::table table;
  try {
    table = toml::parse(text.str(), path);
  } catch (const toml::parse_error& e) {
    Fail("config file {}:{}:{}: {}", path, e.source().begin.line, e.source().begin.column, e.description());
  }
  std::map<std::string, FileValue> values;
  for (auto&& [key, node] : table) {
    FileValue v;
    v.line = key.source().begin.line;
    if (const auto* s = node.as_string()) {
      v.text = s->get();
    } else if (const auto* i = node.as_integer()) {
      v.text = std::to_string(i->get());
    } else if (const auto* f = node.as_floating_point()) {
      v.text = fmt::format("{}", f->get());
    } else if (const auto* b = node.as_boolean()) {
      v.text = b->get() ? "true" : "false";
    } else {
      v.scalar = false;
    }
    values.emplace(std::string(key.str()), std::move(v));
  }
  return values;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

// The value an option holds without being given: its captured default, or
// "false" for a flag.
std::string DefaultText(CLI::Option* opt) {
  if (opt->get_default_str().empty()) opt->capture_default_str();
  if (opt->get_default_str().empty() && opt->get_expected_max() == 0) return "false";
  return opt->get_default_str();
}

}  // namespace

std::string SettingEnvName(const std::string& name) {
  std::string env = "RIDGE_";
  for (char c : name) env += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return env;
}

std::vector<EffectiveSetting> ResolveSettings(CLI::App& sub, const std::string& config_path,
                                              const std::vector<std::string>& meta) {
  // The settings: every option with a long name, but --help and the meta ones.
  std::vector<std::pair<std::string, CLI::Option*>> options;
  for (CLI::Option* opt : sub.get_options()) {
    if (opt == sub.get_help_ptr() || opt->get_lnames().empty()) continue;
    const std::string& name = opt->get_lnames().front();
    if (std::find(meta.begin(), meta.end(), name) == meta.end()) options.emplace_back(name, opt);
  }

  const auto file = config_path.empty() ? std::map<std::string, FileValue>{} : ReadConfigFile(config_path);
  for (const auto& [key, value] : file) {
    const bool known = std::any_of(options.begin(), options.end(), [&](const auto& o) { return o.first == key; });
    if (known && value.scalar) continue;
    if (known) Fail("config file {}:{}: '{}' must be a string, a number or a boolean", config_path, value.line, key);
    std::vector<std::string> names;
    for (const auto& o : options) names.push_back(o.first);
    Fail("config file {}:{}: unknown key '{}' (the keys are the long flag names of '{}': {})", config_path,
         value.line, key, sub.get_name(), fmt::join(names, ", "));
  }

  std::vector<EffectiveSetting> settings;
  for (const auto& [name, opt] : options) {
    EffectiveSetting s{name, "", ""};
    if (opt->count() > 0) {
      s.value = Join(opt->results());
      s.source = "flag";
      settings.push_back(std::move(s));
      continue;
    }
    const std::string env_name = SettingEnvName(name);
    const char* env = std::getenv(env_name.c_str());
    const auto in_file = file.find(name);
    if (env != nullptr && *env != '\0') {
      s.value = env;
      s.source = "env " + env_name;
    } else if (in_file != file.end()) {
      s.value = in_file->second.text;
      s.source = fmt::format("file {}:{}", config_path, in_file->second.line);
    } else {
      s.value = DefaultText(opt);
      s.source = "default";
      settings.push_back(std::move(s));
      continue;
    }
    // Through CLI11 as if typed after the flag: the same conversion and checks.
    try {
      opt->add_result(s.value);
      opt->run_callback();
    } catch (const CLI::Error& e) {
      Fail("{} = '{}' from {}: {}", name, s.value, s.source, e.what());
    }
    settings.push_back(std::move(s));
  }
  return settings;
}

std::string FormatSettings(const std::vector<EffectiveSetting>& settings, const std::vector<std::string>& secret) {
  size_t name_width = 0, value_width = 0;
  std::vector<std::string> values;
  for (const auto& s : settings) {
    const bool hidden = std::find(secret.begin(), secret.end(), s.name) != secret.end();
    values.push_back(s.value.empty() ? "(unset)" : hidden ? "(redacted)" : s.value);
    name_width = std::max(name_width, s.name.size());
    value_width = std::max(value_width, std::min<size_t>(values.back().size(), 32));
  }
  std::string out;
  for (size_t i = 0; i < settings.size(); ++i)
    out += fmt::format("  {:<{}} = {:<{}}  ({})\n", settings[i].name, name_width, values[i], value_width,
                       settings[i].source);
  return out;
}

}  // namespace ridge::app
