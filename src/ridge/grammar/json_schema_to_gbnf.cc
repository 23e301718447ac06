#include "ridge/grammar/json_schema_to_gbnf.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/grammar/gbnf_writer.h"
#include "ridge/grammar/json_gbnf_primitives.h"
#include "ridge/grammar/json_number_ranges.h"
#include "ridge/grammar/regex_to_gbnf.h"

namespace ridge::grammar {
namespace {

using Json = nlohmann::ordered_json;

const std::set<std::string> kAnnotations = {"title",   "description", "default",    "examples", "$schema",
                                            "$id",     "$comment",    "deprecated", "readOnly", "writeOnly"};
const std::set<std::string> kObjectKeywords = {"properties", "required", "additionalProperties"};
const std::set<std::string> kArrayKeywords = {"items", "prefixItems", "minItems", "maxItems"};
const std::set<std::string> kStringKeywords = {"minLength", "maxLength", "pattern", "format"};
const std::set<std::string> kNumberKeywords = {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
// Keywords that only hold or combine other schemas.
const std::set<std::string> kStructureKeywords = {"type",  "enum",  "const", "anyOf", "oneOf",
                                                  "allOf", "$ref",  "$defs", "definitions"};

// "/a~1b" for the key "a/b" (RFC 6901).
std::string PointerToken(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

bool IsIntegral(const Json& number) {
  const double d = number.get<double>();
  return std::isfinite(d) && std::trunc(d) == d;
}

std::string Alternatives(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out;
  for (const auto& a : alts) out += (out.empty() ? "" : " | ") + a;
  return "(" + out + ")";
}

class SchemaConverter {
 public:
  explicit SchemaConverter(const Json& root) : root_(root), prims_(&rules_) {}

  std::string Convert() {
    rules_.Define("root", "");  // first in the text
    const std::string value = Visit(root_, "");
    const std::string ws = prims_.Ws();
    rules_.Define("root", ws + " " + value + " " + ws);
    return rules_.Text();
  }

 private:
  [[noreturn]] static void Fail(const std::string& path, const std::string& what) {
    throw Error(fmt::format("json schema at {}: {}", path.empty() ? "/" : path, what));
  }

  // A rule named after the schema's location, for readable grammars.
  std::string Hint(const std::string& path) { return path.empty() ? "schema" : path.substr(1); }

  std::string Visit(const Json& schema, const std::string& path) {
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) Fail(path, "the schema false matches nothing");
      return prims_.Value();
    }
    if (!schema.is_object()) Fail(path, fmt::format("a schema must be an object or a boolean, not {}", schema.dump()));
    std::vector<std::string> constraints;  // the keywords that constrain, in the schema's order
    for (const auto& [key, value] : schema.items()) {
      if (kAnnotations.count(key)) continue;
      if (!kStructureKeywords.count(key) && !kObjectKeywords.count(key) && !kArrayKeywords.count(key) &&
          !kStringKeywords.count(key) && !kNumberKeywords.count(key))
        Fail(path, fmt::format("'{}' is not supported", key));
      if (key != "$defs" && key != "definitions") constraints.push_back(key);
    }
    auto alone = [&](const char* keyword, const std::set<std::string>& allowed) {
      for (const auto& k : constraints)
        if (k != keyword && !allowed.count(k))
          Fail(path, fmt::format("'{}' together with '{}' is not supported", keyword, k));
    };
    if (schema.contains("$ref")) {
      alone("$ref", {});
      return Ref(schema["$ref"], path + "/$ref");
    }
    for (const char* combinator : {"anyOf", "oneOf", "allOf"}) {
      if (!schema.contains(combinator)) continue;
      alone(combinator, {});
      return Combinator(schema[combinator], combinator, path + "/" + combinator);
    }
    if (schema.contains("enum") || schema.contains("const")) {
      alone(schema.contains("enum") ? "enum" : "const", {"type"});
      return EnumValues(schema, path);
    }
    std::vector<std::string> types = Types(schema, path);
    std::vector<std::string> alts;
    for (const auto& type : types) alts.push_back(TypedValue(schema, type, path));
    return Alternatives(alts);
  }

  // The listed types, or those the keywords imply, or every type.
  std::vector<std::string> Types(const Json& schema, const std::string& path) {
    if (schema.contains("type")) {
      const Json& t = schema["type"];
      std::vector<std::string> types;
      if (t.is_string()) types.push_back(t.get<std::string>());
      else if (t.is_array() && !t.empty())
        for (const auto& item : t) {
          if (!item.is_string()) Fail(path + "/type", "'type' must be a string or an array of strings");
          types.push_back(item.get<std::string>());
        }
      else Fail(path + "/type", "'type' must be a string or a non-empty array of strings");
      return types;
    }
    std::vector<std::string> implied;
    auto implies = [&](const std::set<std::string>& keywords, const char* type) {
      if (std::any_of(keywords.begin(), keywords.end(), [&](const std::string& k) { return schema.contains(k); }))
        implied.push_back(type);
    };
    implies(kObjectKeywords, "object");
    implies(kArrayKeywords, "array");
    implies(kStringKeywords, "string");
    implies(kNumberKeywords, "number");
    if (implied.empty()) return {"any"};
    return implied;
  }

  std::string TypedValue(const Json& schema, const std::string& type, const std::string& path) {
    if (type == "any") return prims_.Value();
    if (type == "object") return ObjectValue(schema, path);
    if (type == "array") return ArrayValue(schema, path);
    if (type == "string") return StringValue(schema, path);
    if (type == "integer") return IntegerValue(schema, path);
    if (type == "number") return NumberValue(schema, path);
    if (type == "boolean") return prims_.Boolean();
    if (type == "null") return prims_.Null();
    Fail(path + "/type", fmt::format("unknown type '{}'", type));
  }

  std::string Ref(const Json& ref, const std::string& path) {
    if (!ref.is_string()) Fail(path, "'$ref' must be a string");
    const std::string target = ref.get<std::string>();
    if (target.empty() || target[0] != '#')
      Fail(path, fmt::format("'$ref' '{}' is not supported: only references within the schema (#/...)", target));
    auto it = refs_.find(target);
    if (it != refs_.end()) return it->second;
    const std::string pointer = target.substr(1);
    const Json* resolved = nullptr;
    try {
      resolved = &root_.at(Json::json_pointer(pointer));
    } catch (const Json::exception&) {
      Fail(path, fmt::format("'$ref' '{}' does not name a schema in this document", target));
    }
    // Named before visiting, so that a recursive reference finds the name.
    const std::string name = rules_.FreshName(pointer.empty() ? "root-ref" : "ref" + pointer);
    refs_[target] = name;
    rules_.Define(name, Visit(*resolved, pointer));
    return name;
  }

  std::string Combinator(const Json& list, const std::string& keyword, const std::string& path) {
    if (!list.is_array() || list.empty()) Fail(path, fmt::format("'{}' must be a non-empty array of schemas", keyword));
    if (keyword == "allOf") {
      if (list.size() != 1) Fail(path, "'allOf' with more than one schema is not supported");
      return Visit(list[0], path + "/0");
    }
    std::vector<std::string> alts;
    for (size_t i = 0; i < list.size(); ++i) alts.push_back(Visit(list[i], fmt::format("{}/{}", path, i)));
    return Alternatives(alts);
  }

  static bool HasType(const Json& value, const std::string& type) {
    if (type == "object") return value.is_object();
    if (type == "array") return value.is_array();
    if (type == "string") return value.is_string();
    if (type == "boolean") return value.is_boolean();
    if (type == "null") return value.is_null();
    if (type == "number") return value.is_number();
    if (type == "integer") return value.is_number_integer() || (value.is_number_float() && IsIntegral(value));
    return false;
  }

  std::string EnumValues(const Json& schema, const std::string& path) {
    std::vector<Json> values;
    if (schema.contains("const")) {
      values.push_back(schema["const"]);
    } else {
      if (!schema["enum"].is_array() || schema["enum"].empty()) Fail(path + "/enum", "'enum' must be a non-empty array");
      for (const auto& v : schema["enum"]) values.push_back(v);
    }
    std::vector<std::string> types = schema.contains("type") ? Types(schema, path) : std::vector<std::string>{};
    std::vector<std::string> alts;
    for (const auto& v : values) {
      const bool typed = types.empty() || std::any_of(types.begin(), types.end(), [&](auto& t) { return HasType(v, t); });
      if (typed) alts.push_back(ConstValue(v));
    }
    if (alts.empty()) Fail(path, "no value of 'enum' / 'const' has the schema's 'type'");
    return Alternatives(alts);
  }

  // Exactly `value`: scalars as compact JSON, containers with the usual whitespace.
  std::string ConstValue(const Json& value) {
    if (!value.is_structured()) return GbnfLiteral(value.dump());
    const std::string ws = prims_.Ws();
    const bool object = value.is_object();
    std::string out = GbnfLiteral(object ? "{" : "[") + " " + ws;
    bool first = true;
    for (const auto& [key, item] : value.items()) {
      if (!first) out += " \",\" " + ws;
      first = false;
      if (object) out += " " + GbnfLiteral(Json(key).dump()) + " " + ws + " \":\" " + ws;
      out += " " + GbnfGroup(ConstValue(item)) + " " + ws;
    }
    return "(" + out + " " + GbnfLiteral(object ? "}" : "]") + ")";
  }

  int64_t Count(const Json& schema, const char* keyword, int64_t absent, const std::string& path) {
    if (!schema.contains(keyword)) return absent;
    const Json& v = schema[keyword];
    if (!v.is_number_integer() && !(v.is_number_float() && IsIntegral(v)))
      Fail(path + "/" + keyword, fmt::format("'{}' must be a non-negative integer", keyword));
    const double d = v.get<double>();
    if (d < 0) Fail(path + "/" + keyword, fmt::format("'{}' must be a non-negative integer", keyword));
    if (d > kMaxSchemaRepeat)
      Fail(path + "/" + keyword, fmt::format("'{}' above {} is not supported", keyword, kMaxSchemaRepeat));
    return static_cast<int64_t>(d);
  }

  std::string ObjectValue(const Json& schema, const std::string& path) {
    struct Property {
      std::string key;
      bool required = false;
      std::string member;  // "key" ws ":" ws value ws
    };
    const std::string ws = prims_.Ws();
    std::vector<Property> props;
    std::vector<std::string> keys;
    if (schema.contains("properties")) {
      const Json& p = schema["properties"];
      if (!p.is_object()) Fail(path + "/properties", "'properties' must be an object");
      for (const auto& [key, sub] : p.items()) {
        const std::string value = Visit(sub, path + "/properties/" + PointerToken(key));
        props.push_back({key, false, GbnfLiteral(Json(key).dump()) + " " + ws + " \":\" " + ws + " " + value + " " + ws});
        keys.push_back(key);
      }
    }
    if (schema.contains("required")) {
      const Json& r = schema["required"];
      if (!r.is_array()) Fail(path + "/required", "'required' must be an array of strings");
      for (const auto& name : r) {
        if (!name.is_string()) Fail(path + "/required", "'required' must be an array of strings");
        auto it = std::find_if(props.begin(), props.end(), [&](auto& p) { return p.key == name.get<std::string>(); });
        if (it == props.end())
          Fail(path + "/required", fmt::format("required property '{}' is not in 'properties'", name.get<std::string>()));
        it->required = true;
      }
    }
    std::string additional;  // a member rule, or "" when none is allowed
    const Json* ap = schema.contains("additionalProperties") ? &schema["additionalProperties"] : nullptr;
    if (!ap || !ap->is_boolean() || ap->get<bool>()) {
      const std::string value = ap && ap->is_object() ? Visit(*ap, path + "/additionalProperties") : prims_.Value();
      const std::string key = prims_.KeyNotIn(keys, Hint(path) + "-key");
      additional = rules_.FreshName(Hint(path) + "-additional");
      rules_.Define(additional, key + " " + ws + " \":\" " + ws + " " + value + " " + ws);
    }
    // after[i]: members i.. once one member is written (each after a comma);
    // first[i]: members i.. when none is written yet.
    const size_t n = props.size();
    const std::string comma = "\",\" " + ws + " ";
    std::string after = additional.empty() ? "\"\"" : "(" + comma + additional + ")*";
    std::string first = additional.empty() ? "\"\"" : "(" + additional + " (" + comma + additional + ")*)?";
    for (size_t i = n; i-- > 0;) {
      const Property& p = props[i];
      const std::string after_name = rules_.FreshName(fmt::format("{}-after-{}", Hint(path), i));
      const std::string rest_after = Seq(after);
      rules_.Define(after_name, p.required ? Seq(comma + p.member, rest_after)
                                           : Seq("(" + comma + p.member + ")?", rest_after));
      const std::string first_name = rules_.FreshName(fmt::format("{}-first-{}", Hint(path), i));
      rules_.Define(first_name, p.required ? Seq(p.member, rest_after) : Seq(p.member, rest_after) + " | " + first);
      after = after_name;
      first = first_name;
    }
    const std::string name = rules_.FreshName(Hint(path));
    rules_.Define(name, "\"{\" " + ws + " " + Seq(first, "\"}\""));
    return name;
  }

  // Concatenation that drops the empty literal.
  static std::string Seq(const std::string& a, const std::string& b = "\"\"") {
    if (a == "\"\"") return b;
    if (b == "\"\"") return a;
    return a + " " + b;
  }

  std::string ArrayValue(const Json& schema, const std::string& path) {
    const std::string ws = prims_.Ws();
    std::vector<std::string> prefix;
    if (schema.contains("prefixItems")) {
      const Json& p = schema["prefixItems"];
      if (!p.is_array()) Fail(path + "/prefixItems", "'prefixItems' must be an array of schemas");
      for (size_t i = 0; i < p.size(); ++i) prefix.push_back(Visit(p[i], fmt::format("{}/prefixItems/{}", path, i)));
    }
    std::string items;  // "" when no item may follow the prefix
    if (!schema.contains("items")) {
      items = prims_.Value();
    } else if (schema["items"].is_array()) {
      Fail(path + "/items", "'items' as an array is not supported: use 'prefixItems'");
    } else if (!(schema["items"].is_boolean() && !schema["items"].get<bool>())) {
      items = Visit(schema["items"], path + "/items");
    }
    const int64_t min = Count(schema, "minItems", 0, path);
    const int64_t max = Count(schema, "maxItems", -1, path);
    if (max >= 0 && max < min) Fail(path, "'maxItems' is below 'minItems'");
    if (items.empty() && min > static_cast<int64_t>(prefix.size()))
      Fail(path, "'minItems' asks for more items than 'prefixItems' allows");
    const std::string comma = "\",\" " + ws + " ";
    // Elements from index i on, i already written.
    std::function<std::string(int64_t)> elements = [&](int64_t i) -> std::string {
      if (max >= 0 && i >= max) return "\"\"";
      const std::string sep = i > 0 ? comma : "";
      if (i < static_cast<int64_t>(prefix.size())) {
        const std::string body = Seq(sep + prefix[i] + " " + ws, elements(i + 1));
        return i < min ? body : "(" + body + ")?";
      }
      if (items.empty()) return "\"\"";
      const int64_t cmin = std::max<int64_t>(0, min - i), cmax = max < 0 ? -1 : max - i;
      if (i == 0) return GbnfRepeat(items + " " + ws, cmin, cmax, "\",\" " + ws);
      return GbnfRepeat(comma + items + " " + ws, cmin, cmax);
    };
    const std::string name = rules_.FreshName(Hint(path));
    rules_.Define(name, "\"[\" " + ws + " " + Seq(elements(0), "\"]\""));
    return name;
  }

  std::string StringValue(const Json& schema, const std::string& path) {
    const bool has_length = schema.contains("minLength") || schema.contains("maxLength");
    if (schema.contains("format")) {
      if (has_length || schema.contains("pattern"))
        Fail(path, "'format' together with 'pattern', 'minLength' or 'maxLength' is not supported");
      const Json& f = schema["format"];
      const std::string rule = f.is_string() ? prims_.Format(f.get<std::string>()) : "";
      if (rule.empty())
        Fail(path + "/format", fmt::format("format {} is not supported (supported: date, time, date-time, uuid, email)",
                                           f.dump()));
      return rule;
    }
    if (schema.contains("pattern")) {
      if (has_length) Fail(path, "'pattern' together with 'minLength' or 'maxLength' is not supported");
      if (!schema["pattern"].is_string()) Fail(path + "/pattern", "'pattern' must be a string");
      std::string inner;
      try {
        inner = RegexToGbnfExpression(schema["pattern"].get<std::string>(),
                                      RegexGbnfOptions{.search = true, .json_string_content = true}, &rules_,
                                      Hint(path) + "-pattern");
      } catch (const Error& e) {
        Fail(path + "/pattern", e.what());
      }
      const std::string name = rules_.FreshName(Hint(path));
      rules_.Define(name, "\"\\\"\" " + GbnfGroup(inner) + " \"\\\"\"");
      return name;
    }
    if (!has_length) return prims_.String();
    const int64_t min = Count(schema, "minLength", 0, path);
    const int64_t max = Count(schema, "maxLength", -1, path);
    if (max >= 0 && max < min) Fail(path, "'maxLength' is below 'minLength'");
    const std::string name = rules_.FreshName(Hint(path));
    rules_.Define(name, "\"\\\"\" " + Seq(GbnfRepeat(prims_.Char(), min, max), "\"\\\"\""));
    return name;
  }

  NumericBounds Bounds(const Json& schema, const std::string& path) {
    NumericBounds b;
    auto read = [&](const char* keyword, std::optional<double>* out) {
      if (!schema.contains(keyword)) return;
      const Json& v = schema[keyword];
      if (!v.is_number())
        Fail(path + "/" + keyword, fmt::format("'{}' must be a number (draft-04's boolean form is not supported)", keyword));
      *out = v.get<double>();
    };
    read("minimum", &b.minimum);
    read("maximum", &b.maximum);
    read("exclusiveMinimum", &b.exclusive_minimum);
    read("exclusiveMaximum", &b.exclusive_maximum);
    return b;
  }

  std::string IntegerValue(const Json& schema, const std::string& path) {
    const NumericBounds b = Bounds(schema, path);
    if (!b.any()) return prims_.Integer();
    int64_t lo = 0, hi = 0;
    if (!IntegerBounds(b, &lo, &hi)) Fail(path, "no integer lies within 'minimum' / 'maximum'");
    const std::string name = rules_.FreshName(Hint(path));
    rules_.Define(name, IntegerRangeGbnf(lo, hi));
    return name;
  }

  std::string NumberValue(const Json& schema, const std::string& path) {
    const NumericBounds b = Bounds(schema, path);
    if (!b.any()) return prims_.Number();
    const std::string body = BoundedNumberGbnf(b);
    if (body.empty()) Fail(path, "no number ridge can write lies within 'minimum' / 'maximum'");
    const std::string name = rules_.FreshName(Hint(path));
    rules_.Define(name, body);
    return name;
  }

  const Json& root_;
  GbnfRules rules_;
  JsonPrimitives prims_;
  std::map<std::string, std::string> refs_;  // "$ref" text -> rule name
};

}  // namespace

std::string JsonSchemaToGbnf(std::string_view schema_text) {
  Json schema;
  try {
    schema = Json::parse(schema_text);
  } catch (const Json::parse_error& e) {
    Fail("json schema is not valid JSON: {}", e.what());
  }
  return SchemaConverter(schema).Convert();
}

std::string JsonObjectGbnf() {
  GbnfRules rules;
  rules.Define("root", "");
  JsonPrimitives prims(&rules);
  const std::string ws = prims.Ws();
  rules.Define("root", ws + " " + prims.Object() + " " + ws);
  return rules.Text();
}

}  // namespace ridge::grammar
