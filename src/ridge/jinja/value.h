#pragma once
// The values a template computes with, modelled on the Python objects Jinja2
// sees when transformers renders a chat template: None, bool, int, float, str,
// list, dict (insertion-ordered, string keys), callables (macros and globals
// like raise_exception), and Undefined (a missing variable, key or index,
// which prints as "" and is false, but fails when used as a value).
// Lists and dicts are shared by reference, as in Python: a namespace()
// assigned in a loop is seen outside it.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace ridge::jinja {

class Value;
using List = std::vector<Value>;

struct Dict {
  std::vector<std::pair<std::string, Value>> entries;  // insertion order, as Python dicts
  bool is_namespace = false;                           // namespace(): the only dict `set x.y =` may change

  const Value* Find(std::string_view key) const;
  void Set(const std::string& key, Value value);
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;

  // The argument named `name` or at `index`, or nullptr.
  const Value* Get(size_t index, std::string_view name) const;
};

struct Callable {
  std::string name;
  std::function<Value(const CallArgs&)> call;
};

struct Undefined {
  std::string hint;  // "'x' is undefined" / "'dict object' has no attribute 'x'"
};
struct None {};

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kCallable };

  Value() : v_(Undefined{}) {}
  static Value MakeUndefined(std::string hint) { return Value(Undefined{std::move(hint)}); }
  static Value MakeNone() { return Value(None{}); }
  Value(bool b) : v_(b) {}
  Value(int64_t i) : v_(i) {}
  Value(int i) : v_(int64_t{i}) {}
  Value(double d) : v_(d) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(std::shared_ptr<List> l) : v_(std::move(l)) {}
  Value(std::shared_ptr<Dict> d) : v_(std::move(d)) {}
  Value(std::shared_ptr<Callable> c) : v_(std::move(c)) {}
  static Value FromList(List items) { return Value(std::make_shared<List>(std::move(items))); }
  // markupsafe's Markup: a string the `safe` and `escape` filters return.
  // Jinja2 keeps it through `+`, escaping the other (plain) string.
  static Value MakeMarkup(std::string s) {
    Value v(std::move(s));
    v.markup_ = true;
    return v;
  }
  static Value FromJson(const nlohmann::ordered_json& j);

  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_undefined() const { return kind() == Kind::kUndefined; }
  bool is_none() const { return kind() == Kind::kNone; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_int() const { return kind() == Kind::kInt; }
  bool is_float() const { return kind() == Kind::kFloat; }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_list() const { return kind() == Kind::kList; }
  bool is_dict() const { return kind() == Kind::kDict; }
  bool is_callable() const { return kind() == Kind::kCallable; }
  bool is_markup() const { return markup_; }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  const std::string& as_string() const { return std::get<std::string>(v_); }
  List& list() const { return *std::get<std::shared_ptr<List>>(v_); }
  Dict& dict() const { return *std::get<std::shared_ptr<Dict>>(v_); }
  const Callable& callable() const { return *std::get<std::shared_ptr<Callable>>(v_); }
  const std::string& undefined_hint() const { return std::get<Undefined>(v_).hint; }

  // Python's truth value (Undefined is false).
  bool Truthy() const;
  // int or float (bool counts as int) as double; throws TemplateError otherwise.
  double ToDouble() const;
  // Python's type name for messages: "str", "int", "dict", ...
  const char* TypeName() const;
  // Throws TemplateError with the undefined hint when this is Undefined.
  const Value& Defined() const;

 private:
  explicit Value(Undefined u) : v_(std::move(u)) {}
  explicit Value(None n) : v_(n) {}
  std::variant<Undefined, None, bool, int64_t, double, std::string, std::shared_ptr<List>, std::shared_ptr<Dict>,
               std::shared_ptr<Callable>>
      v_;
  bool markup_ = false;
};

// Python's ==, as Jinja compares (1 == 1.0 == True; lists and dicts by content).
bool Equal(const Value& a, const Value& b);
// Python's <; throws TemplateError for types Python cannot order.
bool Less(const Value& a, const Value& b);

}  // namespace ridge::jinja
