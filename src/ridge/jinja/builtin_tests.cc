#include "ridge/jinja/builtin_tests.h"

#include "ridge/jinja/error.h"
#include "ridge/jinja/operations.h"

namespace ridge::jinja {
namespace {

const Value& Arg(const CallArgs& args, const std::string& test) {
  const Value* v = args.Get(0, "other");
  if (!v) throw TemplateError("test '" + test + "' needs an argument");
  return *v;
}

}  // namespace

bool ApplyTest(const std::string& name, const Value& v, const CallArgs& args) {
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "string") return v.is_string();
  if (name == "number") return v.is_int() || v.is_float() || v.is_bool();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "mapping") return v.is_dict();
  if (name == "sequence") return v.is_list() || v.is_string() || v.is_dict();
  if (name == "iterable") return v.is_list() || v.is_string() || v.is_dict() || v.is_undefined();
  if (name == "callable") return v.is_callable();
  if (name == "lower" || name == "upper") {
    if (!v.is_string()) return false;
    bool cased = false;
    for (char c : v.as_string()) {
      if (name == "lower" ? (c >= 'A' && c <= 'Z') : (c >= 'a' && c <= 'z')) return false;
      cased = cased || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
    }
    return cased;
  }
  if (name == "odd" || name == "even") {
    if (!v.is_int()) throw TemplateError("test '" + name + "' needs an integer");
    return (v.as_int() % 2 != 0) == (name == "odd");
  }
  if (name == "divisibleby") {
    const Value& d = Arg(args, name);
    if (!v.is_int() || !d.is_int() || d.as_int() == 0) throw TemplateError("divisibleby needs non-zero integers");
    return v.as_int() % d.as_int() == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return Equal(v, Arg(args, name));
  if (name == "ne" || name == "!=") return !Equal(v, Arg(args, name));
  if (name == "lt" || name == "lessthan" || name == "<") return Less(v, Arg(args, name));
  if (name == "le" || name == "<=") return !Less(Arg(args, name), v);
  if (name == "gt" || name == "greaterthan" || name == ">") return Less(Arg(args, name), v);
  if (name == "ge" || name == ">=") return !Less(v, Arg(args, name));
  if (name == "in") return Contains(Arg(args, name), v);
  if (name == "sameas") {
    const Value& o = Arg(args, name);
    if (v.kind() != o.kind()) return false;
    if (v.is_none() || v.is_undefined()) return true;
    if (v.is_bool()) return v.as_bool() == o.as_bool();
    if (v.is_list()) return &v.list() == &o.list();
    if (v.is_dict()) return &v.dict() == &o.dict();
    return Equal(v, o);
  }
  throw TemplateError("no test named '" + name + "'");
}

}  // namespace ridge::jinja
