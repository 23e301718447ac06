#pragma once
// The parsed template: expressions and statements as plain data, evaluated
// by renderer.cc. Every node keeps the source line for error messages.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ridge/jinja/value.h"

namespace ridge::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;
struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Argument {
  std::string name;  // empty: positional
  ExprPtr value;
};

enum class ExprKind {
  kLiteral,    // value
  kName,       // name
  kList,       // items (tuples too)
  kDict,       // items as key, value pairs
  kAttribute,  // object.name
  kIndex,      // object[items[0]]
  kSlice,      // object[a:b:c], absent parts null
  kCall,       // object(args)
  kFilter,     // object | name(args)
  kTest,       // object is [not] name(args)
  kUnary,      // op: "-", "+", "not"
  kBinary,     // op: + - * / // % ** ~ == != < <= > >= in, "not in", and, or
  kCondition,  // items[1] if items[0] else items[2] (absent: Undefined)
  kCompareChain,  // items[0] args[0].name items[1] args[1].name items[2] ...: a < b < c is (a < b) and (b < c)
};

struct Expr {
  ExprKind kind;
  int line = 0;
  Value value;
  std::string name;  // name, attribute, filter, test or operator
  bool negated = false;
  ExprPtr object;
  std::vector<ExprPtr> items;  // list items; dict keys and values interleaved; slice/condition parts
  std::vector<Argument> args;
};

enum class StmtKind {
  kText,       // text
  kOutput,     // {{ expr }}
  kIf,         // conditions[i] → bodies[i]; else_body
  kFor,        // for targets in expr [if condition] body [else else_body]
  kSet,        // set targets = expr; set target.attribute = expr
  kSetBlock,   // {% set target %}body{% endset %}
  kMacro,      // macro name(params=defaults) body
  kFilterBlock,// {% filter f %}body{% endfilter %}: expr is the filter chain over a kName "__body__"
  kBreak,
  kContinue,
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr condition;
  std::vector<std::string> targets;
  std::string attribute;  // set ns.attribute = ...
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
  Body body;
  Body else_body;
  std::vector<std::pair<std::string, ExprPtr>> params;  // macro parameters, default null when none
};

}  // namespace ridge::jinja
