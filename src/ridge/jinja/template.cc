#include "ridge/jinja/template.h"

#include "ridge/jinja/globals.h"
#include "ridge/jinja/lexer.h"
#include "ridge/jinja/parser.h"
#include "ridge/jinja/renderer.h"
#include "ridge/jinja/value.h"

namespace ridge::jinja {

Template::Template(std::string_view source)
    : body_(std::make_shared<const Body>(Parse(Lex(source, LexOptions{})))) {}

std::string Template::Render(const nlohmann::ordered_json& variables, const RenderOptions& options) const {
  if (!variables.is_object()) throw TemplateError("the template's variables must be a JSON object");
  std::vector<std::shared_ptr<Dict>> namespaces;
  // Empties the namespaces however the render ends, so that one holding itself is freed.
  struct CycleBreaker {
    std::vector<std::shared_ptr<Dict>>& namespaces;
    ~CycleBreaker() {
      for (auto& ns : namespaces) ns->entries.clear();
    }
  } breaker{namespaces};
  GlobalsOptions g;
  g.now = options.now;
  g.max_range_items = options.limits.max_loop_iterations;
  g.created_namespaces = &namespaces;
  Renderer renderer(options.limits, MakeGlobals(g));
  auto frame = std::make_shared<Frame>();
  for (const auto& [k, v] : variables.items()) frame->vars[k] = Value::FromJson(v);
  return renderer.Run(*body_, frame);
}

}  // namespace ridge::jinja
