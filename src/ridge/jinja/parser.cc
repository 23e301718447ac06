#include "ridge/jinja/parser.h"

#include <charconv>
#include <initializer_list>

#include "ridge/jinja/error.h"

namespace ridge::jinja {
namespace {

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : t_(tokens) {}

  Body ParseTemplate() {
    Body body = ParseBody({});
    if (Peek().type != TokenType::kEnd) Fail("unexpected '" + Peek().text + "'");
    return body;
  }

 private:
  // --- token helpers ---
  const Token& Peek(size_t ahead = 0) const { return t_[std::min(i_ + ahead, t_.size() - 1)]; }
  const Token& Next() {
    const Token& tok = t_[i_];
    if (i_ + 1 < t_.size()) ++i_;
    return tok;
  }
  [[noreturn]] void Fail(const std::string& message) const { throw TemplateError(message, Peek().line); }
  bool IsOp(const char* op, size_t ahead = 0) const {
    return Peek(ahead).type == TokenType::kOperator && Peek(ahead).text == op;
  }
  bool IsName(const char* name, size_t ahead = 0) const {
    return Peek(ahead).type == TokenType::kName && Peek(ahead).text == name;
  }
  void ExpectOp(const char* op) {
    if (!IsOp(op)) Fail(std::string("expected '") + op + "', got " + Describe(Peek()));
    Next();
  }
  void ExpectName(const char* name) {
    if (!IsName(name)) Fail(std::string("expected '") + name + "', got " + Describe(Peek()));
    Next();
  }
  std::string TakeName() {
    if (Peek().type != TokenType::kName) Fail("expected a name, got " + Describe(Peek()));
    return Next().text;
  }
  void ExpectBlockEnd() {
    if (Peek().type != TokenType::kBlockEnd) Fail("expected end of statement block, got " + Describe(Peek()));
    Next();
  }
  static std::string Describe(const Token& tok) {
    switch (tok.type) {
      case TokenType::kEnd: return "end of template";
      case TokenType::kBlockEnd: return "'%}'";
      case TokenType::kVarEnd: return "'}}'";
      case TokenType::kText: return "text";
      case TokenType::kString: return "a string";
      default: return "'" + tok.text + "'";
    }
  }

  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxParseDepth)
        p_.Fail("template nesting deeper than " + std::to_string(kMaxParseDepth) + " levels");
    }
    ~DepthGuard() { --p_.depth_; }
    Parser& p_;
  };

  ExprPtr Make(ExprKind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }

  // --- statements ---

  // Parses until a block tag whose name is in `ends` (left unconsumed, after
  // its {%) or the end of the tokens (an error when `ends` is not empty).
  Body ParseBody(std::initializer_list<const char*> ends) {
    DepthGuard guard(*this);
    Body body;
    for (;;) {
      const Token& tok = Peek();
      if (tok.type == TokenType::kEnd) {
        if (ends.size() == 0) return body;
        std::string names;
        for (const char* e : ends) names += (names.empty() ? "'" : " or '") + std::string(e) + "'";
        Fail("unexpected end of template, expected " + names);
      }
      if (tok.type == TokenType::kText) {
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kText;
        s->line = tok.line;
        s->text = Next().text;
        body.push_back(std::move(s));
      } else if (tok.type == TokenType::kVarBegin) {
        Next();
        auto s = std::make_unique<Stmt>();
        s->kind = StmtKind::kOutput;
        s->line = tok.line;
        s->expr = ParseExpression(true);
        if (Peek().type != TokenType::kVarEnd) Fail("expected '}}', got " + Describe(Peek()));
        Next();
        body.push_back(std::move(s));
      } else if (tok.type == TokenType::kBlockBegin) {
        for (const char* e : ends)
          if (IsName(e, 1)) {
            Next();
            return body;
          }
        Next();
        body.push_back(ParseStatement());
      } else {
        Fail("unexpected " + Describe(tok));
      }
    }
  }

  StmtPtr ParseStatement() {
    const int line = Peek().line;
    const std::string keyword = TakeName();
    auto s = std::make_unique<Stmt>();
    s->line = line;
    if (keyword == "if") {
      s->kind = StmtKind::kIf;
      s->conditions.push_back(ParseExpression(true));
      ExpectBlockEnd();
      for (;;) {
        s->bodies.push_back(ParseBody({"elif", "else", "endif"}));
        const std::string end = TakeName();
        if (end == "elif") {
          s->conditions.push_back(ParseExpression(true));
          ExpectBlockEnd();
        } else if (end == "else") {
          ExpectBlockEnd();
          s->else_body = ParseBody({"endif"});
          TakeName();
          break;
        } else {
          break;
        }
      }
      ExpectBlockEnd();
    } else if (keyword == "for") {
      s->kind = StmtKind::kFor;
      const bool paren = IsOp("(");
      if (paren) Next();
      s->targets.push_back(TakeName());
      while (IsOp(",")) {
        Next();
        s->targets.push_back(TakeName());
      }
      if (paren) ExpectOp(")");
      ExpectName("in");
      s->expr = ParseExpression(false);
      if (IsName("if")) {
        Next();
        s->condition = ParseExpression(false);
      }
      if (IsName("recursive")) Fail("recursive loops are not supported");
      ExpectBlockEnd();
      s->body = ParseBody({"else", "endfor"});
      if (TakeName() == "else") {
        ExpectBlockEnd();
        s->else_body = ParseBody({"endfor"});
        TakeName();
      }
      ExpectBlockEnd();
    } else if (keyword == "set") {
      s->targets.push_back(TakeName());
      if (IsOp(".")) {
        Next();
        s->attribute = TakeName();
      }
      while (IsOp(",")) {
        Next();
        s->targets.push_back(TakeName());
      }
      if (IsOp("=")) {
        Next();
        s->kind = StmtKind::kSet;
        s->expr = ParseTupleExpression();
        ExpectBlockEnd();
      } else {
        if (s->targets.size() != 1 || !s->attribute.empty()) Fail("expected '='");
        s->kind = StmtKind::kSetBlock;
        ExpectBlockEnd();
        s->body = ParseBody({"endset"});
        TakeName();
        ExpectBlockEnd();
      }
    } else if (keyword == "macro") {
      s->kind = StmtKind::kMacro;
      s->text = TakeName();
      ExpectOp("(");
      while (!IsOp(")")) {
        std::string name = TakeName();
        ExprPtr def;
        if (IsOp("=")) {
          Next();
          def = ParseExpression(true);
        }
        s->params.emplace_back(std::move(name), std::move(def));
        if (!IsOp(")")) ExpectOp(",");
      }
      Next();
      ExpectBlockEnd();
      s->body = ParseBody({"endmacro"});
      TakeName();
      ExpectBlockEnd();
    } else if (keyword == "filter") {
      s->kind = StmtKind::kFilterBlock;
      ExprPtr chain = Make(ExprKind::kName, line);
      chain->name = "__body__";
      do {
        if (IsOp("|")) Next();
        chain = ParseFilter(std::move(chain));
      } while (IsOp("|"));
      s->expr = std::move(chain);
      ExpectBlockEnd();
      s->body = ParseBody({"endfilter"});
      TakeName();
      ExpectBlockEnd();
    } else if (keyword == "break" || keyword == "continue") {
      s->kind = keyword == "break" ? StmtKind::kBreak : StmtKind::kContinue;
      ExpectBlockEnd();
    } else if (keyword == "generation" || keyword == "raw") {
      // transformers' {% generation %} marks assistant text for masks; it renders its body as is.
      s->kind = StmtKind::kIf;
      auto yes = Make(ExprKind::kLiteral, line);
      yes->value = Value(true);
      s->conditions.push_back(std::move(yes));
      ExpectBlockEnd();
      if (keyword == "raw") {
        s->bodies.push_back(ParseBody({"endraw"}));
      } else {
        s->bodies.push_back(ParseBody({"endgeneration"}));
      }
      TakeName();
      ExpectBlockEnd();
    } else {
      throw TemplateError("unknown tag '" + keyword + "'", line);
    }
    return s;
  }

  // --- expressions ---

  // "a, b" at the top of a set: a list.
  ExprPtr ParseTupleExpression() {
    const int line = Peek().line;
    ExprPtr first = ParseExpression(true);
    if (!IsOp(",")) return first;
    ExprPtr list = Make(ExprKind::kList, line);
    list->items.push_back(std::move(first));
    while (IsOp(",")) {
      Next();
      list->items.push_back(ParseExpression(true));
    }
    return list;
  }

  ExprPtr ParseExpression(bool with_condition) {
    DepthGuard guard(*this);
    ExprPtr e = ParseOr();
    if (!with_condition) return e;
    while (IsName("if")) {
      const int line = Next().line;
      ExprPtr cond = Make(ExprKind::kCondition, line);
      ExprPtr test = ParseOr();
      ExprPtr otherwise;
      if (IsName("else")) {
        Next();
        otherwise = ParseExpression(true);
      }
      cond->items.push_back(std::move(test));
      cond->items.push_back(std::move(e));
      cond->items.push_back(std::move(otherwise));
      e = std::move(cond);
    }
    return e;
  }

  ExprPtr Binary(std::string op, ExprPtr a, ExprPtr b, int line) {
    ExprPtr e = Make(ExprKind::kBinary, line);
    e->name = std::move(op);
    e->items.push_back(std::move(a));
    e->items.push_back(std::move(b));
    return e;
  }

  ExprPtr ParseOr() {
    ExprPtr e = ParseAnd();
    while (IsName("or")) {
      const int line = Next().line;
      e = Binary("or", std::move(e), ParseAnd(), line);
    }
    return e;
  }

  ExprPtr ParseAnd() {
    ExprPtr e = ParseNot();
    while (IsName("and")) {
      const int line = Next().line;
      e = Binary("and", std::move(e), ParseNot(), line);
    }
    return e;
  }

  ExprPtr ParseNot() {
    if (IsName("not")) {
      DepthGuard guard(*this);
      ExprPtr e = Make(ExprKind::kUnary, Next().line);
      e->name = "not";
      e->object = ParseNot();
      return e;
    }
    return ParseCompare();
  }

  ExprPtr ParseCompare() {
    const int line = Peek().line;
    std::vector<ExprPtr> operands;
    std::vector<std::string> ops;
    operands.push_back(ParseMath1());
    for (;;) {
      if (Peek().type == TokenType::kOperator &&
          (Peek().text == "==" || Peek().text == "!=" || Peek().text == "<" || Peek().text == "<=" ||
           Peek().text == ">" || Peek().text == ">=")) {
        ops.push_back(Next().text);
      } else if (IsName("in")) {
        Next();
        ops.push_back("in");
      } else if (IsName("not") && IsName("in", 1)) {
        Next();
        Next();
        ops.push_back("not in");
      } else {
        break;
      }
      operands.push_back(ParseMath1());
    }
    if (ops.empty()) return std::move(operands[0]);
    if (ops.size() == 1) return Binary(ops[0], std::move(operands[0]), std::move(operands[1]), line);
    ExprPtr chain = Make(ExprKind::kCompareChain, line);
    chain->items = std::move(operands);
    for (std::string& op : ops) chain->args.push_back(Argument{std::move(op), nullptr});
    return chain;
  }

  ExprPtr ParseMath1() {
    ExprPtr e = ParseConcat();
    while (IsOp("+") || IsOp("-")) {
      const Token& op = Next();
      e = Binary(op.text, std::move(e), ParseConcat(), op.line);
    }
    return e;
  }

  ExprPtr ParseConcat() {
    ExprPtr e = ParseMath2();
    while (IsOp("~")) {
      const int line = Next().line;
      e = Binary("~", std::move(e), ParseMath2(), line);
    }
    return e;
  }

  ExprPtr ParseMath2() {
    ExprPtr e = ParsePow();
    while (IsOp("*") || IsOp("/") || IsOp("//") || IsOp("%")) {
      const Token& op = Next();
      e = Binary(op.text, std::move(e), ParsePow(), op.line);
    }
    return e;
  }

  ExprPtr ParsePow() {
    ExprPtr e = ParseUnary(true);
    while (IsOp("**")) {
      const int line = Next().line;
      e = Binary("**", std::move(e), ParseUnary(true), line);
    }
    return e;
  }

  ExprPtr ParseUnary(bool with_filter) {
    DepthGuard guard(*this);
    ExprPtr e;
    if (IsOp("-") || IsOp("+")) {
      const Token& op = Next();
      e = Make(ExprKind::kUnary, op.line);
      e->name = op.text;
      e->object = ParseUnary(false);
    } else {
      e = ParsePrimary();
    }
    e = ParsePostfix(std::move(e));
    if (!with_filter) return e;
    for (;;) {
      if (IsOp("|")) {
        Next();
        e = ParseFilter(std::move(e));
      } else if (IsName("is")) {
        e = ParseTest(std::move(e));
      } else if (IsOp("(")) {
        e = ParseCall(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr ParseFilter(ExprPtr object) {
    const int line = Peek().line;
    ExprPtr e = Make(ExprKind::kFilter, line);
    e->name = TakeName();
    while (IsOp(".")) {  // dotted filter names are not Jinja's, but keep the error clear
      Fail("unexpected '.' after filter name");
    }
    e->object = std::move(object);
    if (IsOp("(")) e->args = ParseArgs();
    return e;
  }

  ExprPtr ParseTest(ExprPtr object) {
    const int line = Next().line;  // "is"
    ExprPtr e = Make(ExprKind::kTest, line);
    if (IsName("not")) {
      Next();
      e->negated = true;
    }
    e->name = TakeName();
    e->object = std::move(object);
    if (IsOp("(")) {
      e->args = ParseArgs();
    } else {
      const Token& tok = Peek();
      const bool starts_primary =
          tok.type == TokenType::kName || tok.type == TokenType::kString || tok.type == TokenType::kInt ||
          tok.type == TokenType::kFloat || IsOp("[") || IsOp("{");
      if (starts_primary && !IsName("else") && !IsName("or") && !IsName("and")) {
        if (IsName("is")) Fail("You cannot chain multiple tests with is");
        Argument arg;
        arg.value = ParsePostfix(ParsePrimary());
        e->args.push_back(std::move(arg));
      }
    }
    return e;
  }

  ExprPtr ParseCall(ExprPtr callee) {
    ExprPtr e = Make(ExprKind::kCall, Peek().line);
    e->object = std::move(callee);
    e->args = ParseArgs();
    return e;
  }

  std::vector<Argument> ParseArgs() {
    ExpectOp("(");
    std::vector<Argument> args;
    while (!IsOp(")")) {
      Argument arg;
      if (Peek().type == TokenType::kName && IsOp("=", 1)) {
        arg.name = Next().text;
        Next();
      } else if (!args.empty() && !args.back().name.empty()) {
        Fail("positional argument after a keyword argument");
      }
      arg.value = ParseExpression(true);
      args.push_back(std::move(arg));
      if (!IsOp(")")) ExpectOp(",");
    }
    Next();
    return args;
  }

  ExprPtr ParsePostfix(ExprPtr e) {
    for (;;) {
      const int line = Peek().line;
      if (IsOp(".")) {
        Next();
        ExprPtr a = Make(ExprKind::kAttribute, line);
        if (Peek().type == TokenType::kInt) {
          a->kind = ExprKind::kIndex;
          ExprPtr idx = Make(ExprKind::kLiteral, line);
          idx->value = Value(static_cast<int64_t>(std::stoll(Next().text)));
          a->items.push_back(std::move(idx));
        } else {
          a->name = TakeName();
        }
        a->object = std::move(e);
        e = std::move(a);
      } else if (IsOp("[")) {
        Next();
        e = ParseSubscript(std::move(e), line);
      } else if (IsOp("(")) {
        e = ParseCall(std::move(e));
      } else {
        return e;
      }
    }
  }

  ExprPtr ParseSubscript(ExprPtr object, int line) {
    ExprPtr parts[3];
    int part = 0;
    bool is_slice = false;
    while (!IsOp("]")) {
      if (IsOp(":")) {
        Next();
        is_slice = true;
        if (++part > 2) Fail("too many ':' in slice");
        continue;
      }
      if (parts[part]) Fail("expected ']' or ':'");
      parts[part] = ParseExpression(true);
    }
    Next();
    ExprPtr e = Make(is_slice ? ExprKind::kSlice : ExprKind::kIndex, line);
    e->object = std::move(object);
    if (!is_slice) {
      if (!parts[0]) Fail("expected an index");
      e->items.push_back(std::move(parts[0]));
    } else {
      for (auto& p : parts) e->items.push_back(std::move(p));
    }
    return e;
  }

  ExprPtr ParsePrimary() {
    DepthGuard guard(*this);
    const Token& tok = Peek();
    const int line = tok.line;
    switch (tok.type) {
      case TokenType::kName: {
        Next();
        ExprPtr e = Make(ExprKind::kLiteral, line);
        if (tok.text == "true" || tok.text == "True") {
          e->value = Value(true);
        } else if (tok.text == "false" || tok.text == "False") {
          e->value = Value(false);
        } else if (tok.text == "none" || tok.text == "None") {
          e->value = Value::MakeNone();
        } else {
          e->kind = ExprKind::kName;
          e->name = tok.text;
        }
        return e;
      }
      case TokenType::kString: {
        std::string s = Next().text;
        while (Peek().type == TokenType::kString) s += Next().text;  // "a" "b" is "ab"
        ExprPtr e = Make(ExprKind::kLiteral, line);
        e->value = Value(std::move(s));
        return e;
      }
      case TokenType::kInt: {
        int64_t v = 0;
        const std::string& digits = Next().text;
        auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
        if (ec != std::errc()) throw TemplateError("integer literal out of range: " + digits, line);
        ExprPtr e = Make(ExprKind::kLiteral, line);
        e->value = Value(v);
        return e;
      }
      case TokenType::kFloat: {
        ExprPtr e = Make(ExprKind::kLiteral, line);
        e->value = Value(std::stod(Next().text));
        return e;
      }
      case TokenType::kOperator: {
        if (tok.text == "(") {
          Next();
          if (IsOp(")")) {
            Next();
            return Make(ExprKind::kList, line);
          }
          ExprPtr first = ParseExpression(true);
          if (IsOp(")")) {
            Next();
            return first;
          }
          ExprPtr list = Make(ExprKind::kList, line);
          list->items.push_back(std::move(first));
          while (IsOp(",")) {
            Next();
            if (IsOp(")")) break;
            list->items.push_back(ParseExpression(true));
          }
          ExpectOp(")");
          return list;
        }
        if (tok.text == "[") {
          Next();
          ExprPtr list = Make(ExprKind::kList, line);
          while (!IsOp("]")) {
            list->items.push_back(ParseExpression(true));
            if (!IsOp("]")) ExpectOp(",");
          }
          Next();
          return list;
        }
        if (tok.text == "{") {
          Next();
          ExprPtr dict = Make(ExprKind::kDict, line);
          while (!IsOp("}")) {
            dict->items.push_back(ParseExpression(true));
            ExpectOp(":");
            dict->items.push_back(ParseExpression(true));
            if (!IsOp("}")) ExpectOp(",");
          }
          Next();
          return dict;
        }
        break;
      }
      default: break;
    }
    Fail("unexpected " + Describe(tok));
  }

  const std::vector<Token>& t_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace

Body Parse(const std::vector<Token>& tokens) { return Parser(tokens).ParseTemplate(); }

}  // namespace ridge::jinja
