#pragma once
// The one error a template produces: a syntax error found while parsing, or
// a failure while rendering (an undefined value used, a type mismatch, a
// limit reached, or the template's own raise_exception). what() is the
// message alone ("Conversation roles must alternate ..."), without the line,
// so that raise_exception's text reaches a client unchanged; line() is
// where it happened when known (0 otherwise).
#include <stdexcept>
#include <string>

namespace ridge::jinja {

class TemplateError : public std::runtime_error {
 public:
  explicit TemplateError(const std::string& message, int line = 0) : std::runtime_error(message), line_(line) {}
  int line() const { return line_; }
  // "line 3: unexpected 'endif'" (or the message alone when the line is unknown).
  std::string Describe() const {
    return line_ > 0 ? "line " + std::to_string(line_) + ": " + what() : std::string(what());
  }

 private:
  int line_;
};

// Raised by raise_exception(): the template's own message, kept apart so that
// callers can say "the template refused this conversation".
class TemplateRaised : public TemplateError {
 public:
  using TemplateError::TemplateError;
};

}  // namespace ridge::jinja
