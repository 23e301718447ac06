#include "ridge/jinja/python_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

#include "ridge/jinja/error.h"
#include "ridge/jinja/utf8.h"

namespace ridge::jinja {
namespace {

std::string StrRepr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    const uint32_t cp = DecodeCodePoint(s, i);
    if (cp == static_cast<uint32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
      out += fmt::format("\\x{:02x}", cp);
    } else {
      out.append(s, start, i - start);
    }
  }
  out += quote;
  return out;
}

void JsonString(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const size_t start = i;
    const uint32_t cp = DecodeCodePoint(s, i);
    switch (cp) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (cp < 0x20 || (ensure_ascii && cp >= 0x7f)) {
          if (cp >= 0x10000) {
            const uint32_t v = cp - 0x10000;
            out += fmt::format("\\u{:04x}\\u{:04x}", 0xd800 + (v >> 10), 0xdc00 + (v & 0x3ff));
          } else {
            out += fmt::format("\\u{:04x}", cp);
          }
        } else {
          out.append(s, start, i - start);
        }
    }
  }
  out += '"';
}

void Dump(std::string& out, const Value& v, const JsonDumpOptions& o, int depth) {
  if (depth > 512) throw TemplateError("tojson: value nested too deeply");
  auto newline = [&](int level) {
    if (!o.indent) return;
    out += '\n';
    out.append(static_cast<size_t>(*o.indent) * level, ' ');
  };
  const std::string item_sep = !o.item_separator.empty() ? o.item_separator : o.indent ? "," : ", ";
  switch (v.kind()) {
    case Value::Kind::kNone: out += "null"; return;
    case Value::Kind::kBool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::kInt: out += std::to_string(v.as_int()); return;
    case Value::Kind::kFloat: {
      const double d = v.as_float();
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity") : PyFloatRepr(d);
      return;
    }
    case Value::Kind::kString: JsonString(out, v.as_string(), o.ensure_ascii); return;
    case Value::Kind::kList: {
      if (v.list().empty()) {
        out += "[]";
        return;
      }
      out += '[';
      bool first = true;
      for (const Value& e : v.list()) {
        if (!first) out += item_sep;
        first = false;
        newline(depth + 1);
        Dump(out, e, o, depth + 1);
      }
      newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::kDict: {
      if (v.dict().entries.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> entries;
      for (const auto& e : v.dict().entries) entries.push_back(&e);
      if (o.sort_keys)
        std::stable_sort(entries.begin(), entries.end(), [](auto* a, auto* b) { return a->first < b->first; });
      out += '{';
      bool first = true;
      for (const auto* e : entries) {
        if (!first) out += item_sep;
        first = false;
        newline(depth + 1);
        JsonString(out, e->first, o.ensure_ascii);
        out += o.key_separator;
        Dump(out, e->second, o, depth + 1);
      }
      newline(depth);
      out += '}';
      return;
    }
    case Value::Kind::kUndefined:
      throw TemplateError("Object of type Undefined is not JSON serializable");
    case Value::Kind::kCallable:
      throw TemplateError("Object of type function is not JSON serializable");
  }
}

}  // namespace

std::string PyFloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  // Shortest digits that round-trip, in scientific form: "d.ddde±x".
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, end);
  const size_t e_pos = sci.find('e');
  const int exponent = std::stoi(sci.substr(e_pos + 1));
  std::string mantissa = sci.substr(0, e_pos);
  const bool negative = mantissa[0] == '-';
  if (negative) mantissa.erase(0, 1);
  std::string digits;
  for (char c : mantissa)
    if (c != '.') digits += c;
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out += digits + std::string(exponent + 1 - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  out += fmt::format("e{}{:02d}", exponent < 0 ? '-' : '+', std::abs(exponent));
  return out;
}

std::string HtmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string PyStr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return "";
    case Value::Kind::kString: return v.as_string();
    default: return PyRepr(v);
  }
}

std::string PyRepr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return "";
    case Value::Kind::kNone: return "None";
    case Value::Kind::kBool: return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt: return std::to_string(v.as_int());
    case Value::Kind::kFloat: return PyFloatRepr(v.as_float());
    case Value::Kind::kString: return StrRepr(v.as_string());
    case Value::Kind::kList: {
      std::string out = "[";
      for (size_t i = 0; i < v.list().size(); ++i) out += (i ? ", " : "") + PyRepr(v.list()[i]);
      return out + "]";
    }
    case Value::Kind::kDict: {
      if (v.dict().is_namespace) return "<Namespace>";
      std::string out = "{";
      bool first = true;
      for (const auto& [k, e] : v.dict().entries) {
        out += (first ? "" : ", ") + StrRepr(k) + ": " + PyRepr(e);
        first = false;
      }
      return out + "}";
    }
    case Value::Kind::kCallable: return "<function " + v.callable().name + ">";
  }
  return "";
}

std::string JsonDumps(const Value& v, const JsonDumpOptions& options) {
  std::string out;
  Dump(out, v, options, 0);
  return out;
}

}  // namespace ridge::jinja
