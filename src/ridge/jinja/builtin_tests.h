#pragma once
// Jinja2's tests (`x is defined`, `x is string`, `x is divisibleby 3`, ...).
#include <string>

#include "ridge/jinja/value.h"

namespace ridge::jinja {

// Throws TemplateError for an unknown test name.
bool ApplyTest(const std::string& name, const Value& v, const CallArgs& args);

}  // namespace ridge::jinja
