#include "ridge/jinja/builtin_filters.h"

#include <algorithm>
#include <cmath>

#include "ridge/jinja/builtin_tests.h"
#include "ridge/jinja/error.h"
#include "ridge/jinja/operations.h"
#include "ridge/jinja/py_string.h"
#include "ridge/jinja/python_text.h"

namespace ridge::jinja {
namespace {

// "function.name" → item["function"]["name"], as Jinja's attribute arguments.
Value LookupPath(const Value& item, const std::string& path) {
  Value v = item;
  for (const std::string& part : PySplit(path, std::string("."), -1)) {
    if (!part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
      v = GetItem(v, Value(static_cast<int64_t>(std::stoll(part))));
    } else {
      v = GetItem(v, Value(part));
    }
    if (v.is_undefined()) return v;
  }
  return v;
}

bool BoolArg(const CallArgs& args, size_t index, const char* name, bool fallback) {
  const Value* v = args.Get(index, name);
  return v ? v->Truthy() : fallback;
}

const Value* NamedArg(const CallArgs& args, const char* name) {
  for (const auto& [k, v] : args.keywords)
    if (k == name) return &v;
  return nullptr;
}

std::string StringArg(const CallArgs& args, size_t index, const char* name, const std::string& fallback) {
  const Value* v = args.Get(index, name);
  return v ? PyStr(*v) : fallback;
}

// select/reject and selectattr/rejectattr: the test and its arguments from args[first..].
bool PassesTest(const Value& v, const CallArgs& args, size_t first) {
  if (args.positional.size() <= first) return v.Truthy();
  const Value& test = args.positional[first];
  if (!test.is_string()) throw TemplateError("the test name must be a string");
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + static_cast<long>(first) + 1, args.positional.end());
  return ApplyTest(test.as_string(), v, rest);
}

// Jinja2 skips a false sequence (None, empty) instead of iterating it.
Value Select(const Value& seq, const CallArgs& args, bool by_attribute, bool keep) {
  List out;
  if (!seq.Truthy()) return Value::FromList({});
  for (const Value& item : Iterate(seq)) {
    Value subject = item;
    if (by_attribute) {
      if (args.positional.empty()) throw TemplateError("selectattr/rejectattr need an attribute name");
      subject = LookupPath(item, PyStr(args.positional[0]));
    }
    if (PassesTest(subject, args, by_attribute ? 1 : 0) == keep) out.push_back(item);
  }
  return Value::FromList(std::move(out));
}

Value Map(const Value& seq, const CallArgs& args) {
  List out;
  if (!seq.Truthy()) return Value::FromList({});
  if (const Value* attribute = NamedArg(args, "attribute")) {
    const Value* fallback = NamedArg(args, "default");
    for (const Value& item : Iterate(seq)) {
      Value v = LookupPath(item, PyStr(*attribute));
      out.push_back(v.is_undefined() && fallback ? *fallback : v);
    }
    return Value::FromList(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].is_string())
    throw TemplateError("map needs a filter name or attribute=");
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keywords = args.keywords;
  for (const Value& item : Iterate(seq)) out.push_back(ApplyFilter(args.positional[0].as_string(), item, rest));
  return Value::FromList(std::move(out));
}

Value SortKey(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value(AsciiLower(v.as_string()));
  return v;
}

Value Sort(const Value& seq, const CallArgs& args) {
  const bool reverse = BoolArg(args, 0, "reverse", false);
  const bool case_sensitive = BoolArg(args, 1, "case_sensitive", false);
  const Value* attribute = args.Get(2, "attribute");
  List items = Iterate(seq);
  auto key = [&](const Value& v) {
    return SortKey(attribute ? LookupPath(v, PyStr(*attribute)) : v, case_sensitive);
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    return reverse ? Less(key(b), key(a)) : Less(key(a), key(b));
  });
  return Value::FromList(std::move(items));
}

Value DictSort(const Value& d, const CallArgs& args) {
  if (!d.is_dict()) throw TemplateError("dictsort needs a dict");
  const bool case_sensitive = BoolArg(args, 0, "case_sensitive", false);
  const bool by_value = StringArg(args, 1, "by", "key") == "value";
  const bool reverse = BoolArg(args, 2, "reverse", false);
  List items;
  for (const auto& [k, v] : d.dict().entries) items.push_back(Value::FromList({Value(k), v}));
  auto key = [&](const Value& pair) { return SortKey(pair.list()[by_value ? 1 : 0], case_sensitive); };
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    return reverse ? Less(key(b), key(a)) : Less(key(a), key(b));
  });
  return Value::FromList(std::move(items));
}

