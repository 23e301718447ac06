#pragma once
// How Python turns values into text, which is what a template prints:
// str() for {{ x }} and `~`, repr() for the items of printed lists and dicts,
// and json.dumps() as transformers' tojson filter calls it.
#include <optional>
#include <string>

#include "ridge/jinja/value.h"

namespace ridge::jinja {

std::string PyStr(const Value& v);   // Undefined prints as ""
std::string PyRepr(const Value& v);
std::string PyFloatRepr(double d);
// markupsafe.escape: & < > " ' as HTML entities (&#34; and &#39; for the quotes).
std::string HtmlEscape(const std::string& s);   // 1.0, 0.1, 1e+16, 1.5e-05, inf, nan

struct JsonDumpOptions {
  std::optional<int> indent;     // None: one line
  std::string item_separator;    // default ", " (no indent) or "," (indent)
  std::string key_separator = ": ";
  bool sort_keys = false;
  bool ensure_ascii = false;
};
// json.dumps(v, ...). Throws TemplateError for values JSON cannot hold.
std::string JsonDumps(const Value& v, const JsonDumpOptions& options);

}  // namespace ridge::jinja
