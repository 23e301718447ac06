#pragma once
// Walks the parsed statements and evaluates expressions, with Jinja2's
// scoping: a for loop (and a macro call) gets its own scope, `set` inside it
// does not leak out; if blocks share the enclosing scope; namespace() objects
// carry values out of loops.
#include <memory>
#include <string>
#include <unordered_map>

#include "ridge/jinja/ast.h"
#include "ridge/jinja/template.h"

namespace ridge::jinja {

struct Frame {
  std::unordered_map<std::string, Value> vars;
  std::shared_ptr<Frame> parent;
};

class Renderer {
 public:
  Renderer(const RenderLimits& limits, std::unordered_map<std::string, Value> globals);

  // Renders `body` in `frame`; throws TemplateError with the line.
  std::string Run(const Body& body, const std::shared_ptr<Frame>& frame);

 private:
  enum class Flow { kNormal, kBreak, kContinue };

  Flow RenderBody(const Body& body, const std::shared_ptr<Frame>& frame, std::string& out);
  Flow RenderStmt(const Stmt& s, const std::shared_ptr<Frame>& frame, std::string& out);
  Flow RenderFor(const Stmt& s, const std::shared_ptr<Frame>& frame, std::string& out);
  void Assign(const Stmt& s, const std::shared_ptr<Frame>& frame, Value value);
  Value DefineMacro(const Stmt& s, const std::shared_ptr<Frame>& frame);
  void Append(std::string& out, std::string_view text);

  Value Eval(const Expr& e, const std::shared_ptr<Frame>& frame);
  Value EvalInner(const Expr& e, const std::shared_ptr<Frame>& frame);
  CallArgs EvalArgs(const std::vector<Argument>& args, const std::shared_ptr<Frame>& frame);
  Value Lookup(const std::string& name, const std::shared_ptr<Frame>& frame) const;
  const Value& Checked(const Value& v) const;  // refuses strings and lists over the output limit

  RenderLimits limits_;
  std::unordered_map<std::string, Value> globals_;
  uint64_t bytes_written_ = 0;
  uint64_t iterations_ = 0;
  int call_depth_ = 0;
};

}  // namespace ridge::jinja
