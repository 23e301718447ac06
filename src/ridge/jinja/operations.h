#pragma once
// Python's operators and lookups on template values, as Jinja2 applies them:
// `a.b` and `a[b]` (missing → Undefined, not an error), slices, arithmetic,
// `in`, iteration and len(). Type errors throw TemplateError.
#include <string>
#include <vector>

#include "ridge/jinja/value.h"

namespace ridge::jinja {

Value GetAttribute(const Value& object, const std::string& name);  // methods of str/dict/list, then dict keys
Value GetItem(const Value& object, const Value& key);
Value GetSlice(const Value& object, const Value& start, const Value& stop, const Value& step);
Value BinaryOp(const std::string& op, const Value& a, const Value& b);  // not "and"/"or" (they short-circuit)
bool Contains(const Value& container, const Value& item);
// The items a for loop visits: list items, dict keys, string characters; Undefined is empty.
std::vector<Value> Iterate(const Value& v);
int64_t Length(const Value& v);

}  // namespace ridge::jinja
