#include "ridge/jinja/methods.h"

#include <algorithm>
#include <cctype>
#include <memory>

#include "ridge/jinja/error.h"
#include "ridge/jinja/operations.h"
#include "ridge/jinja/py_string.h"
#include "ridge/jinja/python_text.h"
#include "ridge/jinja/utf8.h"

namespace ridge::jinja {
namespace {

const char* const kStringMethods[] = {"strip", "lstrip", "rstrip", "split", "startswith", "endswith", "upper",
                                      "lower", "title", "capitalize", "replace", "find", "rfind", "count", "join",
                                      "isdigit", "isalpha", "isspace", "splitlines"};
const char* const kDictMethods[] = {"get", "items", "keys", "values"};
const char* const kListMethods[] = {"index", "count"};

template <size_t N>
bool In(const char* const (&names)[N], const std::string& name) {
  return std::find_if(std::begin(names), std::end(names), [&](const char* n) { return name == n; }) != std::end(names);
}

std::optional<std::string> OptionalString(const Value* v) {
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) throw TemplateError(std::string("expected a string argument, got ") + v->TypeName());
  return v->as_string();
}

const Value& Required(const CallArgs& args, size_t index, const char* name, const char* method) {
  const Value* v = args.Get(index, name);
  if (!v) throw TemplateError(std::string(method) + "() missing required argument '" + name + "'");
  return *v;
}

const std::string& RequiredString(const CallArgs& args, size_t index, const char* name, const char* method) {
  const Value& v = Required(args, index, name, method);
  if (!v.is_string())
    throw TemplateError(std::string(method) + "() argument must be str, not " + v.TypeName());
  return v.as_string();
}

bool AffixMatch(const std::string& s, const Value& affix, bool prefix) {
  auto one = [&](const Value& a) {
    if (!a.is_string()) throw TemplateError("startswith/endswith arguments must be str or a tuple of str");
    const std::string& x = a.as_string();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (affix.is_list()) return std::any_of(affix.list().begin(), affix.list().end(), one);
  return one(affix);
}

Value StringMethod(const std::string& s, const std::string& name, const CallArgs& args) {
  if (name == "strip" || name == "lstrip" || name == "rstrip")
    return Value(PyStrip(s, OptionalString(args.Get(0, "chars")), name != "rstrip", name != "lstrip"));
  if (name == "split") {
    const Value* maxsplit = args.Get(1, "maxsplit");
    List parts;
    for (auto& p : PySplit(s, OptionalString(args.Get(0, "sep")), maxsplit ? maxsplit->as_int() : -1))
      parts.emplace_back(std::move(p));
    return Value::FromList(std::move(parts));
  }
  if (name == "splitlines") {
    List parts;
    for (auto& p : PySplit(s, std::string("\n"), -1)) parts.emplace_back(std::move(p));
    if (!parts.empty() && parts.back().as_string().empty()) parts.pop_back();
    return Value::FromList(std::move(parts));
  }
  if (name == "startswith" || name == "endswith")
    return Value(AffixMatch(s, Required(args, 0, "prefix", name.c_str()), name == "startswith"));
  if (name == "upper") return Value(AsciiUpper(s));
  if (name == "lower") return Value(AsciiLower(s));
  if (name == "title") return Value(PyTitle(s));
  if (name == "capitalize") return Value(PyCapitalize(s));
  if (name == "replace") {
    const Value* count = args.Get(2, "count");
    return Value(PyReplace(s, RequiredString(args, 0, "old", "replace"), RequiredString(args, 1, "new", "replace"),
                           count ? count->as_int() : -1));
  }
  if (name == "find" || name == "rfind" || name == "count") {
    const std::string& sub = RequiredString(args, 0, "sub", name.c_str());
    if (name == "count") {
      if (sub.empty()) return Value(Length(Value(s)) + 1);
      int64_t n = 0;
      for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
      return Value(n);
    }
    const size_t at = name == "find" ? s.find(sub) : s.rfind(sub);
    if (at == std::string::npos) return Value(int64_t{-1});
    return Value(static_cast<int64_t>(CodePointOffsets(s.substr(0, at)).size() - 1));
  }
  if (name == "join") {
    std::string out;
    bool first = true;
    for (const Value& v : Iterate(Required(args, 0, "iterable", "join"))) {
      if (!v.is_string()) throw TemplateError(std::string("sequence item: expected str instance, ") + v.TypeName() +
                                              " found");
      if (!first) out += s;
      first = false;
      out += v.as_string();
    }
    return Value(std::move(out));
  }
  auto all_of = [&](auto pred) {
    if (s.empty()) return Value(false);
    for (size_t i = 0; i < s.size();)
      if (!pred(DecodeCodePoint(s, i))) return Value(false);
    return Value(true);
  };
  if (name == "isdigit") return all_of([](uint32_t c) { return c >= '0' && c <= '9'; });
  if (name == "isalpha") return all_of([](uint32_t c) { return c < 0x80 && std::isalpha(static_cast<int>(c)); });
  if (name == "isspace") return all_of(IsPyWhitespace);
  throw TemplateError("str has no method " + name);
}

Value DictMethod(const Dict& d, const std::string& name, const CallArgs& args) {
  if (name == "get") {
    const Value& key = Required(args, 0, "key", "get");
    const Value* fallback = args.Get(1, "default");
    if (key.is_string())
      if (const Value* v = d.Find(key.as_string())) return *v;
    return fallback ? *fallback : Value::MakeNone();
  }
  List out;
  for (const auto& [k, v] : d.entries) {
    if (name == "items") {
      out.push_back(Value::FromList({Value(k), v}));
    } else {
      out.push_back(name == "keys" ? Value(k) : v);
    }
  }
  return Value::FromList(std::move(out));
}

Value ListMethod(const List& l, const std::string& name, const CallArgs& args) {
  const Value& x = Required(args, 0, "value", name.c_str());
  int64_t count = 0;
  for (size_t i = 0; i < l.size(); ++i) {
    if (!Equal(l[i], x)) continue;
    if (name == "index") return Value(static_cast<int64_t>(i));
    ++count;
  }
  if (name == "index") throw TemplateError(PyRepr(x) + " is not in list");
  return Value(count);
}

}  // namespace

bool HasMethod(const Value& object, const std::string& name) {
  if (object.is_string()) return In(kStringMethods, name);
  if (object.is_dict()) return !object.dict().is_namespace && In(kDictMethods, name);
  if (object.is_list()) return In(kListMethods, name);
  return false;
}

Value BindMethod(const Value& object, const std::string& name) {
  auto c = std::make_shared<Callable>();
  c->name = std::string(object.TypeName()) + "." + name;
  c->call = [object, name](const CallArgs& args) -> Value {
    if (object.is_string()) return StringMethod(object.as_string(), name, args);
    if (object.is_dict()) return DictMethod(object.dict(), name, args);
    return ListMethod(object.list(), name, args);
  };
  return Value(std::move(c));
}

}  // namespace ridge::jinja