Value Indent(const Value& v, const CallArgs& args) {
  const Value* width = args.Get(0, "width");
  const std::string indention =
      !width ? "    " : width->is_string() ? width->as_string() : std::string(static_cast<size_t>(width->as_int()), ' ');
  const bool first = BoolArg(args, 1, "first", false);
  const bool blank = BoolArg(args, 2, "blank", false);
  std::vector<std::string> lines = PySplit(PyStr(v) + "\n", std::string("\n"), -1);
  lines.pop_back();  // splitlines() of text ending in "\n"
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0) out += "\n";
    if (i > 0 && (blank || !lines[i].empty())) out += indention;
    out += lines[i];
  }
  if (first) out = indention + out;
  return Value(std::move(out));
}

Value ToJson(const Value& v, const CallArgs& args) {
  JsonDumpOptions o;
  if (const Value* indent = args.Get(0, "indent"); indent && !indent->is_none()) {
    if (!indent->is_int()) throw TemplateError("tojson: indent must be an integer");
    o.indent = static_cast<int>(std::clamp<int64_t>(indent->as_int(), 0, 64));
  }
  if (const Value* ascii = NamedArg(args, "ensure_ascii")) o.ensure_ascii = ascii->Truthy();
  if (const Value* sort = NamedArg(args, "sort_keys")) o.sort_keys = sort->Truthy();
  if (const Value* sep = NamedArg(args, "separators"); sep && sep->is_list() && sep->list().size() == 2) {
    o.item_separator = PyStr(sep->list()[0]);
    o.key_separator = PyStr(sep->list()[1]);
  }
  return Value(JsonDumps(v, o));
}

Value ToInt(const Value& v, const CallArgs& args) {
  const Value* fallback = args.Get(0, "default");
  const Value def = fallback ? *fallback : Value(int64_t{0});
  if (v.is_int()) return v;
  if (v.is_bool()) return Value(int64_t{v.as_bool()});
  if (v.is_float()) return std::isfinite(v.as_float()) ? Value(static_cast<int64_t>(v.as_float())) : def;
  if (v.is_string()) {
    const std::string s = PyStrip(v.as_string(), std::nullopt, true, true);
    try {
      size_t used = 0;
      const int64_t i = std::stoll(s, &used);
      if (used == s.size()) return Value(i);
      const double d = std::stod(s, &used);
      if (used == s.size()) return Value(static_cast<int64_t>(d));
    } catch (const std::exception&) {
    }
  }
  return def;
}

Value ToFloat(const Value& v, const CallArgs& args) {
  const Value* fallback = args.Get(0, "default");
  if (v.is_number()) return Value(v.ToDouble());
  if (v.is_string()) {
    try {
      size_t used = 0;
      const std::string s = PyStrip(v.as_string(), std::nullopt, true, true);
      const double d = std::stod(s, &used);
      if (used == s.size()) return Value(d);
    } catch (const std::exception&) {
    }
  }
  return fallback ? *fallback : Value(0.0);
}

Value Round(const Value& v, const CallArgs& args) {
  const Value* precision = args.Get(0, "precision");
  const std::string method = StringArg(args, 1, "method", "common");
  const double scale = std::pow(10.0, precision ? static_cast<double>(precision->as_int()) : 0.0);
  const double x = v.ToDouble() * scale;
  const double r = method == "ceil" ? std::ceil(x) : method == "floor" ? std::floor(x) : std::round(x);
  return Value(r / scale);
}

Value MinMax(const Value& seq, const CallArgs& args, bool want_max) {
  const bool case_sensitive = BoolArg(args, 0, "case_sensitive", false);
  const Value* attribute = args.Get(1, "attribute");
  List items = Iterate(seq);
  if (items.empty()) return Value::MakeUndefined("No aggregated item, sequence was empty.");
  auto key = [&](const Value& v) { return SortKey(attribute ? LookupPath(v, PyStr(*attribute)) : v, case_sensitive); };
  const Value* best = &items[0];
  for (const Value& item : items)
    if (want_max ? Less(key(*best), key(item)) : Less(key(item), key(*best))) best = &item;
  return *best;
}

Value Unique(const Value& seq, const CallArgs& args) {
  const bool case_sensitive = BoolArg(args, 0, "case_sensitive", false);
  const Value* attribute = args.Get(1, "attribute");
  List out, seen;
  for (const Value& item : Iterate(seq)) {
    Value key = SortKey(attribute ? LookupPath(item, PyStr(*attribute)) : item, case_sensitive);
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return Equal(s, key); })) continue;
    seen.push_back(key);
    out.push_back(item);
  }
  return Value::FromList(std::move(out));
}

}  // namespace

