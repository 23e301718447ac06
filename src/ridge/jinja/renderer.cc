#include "ridge/jinja/renderer.h"

#include "ridge/jinja/builtin_filters.h"
#include "ridge/jinja/builtin_tests.h"
#include "ridge/jinja/error.h"
#include "ridge/jinja/operations.h"
#include "ridge/jinja/python_text.h"

namespace ridge::jinja {
namespace {

std::shared_ptr<Frame> Child(const std::shared_ptr<Frame>& parent) {
  auto f = std::make_shared<Frame>();
  f->parent = parent;
  return f;
}

}  // namespace

Renderer::Renderer(const RenderLimits& limits, std::unordered_map<std::string, Value> globals)
    : limits_(limits), globals_(std::move(globals)) {}

std::string Renderer::Run(const Body& body, const std::shared_ptr<Frame>& frame) {
  std::string out;
  RenderBody(body, frame, out);
  return out;
}

void Renderer::Append(std::string& out, std::string_view text) {
  bytes_written_ += text.size();
  if (bytes_written_ > limits_.max_output_bytes)
    throw TemplateError("template output exceeds " + std::to_string(limits_.max_output_bytes) + " bytes");
  out += text;
}

Renderer::Flow Renderer::RenderBody(const Body& body, const std::shared_ptr<Frame>& frame, std::string& out) {
  for (const StmtPtr& s : body) {
    const Flow flow = RenderStmt(*s, frame, out);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Renderer::Flow Renderer::RenderStmt(const Stmt& s, const std::shared_ptr<Frame>& frame, std::string& out) {
  try {
    switch (s.kind) {
      case StmtKind::kText: Append(out, s.text); return Flow::kNormal;
      case StmtKind::kOutput: Append(out, PyStr(Eval(*s.expr, frame))); return Flow::kNormal;
      case StmtKind::kIf:
        for (size_t i = 0; i < s.conditions.size(); ++i)
          if (Eval(*s.conditions[i], frame).Truthy()) return RenderBody(s.bodies[i], frame, out);
        return RenderBody(s.else_body, frame, out);
      case StmtKind::kFor: return RenderFor(s, frame, out);
      case StmtKind::kSet: Assign(s, frame, Eval(*s.expr, frame)); return Flow::kNormal;
      case StmtKind::kSetBlock: {
        std::string text;
        RenderBody(s.body, frame, text);
        Assign(s, frame, Value(std::move(text)));
        return Flow::kNormal;
      }
      case StmtKind::kMacro: frame->vars[s.text] = DefineMacro(s, frame); return Flow::kNormal;
      case StmtKind::kFilterBlock: {
        std::string text;
        RenderBody(s.body, frame, text);
        auto scope = Child(frame);
        scope->vars["__body__"] = Value(std::move(text));
        Append(out, PyStr(Eval(*s.expr, scope)));
        return Flow::kNormal;
      }
      case StmtKind::kBreak: return Flow::kBreak;
      case StmtKind::kContinue: return Flow::kContinue;
    }
  } catch (const TemplateRaised&) {
    throw;
  } catch (const TemplateError& e) {
    if (e.line() == 0) throw TemplateError(e.what(), s.line);
    throw;
  }
  return Flow::kNormal;
}

Renderer::Flow Renderer::RenderFor(const Stmt& s, const std::shared_ptr<Frame>& frame, std::string& out) {
  const Value iterable = Eval(*s.expr, frame);
  if (iterable.is_none()) throw TemplateError("'NoneType' object is not iterable");
  std::vector<Value> items = Iterate(iterable);
  auto scope = Child(frame);
  auto bind = [&](const std::shared_ptr<Frame>& into, const Value& item) {
    if (s.targets.size() == 1) {
      into->vars[s.targets[0]] = item;
      return;
    }
    std::vector<Value> parts = Iterate(item);
    if (parts.size() != s.targets.size())
      throw TemplateError("cannot unpack " + std::to_string(parts.size()) + " values into " +
                          std::to_string(s.targets.size()) + " loop variables");
    for (size_t i = 0; i < parts.size(); ++i) into->vars[s.targets[i]] = parts[i];
  };
  if (s.condition) {  // `for x in xs if cond`: filtered first, so loop.length counts the kept items
    std::vector<Value> kept;
    for (const Value& item : items) {
      if (++iterations_ > limits_.max_loop_iterations) break;
      bind(scope, item);
      if (Eval(*s.condition, scope).Truthy()) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) return RenderBody(s.else_body, frame, out);
  const auto n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    if (++iterations_ > limits_.max_loop_iterations)
      throw TemplateError("loops ran more than " + std::to_string(limits_.max_loop_iterations) + " iterations");
    auto iteration = Child(frame);
    bind(iteration, items[static_cast<size_t>(i)]);
    auto loop = std::make_shared<Dict>();
    loop->Set("index", Value(i + 1));
    loop->Set("index0", Value(i));
    loop->Set("revindex", Value(n - i));
    loop->Set("revindex0", Value(n - i - 1));
    loop->Set("first", Value(i == 0));
    loop->Set("last", Value(i == n - 1));
    loop->Set("length", Value(n));
    loop->Set("depth", Value(int64_t{1}));
    loop->Set("depth0", Value(int64_t{0}));
    loop->Set("previtem", i > 0 ? items[static_cast<size_t>(i - 1)] : Value::MakeUndefined("there is no previous item"));
    loop->Set("nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)] : Value::MakeUndefined("there is no next item"));
    auto cycle = std::make_shared<Callable>();
    cycle->name = "loop.cycle";
    cycle->call = [i](const CallArgs& args) -> Value {
      if (args.positional.empty()) throw TemplateError("no items for cycling given");
      return args.positional[static_cast<size_t>(i) % args.positional.size()];
    };
    loop->Set("cycle", Value(std::move(cycle)));
    iteration->vars["loop"] = Value(std::move(loop));
    if (RenderBody(s.body, iteration, out) == Flow::kBreak) break;
  }
  return Flow::kNormal;
}

void Renderer::Assign(const Stmt& s, const std::shared_ptr<Frame>& frame, Value value) {
  if (!s.attribute.empty()) {
    Value target = Lookup(s.targets[0], frame);
    if (!target.is_dict() || !target.dict().is_namespace)
      throw TemplateError("cannot assign attribute on non-namespace object");
    target.dict().Set(s.attribute, std::move(value));
    return;
  }
  if (s.targets.size() == 1) {
    frame->vars[s.targets[0]] = std::move(value);
    return;
  }
  std::vector<Value> parts = Iterate(value);
  if (parts.size() != s.targets.size())
    throw TemplateError("cannot unpack " + std::to_string(parts.size()) + " values into " +
                        std::to_string(s.targets.size()) + " names");
  for (size_t i = 0; i < parts.size(); ++i) frame->vars[s.targets[i]] = parts[i];
}

Value Renderer::DefineMacro(const Stmt& s, const std::shared_ptr<Frame>& frame) {
  auto c = std::make_shared<Callable>();
  c->name = s.text;
  // The frame holds the macro and the macro its frame: a cycle of shared
  // pointers that lives until the render ends; a weak pointer breaks it.
  std::weak_ptr<Frame> closure = frame;
  c->call = [this, &s, closure](const CallArgs& args) -> Value {
    if (call_depth_ >= limits_.max_call_depth)
      throw TemplateError("macro calls nested deeper than " + std::to_string(limits_.max_call_depth));
    auto scope = Child(closure.lock());
    if (args.positional.size() > s.params.size())
      throw TemplateError("macro '" + s.text + "' takes not more than " + std::to_string(s.params.size()) +
                          " argument(s)");
    for (size_t i = 0; i < s.params.size(); ++i) {
      const auto& [name, def] = s.params[i];
      if (i < args.positional.size()) {
        scope->vars[name] = args.positional[i];
      } else if (const Value* kw = args.Get(SIZE_MAX, name)) {
        scope->vars[name] = *kw;
      } else {
        scope->vars[name] = def ? Eval(*def, scope) : Value::MakeUndefined("parameter '" + name + "' was not provided");
      }
    }
    for (const auto& [k, v] : args.keywords) {
      bool known = false;
      for (const auto& p : s.params) known = known || p.first == k;
      if (!known) throw TemplateError("macro '" + s.text + "' takes no keyword argument '" + k + "'");
    }
    ++call_depth_;
    std::string text;
    try {
      RenderBody(s.body, scope, text);
    } catch (...) {
      --call_depth_;
      throw;
    }
    --call_depth_;
    return Value(std::move(text));
  };
  return Value(std::move(c));
}

Value Renderer::Lookup(const std::string& name, const std::shared_ptr<Frame>& frame) const {
  for (const Frame* f = frame.get(); f; f = f->parent.get()) {
    auto it = f->vars.find(name);
    if (it != f->vars.end()) return it->second;
  }
  auto it = globals_.find(name);
  if (it != globals_.end()) return it->second;
  return Value::MakeUndefined("'" + name + "' is undefined");
}

CallArgs Renderer::EvalArgs(const std::vector<Argument>& args, const std::shared_ptr<Frame>& frame) {
  CallArgs out;
  for (const Argument& a : args) {
    if (a.name.empty()) {
      out.positional.push_back(Eval(*a.value, frame));
    } else {
      out.keywords.emplace_back(a.name, Eval(*a.value, frame));
    }
  }
  return out;
}

const Value& Renderer::Checked(const Value& v) const {
  const size_t size = v.is_string() ? v.as_string().size() : v.is_list() ? v.list().size() : 0;
  if (size > limits_.max_output_bytes)
    throw TemplateError("a value built by the template exceeds " + std::to_string(limits_.max_output_bytes) +
                        " bytes or items");
  return v;
}

Value Renderer::Eval(const Expr& e, const std::shared_ptr<Frame>& frame) {
  try {
    return EvalInner(e, frame);
  } catch (const TemplateRaised&) {
    throw;
  } catch (const TemplateError& err) {
    if (err.line() == 0) throw TemplateError(err.what(), e.line);
    throw;
  }
}

Value Renderer::EvalInner(const Expr& e, const std::shared_ptr<Frame>& frame) {
  switch (e.kind) {
    case ExprKind::kLiteral: return e.value;
    case ExprKind::kName: return Lookup(e.name, frame);
    case ExprKind::kList: {
      List items;
      for (const ExprPtr& item : e.items) items.push_back(Eval(*item, frame));
      return Value::FromList(std::move(items));
    }
    case ExprKind::kDict: {
      auto d = std::make_shared<Dict>();
      for (size_t i = 0; i + 1 < e.items.size(); i += 2)
        d->Set(PyStr(Eval(*e.items[i], frame)), Eval(*e.items[i + 1], frame));
      return Value(std::move(d));
    }
    case ExprKind::kAttribute: return GetAttribute(Eval(*e.object, frame), e.name);
    case ExprKind::kIndex: return GetItem(Eval(*e.object, frame), Eval(*e.items[0], frame));
    case ExprKind::kSlice: {
      auto part = [&](const ExprPtr& p) { return p ? Eval(*p, frame) : Value::MakeNone(); };
      return GetSlice(Eval(*e.object, frame), part(e.items[0]), part(e.items[1]), part(e.items[2]));
    }
    case ExprKind::kCall: {
      const Value callee = Eval(*e.object, frame);
      callee.Defined();
      if (!callee.is_callable()) throw TemplateError(std::string("'") + callee.TypeName() + "' object is not callable");
      return Checked(callee.callable().call(EvalArgs(e.args, frame)));
    }
    case ExprKind::kFilter:
      return Checked(ApplyFilter(e.name, Eval(*e.object, frame), EvalArgs(e.args, frame)));
    case ExprKind::kTest:
      return Value(ApplyTest(e.name, Eval(*e.object, frame), EvalArgs(e.args, frame)) != e.negated);
    case ExprKind::kUnary: {
      const Value v = Eval(*e.object, frame);
      if (e.name == "not") return Value(!v.Truthy());
      v.Defined();
      if (e.name == "-") {
        if (v.is_int()) return Value(-v.as_int());
        if (v.is_bool()) return Value(-int64_t{v.as_bool()});
        return Value(-v.ToDouble());
      }
      if (!v.is_number()) throw TemplateError(std::string("bad operand type for unary +: '") + v.TypeName() + "'");
      return v;
    }
    case ExprKind::kBinary: {
      const Value a = Eval(*e.items[0], frame);
      if (e.name == "and") return a.Truthy() ? Eval(*e.items[1], frame) : a;
      if (e.name == "or") return a.Truthy() ? a : Eval(*e.items[1], frame);
      return Checked(BinaryOp(e.name, a, Eval(*e.items[1], frame)));
    }
    case ExprKind::kCompareChain: {
      Value left = Eval(*e.items[0], frame);
      for (size_t i = 0; i < e.args.size(); ++i) {
        Value right = Eval(*e.items[i + 1], frame);
        if (!BinaryOp(e.args[i].name, left, right).Truthy()) return Value(false);
        left = std::move(right);
      }
      return Value(true);
    }
    case ExprKind::kCondition:
      if (Eval(*e.items[0], frame).Truthy()) return Eval(*e.items[1], frame);
      return e.items[2] ? Eval(*e.items[2], frame) : Value::MakeUndefined("the condition was false and there is no else");
  }
  return Value();
}

}  // namespace ridge::jinja
