#include "ridge/jinja/value.h"

#include <cmath>

#include "ridge/jinja/error.h"

namespace ridge::jinja {

const Value* Dict::Find(std::string_view key) const {
  for (const auto& [k, v] : entries)
    if (k == key) return &v;
  return nullptr;
}

void Dict::Set(const std::string& key, Value value) {
  for (auto& [k, v] : entries)
    if (k == key) {
      v = std::move(value);
      return;
    }
  entries.emplace_back(key, std::move(value));
}

const Value* CallArgs::Get(size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keywords)
    if (k == name) return &v;
  return nullptr;
}

Value Value::FromJson(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return MakeNone();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: return Value(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List items;
      for (const auto& e : j) items.push_back(FromJson(e));
      return FromList(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      auto d = std::make_shared<Dict>();
      for (const auto& [k, v] : j.items()) d->entries.emplace_back(k, FromJson(v));
      return Value(std::move(d));
    }
    default: throw TemplateError("unsupported JSON value in the template's input");
  }
}

bool Value::Truthy() const {
  switch (kind()) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return as_bool();
    case Kind::kInt: return as_int() != 0;
    case Kind::kFloat: return as_float() != 0.0;
    case Kind::kString: return !as_string().empty();
    case Kind::kList: return !list().empty();
    case Kind::kDict: return !dict().entries.empty();
    case Kind::kCallable: return true;
  }
  return false;
}

double Value::ToDouble() const {
  if (is_int()) return static_cast<double>(as_int());
  if (is_float()) return as_float();
  if (is_bool()) return as_bool() ? 1.0 : 0.0;
  Defined();
  throw TemplateError(std::string("expected a number, got ") + TypeName());
}

const char* Value::TypeName() const {
  switch (kind()) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return "list";
    case Kind::kDict: return dict().is_namespace ? "Namespace" : "dict";
    case Kind::kCallable: return "function";
  }
  return "?";
}

const Value& Value::Defined() const {
  if (is_undefined()) throw TemplateError(undefined_hint().empty() ? "value is undefined" : undefined_hint());
  return *this;
}

bool Equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.ToDouble() == b.ToDouble();
    auto as_i = [](const Value& v) { return v.is_bool() ? int64_t{v.as_bool()} : v.as_int(); };
    return as_i(a) == as_i(b);
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: return true;
    case Value::Kind::kString: return a.as_string() == b.as_string();
    case Value::Kind::kList: {
      if (a.list().size() != b.list().size()) return false;
      for (size_t i = 0; i < a.list().size(); ++i)
        if (!Equal(a.list()[i], b.list()[i])) return false;
      return true;
    }
    case Value::Kind::kDict: {
      // A namespace is equal to itself only, as in Jinja2; this also ends the
      // comparison of a namespace that holds itself.
      if (a.dict().is_namespace || b.dict().is_namespace) return &a.dict() == &b.dict();
      if (a.dict().entries.size() != b.dict().entries.size()) return false;
      for (const auto& [k, v] : a.dict().entries) {
        const Value* other = b.dict().Find(k);
        if (!other || !Equal(v, *other)) return false;
      }
      return true;
    }
    case Value::Kind::kCallable: return &a.callable() == &b.callable();
    default: return false;
  }
}

bool Less(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) return a.ToDouble() < b.ToDouble();
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // UTF-8 bytes order as code points
  if (a.is_list() && b.is_list()) {
    const List &x = a.list(), &y = b.list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (Less(x[i], y[i])) return true;
      if (Less(y[i], x[i])) return false;
    }
    return x.size() < y.size();
  }
  a.Defined();
  b.Defined();
  throw TemplateError(std::string("'<' not supported between instances of '") + a.TypeName() + "' and '" +
                      b.TypeName() + "'");
}

}  // namespace ridge::jinja