Value ApplyFilter(const std::string& name, const Value& v, const CallArgs& args) {
  if (name == "default" || name == "d") {
    const Value* fallback = args.Get(0, "default_value");
    const bool boolean = BoolArg(args, 1, "boolean", false);
    if (v.is_undefined() || (boolean && !v.Truthy())) return fallback ? *fallback : Value(std::string());
    return v;
  }
  if (name == "safe") return v.is_markup() ? v : Value::MakeMarkup(PyStr(v));
  if (name == "string") return Value(PyStr(v));
  if (name == "trim") return Value(PyStrip(PyStr(v), args.Get(0, "chars") ? std::optional(PyStr(*args.Get(0, "chars")))
                                                                           : std::nullopt, true, true));
  if (name == "upper") return Value(AsciiUpper(PyStr(v)));
  if (name == "lower") return Value(AsciiLower(PyStr(v)));
  if (name == "capitalize") return Value(PyCapitalize(PyStr(v)));
  if (name == "title") return Value(PyTitle(PyStr(v)));
  if (name == "escape" || name == "e") return v.is_markup() ? v : Value::MakeMarkup(HtmlEscape(PyStr(v)));
  if (name == "indent") return Indent(v, args);
  if (name == "tojson") return ToJson(v, args);
  if (name == "int") return ToInt(v, args);
  if (name == "float") return ToFloat(v, args);
  if (name == "round") return Round(v, args);
  if (name == "abs") {
    if (v.is_int()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    return Value(std::fabs(v.ToDouble()));
  }
  if (name == "length" || name == "count") return Value(Length(v));
  if (name == "wordcount") return Value(static_cast<int64_t>(PySplit(PyStr(v), std::nullopt, -1).size()));
  if (name == "replace") {
    const Value* count = args.Get(2, "count");
    return Value(PyReplace(PyStr(v), StringArg(args, 0, "old", ""), StringArg(args, 1, "new", ""),
                           count && !count->is_none() ? count->as_int() : -1));
  }
  if (name == "list") return Value::FromList(Iterate(v));
  if (name == "first") {
    List items = Iterate(v);
    return items.empty() ? Value::MakeUndefined("No first item, sequence was empty.") : items.front();
  }
  if (name == "last") {
    List items = Iterate(v);
    return items.empty() ? Value::MakeUndefined("No last item, sequence was empty.") : items.back();
  }
  if (name == "reverse") {
    if (v.is_string()) return GetSlice(v, Value(), Value(), Value(int64_t{-1}));
    List items = Iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::FromList(std::move(items));
  }
  if (name == "join") {
    const std::string sep = StringArg(args, 0, "d", "");
    const Value* attribute = args.Get(1, "attribute");
    std::string out;
    bool first = true;
    for (const Value& item : Iterate(v)) {
      if (!first) out += sep;
      first = false;
      out += PyStr(attribute ? LookupPath(item, PyStr(*attribute)) : item);
    }
    return Value(std::move(out));
  }
  if (name == "items") {
    if (v.is_undefined()) return Value::FromList({});
    if (!v.is_dict()) throw TemplateError("items: expected a dict, got " + std::string(v.TypeName()));
    List out;
    for (const auto& [k, e] : v.dict().entries) out.push_back(Value::FromList({Value(k), e}));
    return Value::FromList(std::move(out));
  }
  if (name == "dictsort") return DictSort(v, args);
  if (name == "sort") return Sort(v, args);
  if (name == "unique") return Unique(v, args);
  if (name == "min" || name == "max") return MinMax(v, args, name == "max");
  if (name == "sum") {
    const Value* attribute = args.Get(0, "attribute");
    const Value* start = args.Get(1, "start");
    Value total = start ? *start : Value(int64_t{0});
    for (const Value& item : Iterate(v)) total = BinaryOp("+", total, attribute ? LookupPath(item, PyStr(*attribute)) : item);
    return total;
  }
  if (name == "select" || name == "reject") return Select(v, args, false, name == "select");
  if (name == "selectattr" || name == "rejectattr") return Select(v, args, true, name == "selectattr");
  if (name == "map") return Map(v, args);
  if (name == "attr") return GetAttribute(v, StringArg(args, 0, "name", ""));
  if (name == "center") {
    const Value* width = args.Get(0, "width");
    const std::string s = PyStr(v);
    const int64_t w = width ? width->as_int() : 80, n = Length(Value(s));
    if (w <= n) return Value(s);
    const int64_t left = (w - n) / 2 + ((w - n) % 2 & w % 2);  // Python's str.center rounding
    return Value(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(w - n - left), ' '));
  }
  throw TemplateError("No filter named '" + name + "'.");
}

}  // namespace ridge::jinja
