#pragma once
// The functions a chat template may call by name: range, dict, namespace,
// and transformers' raise_exception(message) and strftime_now(format).
#include <ctime>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ridge/jinja/value.h"

namespace ridge::jinja {

struct GlobalsOptions {
  std::time_t now = 0;           // strftime_now's clock, UTC
  uint64_t max_range_items = 0;  // range() longer than this is refused
  // Every namespace() made is added here: a namespace may hold itself (the
  // only cycle values can form), so the render empties them when it ends.
  std::vector<std::shared_ptr<Dict>>* created_namespaces = nullptr;
};

std::unordered_map<std::string, Value> MakeGlobals(const GlobalsOptions& options);

}  // namespace ridge::jinja
