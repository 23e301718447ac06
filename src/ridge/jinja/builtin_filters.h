#pragma once
// Jinja2's filters as chat templates use them (`x | trim`, `tools | tojson`,
// `messages | selectattr('role', 'equalto', 'system')`, ...). tojson is
// transformers' own: json.dumps(x, ensure_ascii=False, indent=None,
// separators=None, sort_keys=False), not Jinja's HTML-safe one.
#include <string>

#include "ridge/jinja/value.h"

namespace ridge::jinja {

// Throws TemplateError for an unknown filter or bad arguments.
Value ApplyFilter(const std::string& name, const Value& v, const CallArgs& args);

}  // namespace ridge::jinja
