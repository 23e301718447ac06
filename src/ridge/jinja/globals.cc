#include "ridge/jinja/globals.h"

#include <memory>

#include "ridge/jinja/error.h"
#include "ridge/jinja/python_text.h"

namespace ridge::jinja {
namespace {

Value Function(std::string name, std::function<Value(const CallArgs&)> call) {
  auto c = std::make_shared<Callable>();
  c->name = std::move(name);
  c->call = std::move(call);
  return Value(std::move(c));
}

std::shared_ptr<Dict> MakeDict(const CallArgs& args, bool is_namespace) {
  auto d = std::make_shared<Dict>();
  d->is_namespace = is_namespace;
  for (const Value& p : args.positional) {
    if (!p.is_dict()) throw TemplateError("expected a dict as positional argument");
    for (const auto& [k, v] : p.dict().entries) d->Set(k, v);
  }
  for (const auto& [k, v] : args.keywords) d->Set(k, v);
  return d;
}

}  // namespace

std::unordered_map<std::string, Value> MakeGlobals(const GlobalsOptions& options) {
  std::unordered_map<std::string, Value> g;
  g["raise_exception"] = Function("raise_exception", [](const CallArgs& args) -> Value {
    const Value* message = args.Get(0, "message");
    throw TemplateRaised(message ? PyStr(*message) : std::string("raise_exception called"));
  });
  g["strftime_now"] = Function("strftime_now", [now = options.now](const CallArgs& args) -> Value {
    const Value* format = args.Get(0, "format");
    if (!format || !format->is_string()) throw TemplateError("strftime_now needs a format string");
    std::tm tm{};
    gmtime_r(&now, &tm);
    char buf[512];
    const size_t n = std::strftime(buf, sizeof(buf), format->as_string().c_str(), &tm);
    if (n == 0 && !format->as_string().empty()) throw TemplateError("strftime_now: format too long");
    return Value(std::string(buf, n));
  });
  g["namespace"] = Function("namespace", [created = options.created_namespaces](const CallArgs& args) {
    std::shared_ptr<Dict> ns = MakeDict(args, true);
    created->push_back(ns);
    return Value(std::move(ns));
  });
  g["dict"] = Function("dict", [](const CallArgs& args) { return Value(MakeDict(args, false)); });
  g["range"] = Function("range", [max = options.max_range_items](const CallArgs& args) -> Value {
    int64_t start = 0, stop = 0, step = 1;
    auto num = [](const Value& v) {
      if (!v.is_int()) throw TemplateError(std::string("range() needs integers, got ") + v.TypeName());
      return v.as_int();
    };
    const auto& p = args.positional;
    if (p.size() == 1) {
      stop = num(p[0]);
    } else if (p.size() == 2 || p.size() == 3) {
      start = num(p[0]);
      stop = num(p[1]);
      if (p.size() == 3) step = num(p[2]);
    } else {
      throw TemplateError("range() takes 1 to 3 arguments");
    }
    if (step == 0) throw TemplateError("range() arg 3 must not be zero");
    List out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (out.size() >= max) throw TemplateError("range() longer than " + std::to_string(max) + " items");
      out.emplace_back(i);
    }
    return Value::FromList(std::move(out));
  });
  return g;
}

}  // namespace ridge::jinja
