#include "ridge/jinja/lexer.h"

#include <cctype>

#include "ridge/jinja/error.h"
#include "ridge/jinja/utf8.h"

namespace ridge::jinja {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string Normalize(std::string_view source) {
  std::string s;
  s.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      s += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      s += source[i];
    }
  }
  if (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

class Lexer {
 public:
  Lexer(std::string_view source, const LexOptions& options) : src_(Normalize(source)), options_(options) {}

  std::vector<Token> Run() {
    bool line_starting = true;
    while (pos_ < src_.size()) {
      size_t tag = src_.find('{', pos_);
      while (tag != std::string::npos && tag + 1 < src_.size() && src_[tag + 1] != '{' && src_[tag + 1] != '%' &&
             src_[tag + 1] != '#')
        tag = src_.find('{', tag + 1);
      if (tag == std::string::npos || tag + 1 >= src_.size()) {
        Emit(TokenType::kText, src_.substr(pos_));
        break;
      }
      const char kind = src_[tag + 1];
      const char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
      std::string text = src_.substr(pos_, tag - pos_);
      if (sign == '-') {
        size_t e = text.size();
        while (e > 0 && IsSpace(text[e - 1])) --e;
        text.resize(e);
      } else if (sign != '+' && kind != '{' && options_.lstrip_blocks) {
        const size_t line_start = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if (line_start > 0 || line_starting) {
          bool blank = true;
          for (size_t i = line_start; i < text.size(); ++i) blank = blank && IsSpace(text[i]);
          if (blank) text.resize(line_start);
        }
      }
      Emit(TokenType::kText, text);
      pos_ = tag + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (kind == '#') {
        LexComment();
      } else {
        LexTag(kind == '{');
      }
      line_starting = pos_ > 0 && src_[pos_ - 1] == '\n';
    }
    Add(TokenType::kEnd, "");
    return std::move(tokens_);
  }

 private:
  int LineAt(size_t pos) {
    for (; line_pos_ < pos && line_pos_ < src_.size(); ++line_pos_)
      if (src_[line_pos_] == '\n') ++line_;
    return line_;
  }
  void Add(TokenType type, std::string text) { tokens_.push_back({type, std::move(text), LineAt(pos_)}); }
  void Emit(TokenType type, std::string text) {
    if (!text.empty()) Add(type, std::move(text));
  }

  // After a closing `%}`/`#}` at pos_ (already past it): `-` strips all
  // whitespace, trim_blocks one newline, `+` nothing.
  void AfterBlockEnd(char sign) {
    if (sign == '-') {
      while (pos_ < src_.size() && IsSpace(src_[pos_])) ++pos_;
    } else if (sign != '+' && options_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
  }

  void LexComment() {
    const size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) throw TemplateError("missing end of comment tag", LineAt(pos_));
    const char sign = end > pos_ ? src_[end - 1] : '\0';
    pos_ = end + 2;
    AfterBlockEnd(sign);
  }

  void LexTag(bool variable) {
    Add(variable ? TokenType::kVarBegin : TokenType::kBlockBegin, "");
    const size_t first_token = tokens_.size();
    const char close = variable ? '}' : '%';
    for (;;) {
      while (pos_ < src_.size() && IsSpace(src_[pos_])) ++pos_;
      if (pos_ >= src_.size())
        throw TemplateError(variable ? "unexpected end of template, expected '}}'" : "unexpected end of template, "
                                                                                       "expected '%}'",
                            LineAt(pos_));
      const char c = src_[pos_];
      const char sign = (c == '-' || c == '+') ? c : '\0';
      const size_t close_at = pos_ + (sign ? 1 : 0);
      if (close_at + 1 < src_.size() && src_[close_at] == close && src_[close_at + 1] == '}' &&
          (sign != '+' || !variable)) {
        pos_ = close_at + 2;
        Add(variable ? TokenType::kVarEnd : TokenType::kBlockEnd, "");
        if (variable) {
          if (sign == '-')
            while (pos_ < src_.size() && IsSpace(src_[pos_])) ++pos_;
        } else {
          AfterBlockEnd(sign);
          if (tokens_.size() == first_token + 2 && tokens_[first_token].type == TokenType::kName &&
              tokens_[first_token].text == "raw")
            LexRaw();
        }
        return;
      }
      LexExpressionToken();
    }
  }

  // {% raw %}...{% endraw %}: the text between is output as written.
  void LexRaw() {
    size_t search = pos_;
    for (;;) {
      const size_t open = src_.find("{%", search);
      if (open == std::string::npos) throw TemplateError("missing '{% endraw %}'", LineAt(pos_));
      size_t p = open + 2;
      const char open_sign = p < src_.size() && (src_[p] == '-' || src_[p] == '+') ? src_[p] : '\0';
      if (open_sign) ++p;
      while (p < src_.size() && IsSpace(src_[p])) ++p;
      if (src_.compare(p, 6, "endraw") != 0) {
        search = open + 2;
        continue;
      }
      p += 6;
      while (p < src_.size() && IsSpace(src_[p])) ++p;
      const char close_sign = p < src_.size() && (src_[p] == '-' || src_[p] == '+') ? src_[p] : '\0';
      if (close_sign) ++p;
      if (src_.compare(p, 2, "%}") != 0) throw TemplateError("malformed '{% endraw %}'", LineAt(open));
      std::string text = src_.substr(pos_, open - pos_);
      if (open_sign == '-') {
        while (!text.empty() && IsSpace(text.back())) text.pop_back();
      } else if (open_sign != '+' && options_.lstrip_blocks) {
        const size_t line_start = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        bool blank = true;
        for (size_t i = line_start; i < text.size(); ++i) blank = blank && IsSpace(text[i]);
        if (blank && line_start > 0) text.resize(line_start);
      }
      Emit(TokenType::kText, text);
      pos_ = p + 2;
      Add(TokenType::kBlockBegin, "");
      Add(TokenType::kName, "endraw");
      Add(TokenType::kBlockEnd, "");
      AfterBlockEnd(close_sign);
      return;
    }
  }

  void LexExpressionToken() {
    const char c = src_[pos_];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const size_t start = pos_;
      while (pos_ < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) ++pos_;
      Add(TokenType::kName, src_.substr(start, pos_ - start));
      return;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      const size_t start = pos_;
      bool is_float = false;
      while (pos_ < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) ++pos_;
      if (pos_ + 1 < src_.size() && src_[pos_] == '.' && std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
        is_float = true;
        ++pos_;
        while (pos_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_]))) ++pos_;
      }
      if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
        size_t p = pos_ + 1;
        if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
        if (p < src_.size() && std::isdigit(static_cast<unsigned char>(src_[p]))) {
          is_float = true;
          pos_ = p;
          while (pos_ < src_.size() && std::isdigit(static_cast<unsigned char>(src_[pos_]))) ++pos_;
        }
      }
      std::string digits;
      for (size_t i = start; i < pos_; ++i)
        if (src_[i] != '_') digits += src_[i];
      Add(is_float ? TokenType::kFloat : TokenType::kInt, digits);
      return;
    }
    if (c == '\'' || c == '"') {
      LexString(c);
      return;
    }
    static const char* kTwoChar[] = {"**", "//", "==", "!=", "<=", ">="};
    for (const char* op : kTwoChar)
      if (src_.compare(pos_, 2, op) == 0) {
        pos_ += 2;
        Add(TokenType::kOperator, op);
        return;
      }
    if (std::string_view("+-*/%~<>=.,:|()[]{}").find(c) != std::string_view::npos) {
      ++pos_;
      Add(TokenType::kOperator, std::string(1, c));
      return;
    }
    throw TemplateError(std::string("unexpected character '") + c + "'", LineAt(pos_));
  }

  void LexString(char quote) {
    const int line = LineAt(pos_);
    std::string value;
    size_t p = pos_ + 1;
    for (;;) {
      if (p >= src_.size()) throw TemplateError("unexpected end of string", line);
      const char c = src_[p];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++p;
        continue;
      }
      if (p + 1 >= src_.size()) throw TemplateError("unexpected end of string", line);
      const char e = src_[p + 1];
      p += 2;
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case '0': value += '\0'; break;
        case 'a': value += '\a'; break;
        case 'b': value += '\b'; break;
        case 'f': value += '\f'; break;
        case 'v': value += '\v'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '\n': break;
        case 'x':
        case 'u':
        case 'U': {
          const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
          if (p + n > src_.size()) throw TemplateError("truncated \\" + std::string(1, e) + " escape", line);
          uint32_t cp = 0;
          for (size_t k = 0; k < n; ++k) {
            const char h = src_[p + k];
            if (!std::isxdigit(static_cast<unsigned char>(h)))
              throw TemplateError("bad \\" + std::string(1, e) + " escape", line);
            cp = cp * 16 + (std::isdigit(static_cast<unsigned char>(h)) ? h - '0' : (std::tolower(h) - 'a' + 10));
          }
          p += n;
          AppendUtf8(value, cp);
          break;
        }
        default:  // Python keeps unknown escapes as written
          value += '\\';
          value += e;
      }
    }
    pos_ = p + 1;
    tokens_.push_back({TokenType::kString, std::move(value), line});
  }

  std::string src_;
  LexOptions options_;
  size_t pos_ = 0;
  size_t line_pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> Lex(std::string_view source, const LexOptions& options) { return Lexer(source, options).Run(); }

}  // namespace ridge::jinja
