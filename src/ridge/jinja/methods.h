#pragma once
// The methods templates call on values: str.strip/split/startswith/...,
// dict.get/items/keys/values. Lists and dicts are read-only, as in
// transformers' ImmutableSandboxedEnvironment (append, update: an error).
#include <string>

#include "ridge/jinja/value.h"

namespace ridge::jinja {

bool HasMethod(const Value& object, const std::string& name);
// A callable bound to `object` (only when HasMethod).
Value BindMethod(const Value& object, const std::string& name);

}  // namespace ridge::jinja
