#include "ridge/grammar/json_gbnf_primitives.h"

#include <fmt/format.h>

#include <functional>
#include <map>
#include <memory>

#include "ridge/grammar/json_number_ranges.h"

namespace ridge::grammar {
namespace {

// Characters a JSON string holds without escaping (surrogates are not characters).
CodePointSet PlainStringChars() {
  CodePointSet special = CodePointSet::Range(0, 0x1F);
  special.Add('"', '"');
  special.Add('\\', '\\');
  special.Add(0xD800, 0xDFFF);
  return special.Complement();
}

std::string Hex(int n) { return GbnfRepeat("[0-9a-fA-F]", n, n); }

// A trie of key texts, for KeyNotIn.
struct TrieNode {
  bool key_ends = false;
  std::map<uint32_t, std::unique_ptr<TrieNode>> children;
};

// Decodes valid UTF-8 (keys come from parsed JSON, so they are valid).
std::vector<uint32_t> CodePoints(const std::string& s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) {
    const auto b = static_cast<unsigned char>(s[i]);
    const int len = b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
    uint32_t cp = len == 1 ? b : b & (0x7F >> len);
    for (int k = 1; k < len && i + k < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out.push_back(cp);
    i += len;
  }
  return out;
}

}  // namespace

template <typename F>
std::string JsonPrimitives::Lazy(const std::string& what, F body) {
  auto it = names_.find(what);
  if (it != names_.end()) return it->second;
  const std::string name = rules_->FreshName(what);
  names_[what] = name;
  rules_->Define(name, body());
  return name;
}

std::string JsonPrimitives::Ws() {
  return Lazy("ws", [] { return "(\" \" | \"\\n\" " + GbnfRepeat("[ \\t]", 0, kMaxIndent) + ")?"; });
}

std::string JsonPrimitives::Char() {
  return Lazy("char", [] {
    // \uXXXX except D800-DFFF.
    const std::string u = "\"u\" ([0-9a-cA-Ce-fE-F] " + Hex(3) + " | [dD] [0-7] " + Hex(2) + ")";
    return GbnfCharClass(PlainStringChars()) + " | \"\\\\\" ([\"\\\\/bfnrt] | " + u + ")";
  });
}

std::string JsonPrimitives::String() {
  return Lazy("string", [this] { return "\"\\\"\" " + Char() + "* \"\\\"\""; });
}

std::string JsonPrimitives::Integer() {
  return Lazy("integer", [] { return "\"-\"? (\"0\" | [1-9] " + GbnfRepeat("[0-9]", 0, kMaxIntegerDigits - 1) + ")"; });
}

std::string JsonPrimitives::Number() {
  return Lazy("number", [this] {
    return Integer() + " (\".\" " + GbnfRepeat("[0-9]", 1, kMaxFractionDigits) + ")? ([eE] [-+]? " +
           GbnfRepeat("[0-9]", 1, 2) + ")?";
  });
}

std::string JsonPrimitives::Boolean() {
  return Lazy("boolean", [] { return std::string("\"true\" | \"false\""); });
}

std::string JsonPrimitives::Null() {
  return Lazy("null", [] { return std::string("\"null\""); });
}

std::string JsonPrimitives::Value() {
  // The rule's name is taken before its body refers to object/array, which refer back to it.
  auto it = names_.find("value");
  if (it != names_.end()) return it->second;
  const std::string name = rules_->FreshName("value");
  names_["value"] = name;
  rules_->Define(name, Object() + " | " + Array() + " | " + String() + " | " + Number() + " | " + Boolean() + " | " +
                           Null());
  return name;
}

std::string JsonPrimitives::Object() {
  auto it = names_.find("object");
  if (it != names_.end()) return it->second;
  const std::string name = rules_->FreshName("object");
  names_["object"] = name;
  const std::string ws = Ws();
  const std::string member = String() + " " + ws + " \":\" " + ws + " " + Value() + " " + ws;
  rules_->Define(name, "\"{\" " + ws + " (" + member + " (\",\" " + ws + " " + member + ")*)? \"}\"");
  return name;
}

std::string JsonPrimitives::Array() {
  auto it = names_.find("array");
  if (it != names_.end()) return it->second;
  const std::string name = rules_->FreshName("array");
  names_["array"] = name;
  const std::string ws = Ws();
  const std::string element = Value() + " " + ws;
  rules_->Define(name, "\"[\" " + ws + " (" + element + " (\",\" " + ws + " " + element + ")*)? \"]\"");
  return name;
}

std::string JsonPrimitives::Format(const std::string& format) {
  auto date = [this] {
    return Lazy("date", [] {
      // Years 0001-9999 (Python's date has no year 0); each month's own days,
      // February to the 28th (the 29th exists only in leap years).
      const std::string year =
          "([1-9] [0-9] [0-9] [0-9] | \"0\" ([1-9] [0-9] [0-9] | \"0\" ([1-9] [0-9] | \"0\" [1-9])))";
      const std::string day28 = "(\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8])";
      const std::string day30 = "(\"0\" [1-9] | [12] [0-9] | \"30\")";
      const std::string day31 = "(\"0\" [1-9] | [12] [0-9] | \"3\" [01])";
      return year + " \"-\" ((\"0\" [13578] | \"1\" [02]) \"-\" " + day31 + " | (\"0\" [469] | \"11\") \"-\" " +
             day30 + " | \"02-\" " + day28 + ")";
    });
  };
  auto time = [this] {
    return Lazy("time", [] {
      // RFC 3339 full-time; no leap second (Python's time refuses :60).
      const std::string hour = "([01] [0-9] | \"2\" [0-3])", minute = "[0-5] [0-9]";
      return hour + " \":\" " + minute + " \":\" " + minute + " (\".\" " + GbnfRepeat("[0-9]", 1, 6) +
             ")? (\"Z\" | [+\\x2D] " + hour + " \":\" " + minute + ")";
    });
  };
  const std::string quote = "\"\\\"\"";
  if (format == "date") return Lazy("date-string", [&] { return quote + " " + date() + " " + quote; });
  if (format == "time") return Lazy("time-string", [&] { return quote + " " + time() + " " + quote; });
  if (format == "date-time")
    return Lazy("date-time-string", [&] { return quote + " " + date() + " \"T\" " + time() + " " + quote; });
  if (format == "uuid")
    return Lazy("uuid-string", [&] {
      return quote + " " + Hex(8) + " \"-\" " + Hex(4) + " \"-\" " + Hex(4) + " \"-\" " + Hex(4) + " \"-\" " +
             Hex(12) + " " + quote;
    });
  if (format == "email")
    return Lazy("email-string", [&] {
      const std::string local = "[A-Za-z0-9!#$%&'*+/=?\\x5E_`{|}~\\x2D]+";
      const std::string label = "[A-Za-z0-9]+ (\"-\"+ [A-Za-z0-9]+)*";
      return quote + " " + local + " (\".\" " + local + ")* \"@\" " + label + " (\".\" " + label + ")+ " + quote;
    });
  return "";
}

std::string JsonPrimitives::KeyNotIn(const std::vector<std::string>& keys, const std::string& name_hint) {
  const CodePointSet plain = PlainStringChars();
  TrieNode root;
  for (const auto& key : keys) {
    std::vector<uint32_t> cps = CodePoints(key);
    // A key with a character that needs escaping can never be written here anyway.
    bool writable = true;
    for (uint32_t cp : cps) writable = writable && plain.Contains(cp);
    if (!writable) continue;
    TrieNode* node = &root;
    for (uint32_t cp : cps) {
      auto& child = node->children[cp];
      if (!child) child = std::make_unique<TrieNode>();
      node = child.get();
    }
    node->key_ends = true;
  }
  const std::string any_rest = GbnfCharClass(plain) + "*";
  // One rule per trie node: after this prefix, what may follow up to the closing quote.
  int counter = 0;
  std::function<std::string(const TrieNode&)> node_rule = [&](const TrieNode& node) {
    const std::string name = rules_->FreshName(fmt::format("{}-{}", name_hint, counter++));
    std::vector<std::string> alts;
    CodePointSet others = plain;
    for (const auto& [cp, child] : node.children) {
      others = others.Minus(CodePointSet::Of(cp));
      alts.push_back(GbnfCharClass(CodePointSet::Of(cp)) + " " + node_rule(*child));
    }
    if (!others.empty()) alts.push_back(GbnfCharClass(others) + " " + any_rest);
    if (!node.key_ends) alts.push_back("\"\"");
    std::string body;
    for (const auto& a : alts) body += (body.empty() ? "" : " | ") + a;
    rules_->Define(name, body);
    return name;
  };
  return "\"\\\"\" " + node_rule(root) + " \"\\\"\"";
}

}  // namespace ridge::grammar
