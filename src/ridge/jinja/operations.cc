#include "ridge/jinja/operations.h"

#include <algorithm>
#include <cmath>

#include "ridge/jinja/error.h"
#include "ridge/jinja/methods.h"
#include "ridge/jinja/python_text.h"
#include "ridge/jinja/utf8.h"

namespace ridge::jinja {
namespace {

std::string ObjectName(const Value& v) { return std::string("'") + v.TypeName() + " object'"; }

int64_t AsIndex(const Value& v) {
  if (v.is_int()) return v.as_int();
  if (v.is_bool()) return v.as_bool();
  throw TemplateError(std::string("indices must be integers, not ") + v.TypeName());
}

[[noreturn]] void Unsupported(const std::string& op, const Value& a, const Value& b) {
  a.Defined();
  b.Defined();
  throw TemplateError("unsupported operand type(s) for " + op + ": '" + a.TypeName() + "' and '" + b.TypeName() +
                      "'");
}

Value Repeat(const Value& seq, int64_t n) {
  if (n < 0) n = 0;
  if (static_cast<double>(n) * static_cast<double>(Length(seq)) > 16e6)
    throw TemplateError("sequence repetition too large");
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.as_string();
    return Value(std::move(out));
  }
  List out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.list().begin(), seq.list().end());
  return Value::FromList(std::move(out));
}

}  // namespace

Value GetAttribute(const Value& object, const std::string& name) {
  object.Defined();
  if (HasMethod(object, name)) return BindMethod(object, name);
  if (object.is_dict()) {
    if (const Value* v = object.dict().Find(name)) return *v;
  }
  return Value::MakeUndefined(ObjectName(object) + " has no attribute '" + name + "'");
}

Value GetItem(const Value& object, const Value& key) {
  object.Defined();
  if (object.is_dict()) {
    if (key.is_string()) {
      if (const Value* v = object.dict().Find(key.as_string())) return *v;
      if (HasMethod(object, key.as_string())) return BindMethod(object, key.as_string());
    }
    return Value::MakeUndefined(ObjectName(object) + " has no attribute '" + PyStr(key) + "'");
  }
  if (object.is_list() || object.is_string()) {
    if (key.is_string()) return GetAttribute(object, key.as_string());
    if (!key.is_int() && !key.is_bool()) {
      key.Defined();
      throw TemplateError(std::string(object.is_list() ? "list" : "string") + " indices must be integers, not " +
                          key.TypeName());
    }
    const int64_t n = Length(object);
    int64_t i = AsIndex(key);
    if (i < 0) i += n;
    if (i < 0 || i >= n) return Value::MakeUndefined(ObjectName(object) + " has no element " + PyStr(key));
    if (object.is_list()) return object.list()[static_cast<size_t>(i)];
    const std::vector<size_t> off = CodePointOffsets(object.as_string());
    return Value(object.as_string().substr(off[i], off[i + 1] - off[i]));
  }
  if (key.is_string()) return GetAttribute(object, key.as_string());
  return Value::MakeUndefined(ObjectName(object) + " has no element " + PyStr(key));
}

Value GetSlice(const Value& object, const Value& start, const Value& stop, const Value& step) {
  object.Defined();
  if (!object.is_list() && !object.is_string())
    throw TemplateError(std::string("'") + object.TypeName() + "' object is not subscriptable");
  const int64_t n = Length(object);
  auto given = [](const Value& v) { return !v.is_undefined() && !v.is_none(); };
  const int64_t st = given(step) ? AsIndex(step) : 1;
  if (st == 0) throw TemplateError("slice step cannot be zero");
  auto clamp = [&](const Value& v, int64_t fallback) {
    if (!given(v)) return fallback;
    int64_t i = AsIndex(v);
    if (i < 0) i += n;
    if (st > 0) return std::clamp<int64_t>(i, 0, n);
    return std::clamp<int64_t>(i, -1, n - 1);
  };
  const int64_t b = clamp(start, st > 0 ? 0 : n - 1);
  const int64_t e = clamp(stop, st > 0 ? n : -1);
  std::vector<int64_t> picks;
  for (int64_t i = b; st > 0 ? i < e : i > e; i += st) picks.push_back(i);
  if (object.is_list()) {
    List out;
    for (int64_t i : picks) out.push_back(object.list()[static_cast<size_t>(i)]);
    return Value::FromList(std::move(out));
  }
  const std::vector<size_t> off = CodePointOffsets(object.as_string());
  std::string out;
  for (int64_t i : picks) out += object.as_string().substr(off[i], off[i + 1] - off[i]);
  return Value(std::move(out));
}

