#pragma once
// A Jinja2-compatible template, as Hugging Face chat templates are written
// and as transformers renders them (trim_blocks, lstrip_blocks, its tojson,
// raise_exception and strftime_now; lists and dicts read-only).
//
//   Template t(source);                                 // throws TemplateError (syntax, with the line)
//   std::string prompt = t.Render({{"messages", ...}}); // throws TemplateError / TemplateRaised
//
// A template is user data: parsing nests at most kMaxParseDepth deep, and
// rendering stops with a TemplateError past RenderLimits (output bytes, loop
// iterations, macro call depth). Parsed templates are immutable and may be
// rendered from several threads at once.
#include <cstdint>
#include <ctime>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "ridge/jinja/error.h"

namespace ridge::jinja {

struct Stmt;

struct RenderLimits {
  size_t max_output_bytes = size_t{16} << 20;   // also caps any one string or list built on the way
  uint64_t max_loop_iterations = 1'000'000;    // all loops together, range() included
  int max_call_depth = 64;                     // macro calls nested
};

struct RenderOptions {
  RenderLimits limits;
  std::time_t now = std::time(nullptr);        // strftime_now's clock (UTC)
};

class Template {
 public:
  explicit Template(std::string_view source);

  // `variables` become the template's globals (messages, tools,
  // add_generation_prompt, bos_token, ...); objects keep their key order.
  std::string Render(const nlohmann::ordered_json& variables, const RenderOptions& options = {}) const;

 private:
  std::shared_ptr<const std::vector<std::unique_ptr<Stmt>>> body_;
};

}  // namespace ridge::jinja
