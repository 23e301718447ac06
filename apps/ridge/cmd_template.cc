// ridge template: renders a chat template (Jinja2) with the variables in a
// JSON file, as the server would, and prints the text exactly (no newline
// added). Used by tests/jinja's oracle to hold the interpreter to Jinja2.
//   ridge template -t TEMPLATE.jinja -c CONTEXT.json [--now UNIX_SECONDS]
// A template error prints "template error: line N: MESSAGE" and exits 1.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "ridge/command.h"
#include "ridge/jinja/template.h"

namespace ridge::app {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

CommandRegistration kTemplate{{"template", "Render a Jinja2 chat template with the variables of a JSON file",
  [](CLI::App& sub) -> std::function<int()> {
    struct Options {
      std::string template_path;
      std::string context_path;
      int64_t now_s = -1;
    };
    auto options = std::make_shared<Options>();
    sub.add_option("-t,--template", options->template_path, "the template (.jinja)")->required();
    sub.add_option("-c,--context", options->context_path,
                   "JSON object of variables: messages, tools, add_generation_prompt, bos_token, ...")->required();
    sub.add_option("--now", options->now_s, "strftime_now's clock in Unix seconds (default: now)");
    return [options] {
      const std::string source = ReadFile(options->template_path);
      const auto context = nlohmann::ordered_json::parse(ReadFile(options->context_path));
      jinja::RenderOptions render;
      if (options->now_s >= 0) render.now = static_cast<std::time_t>(options->now_s);
      try {
        const std::string text = jinja::Template(source).Render(context, render);
        std::fwrite(text.data(), 1, text.size(), stdout);
      } catch (const jinja::TemplateError& e) {
        std::fprintf(stderr, "template error: %s\n", e.Describe().c_str());
        return 1;
      }
      return 0;
    };
  }}};

}  // namespace
}  // namespace ridge::app