Value BinaryOp(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Value(PyStr(a) + PyStr(b));
  if (op == "==") return Value(Equal(a, b));
  if (op == "!=") return Value(!Equal(a, b));
  if (op == "<") return Value(Less(a, b));
  if (op == ">") return Value(Less(b, a));
  if (op == "<=") return Value(!Less(b, a));
  if (op == ">=") return Value(!Less(a, b));
  if (op == "in") return Value(Contains(b, a));
  if (op == "not in") return Value(!Contains(b, a));
  const bool ints = (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
  auto ival = [](const Value& v) { return v.is_bool() ? int64_t{v.as_bool()} : v.as_int(); };
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      if (a.is_markup() || b.is_markup())  // Markup + str escapes the str
        return Value::MakeMarkup((a.is_markup() ? a.as_string() : HtmlEscape(a.as_string())) +
                                 (b.is_markup() ? b.as_string() : HtmlEscape(b.as_string())));
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_list() && b.is_list()) {
      List out = a.list();
      out.insert(out.end(), b.list().begin(), b.list().end());
      return Value::FromList(std::move(out));
    }
    if (ints) return Value(ival(a) + ival(b));
    if (a.is_number() && b.is_number()) return Value(a.ToDouble() + b.ToDouble());
    Unsupported(op, a, b);
  }
  if (op == "-") {
    if (ints) return Value(ival(a) - ival(b));
    if (a.is_number() && b.is_number()) return Value(a.ToDouble() - b.ToDouble());
    Unsupported(op, a, b);
  }
  if (op == "*") {
    if (ints) return Value(ival(a) * ival(b));
    if (a.is_number() && b.is_number()) return Value(a.ToDouble() * b.ToDouble());
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return Repeat(a, ival(b));
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return Repeat(b, ival(a));
    Unsupported(op, a, b);
  }
  if (op == "/" || op == "//" || op == "%") {
    if (!a.is_number() || !b.is_number()) Unsupported(op, a, b);
    if (b.ToDouble() == 0.0) throw TemplateError(op == "%" ? "integer modulo by zero" : "division by zero");
    if (op == "/") return Value(a.ToDouble() / b.ToDouble());
    if (ints) {
      const int64_t x = ival(a), y = ival(b);
      int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {
        --q;
        r += y;
      }
      return op == "//" ? Value(q) : Value(r);
    }
    const double x = a.ToDouble(), y = b.ToDouble();
    const double q = std::floor(x / y);
    return op == "//" ? Value(q) : Value(x - q * y);
  }
  if (op == "**") {
    if (ints && ival(b) >= 0) {
      int64_t r = 1;
      for (int64_t i = 0; i < ival(b); ++i) {
        if (__builtin_mul_overflow(r, ival(a), &r)) throw TemplateError("integer power too large");
      }
      return Value(r);
    }
    if (a.is_number() && b.is_number()) return Value(std::pow(a.ToDouble(), b.ToDouble()));
    Unsupported(op, a, b);
  }
  throw TemplateError("unknown operator " + op);
}

bool Contains(const Value& container, const Value& item) {
  switch (container.kind()) {
    case Value::Kind::kUndefined: return false;
    case Value::Kind::kString:
      if (!item.is_string())
        throw TemplateError(std::string("'in <string>' requires string as left operand, not ") + item.TypeName());
      return container.as_string().find(item.as_string()) != std::string::npos;
    case Value::Kind::kList:
      for (const Value& v : container.list())
        if (Equal(v, item)) return true;
      return false;
    case Value::Kind::kDict: return item.is_string() && container.dict().Find(item.as_string()) != nullptr;
    default:
      throw TemplateError(std::string("argument of type '") + container.TypeName() + "' is not iterable");
  }
}

std::vector<Value> Iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return {};
    case Value::Kind::kList: return v.list();
    case Value::Kind::kDict: {
      std::vector<Value> keys;
      for (const auto& [k, e] : v.dict().entries) keys.emplace_back(k);
      return keys;
    }
    case Value::Kind::kString: {
      std::vector<Value> chars;
      const std::vector<size_t> off = CodePointOffsets(v.as_string());
      for (size_t k = 0; k + 1 < off.size(); ++k) chars.emplace_back(v.as_string().substr(off[k], off[k + 1] - off[k]));
      return chars;
    }
    default: throw TemplateError(std::string("'") + v.TypeName() + "' object is not iterable");
  }
}

int64_t Length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return 0;
    case Value::Kind::kString: return static_cast<int64_t>(CodePointOffsets(v.as_string()).size() - 1);
    case Value::Kind::kList: return static_cast<int64_t>(v.list().size());
    case Value::Kind::kDict: return static_cast<int64_t>(v.dict().entries.size());
    default: throw TemplateError(std::string("object of type '") + v.TypeName() + "' has no len()");
  }
}

}  // namespace ridge::jinja
