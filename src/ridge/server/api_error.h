#pragma once
// Errors a request can earn, as OpenAI's API reports them:
//   HTTP status + {"error": {"message", "type", "param", "code"}}.
// Request parsing and the HTTP handlers throw ApiError; the HTTP layer turns
// it into the response. The rule that keeps 4xx and 5xx apart: a client's
// mistake is translated into an ApiError (ThrowInvalid, mostly) where it is
// found, and nothing a client sends may escape as anything else; so any other
// exception reaching the HTTP layer (a ridge::Error from deep inside, a
// std::exception) is the server's fault, a 500 (ToApiError).
#include <nlohmann/json.hpp>

#include <string>

#include "ridge/base/error.h"

namespace ridge::server {

class ApiError : public Error {
 public:
  // status: the HTTP status (400, 401, 404, 413, 429, 500, 503).
  // type: OpenAI's error type ("invalid_request_error", ...).
  // param: the offending request field ("temperature", "messages[1].content"), or "" for none.
  // code: a machine-readable code ("model_not_found", "context_length_exceeded"), or "".
  ApiError(int status, std::string type, const std::string& message, std::string param = {}, std::string code = {})
      : Error(message), status_(status), type_(std::move(type)), param_(std::move(param)), code_(std::move(code)) {}

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }

 private:
  int status_;
  std::string type_;
  std::string param_;
  std::string code_;
};

// 400 invalid_request_error naming `param`.
[[noreturn]] void ThrowInvalid(const std::string& param, const std::string& message, const std::string& code = {});

// The response for an exception a handler let out: itself if it is an
// ApiError, otherwise 500 server_error (see the rule above).
ApiError ToApiError(const std::exception& e);

// {"error": {...}}; empty param/code become null.
nlohmann::json ErrorJson(const ApiError& error);
// The error object for a status the HTTP library produced itself (404 no
// such route, 413 body too large, 400 unparsable HTTP, ...).
ApiError ErrorForStatus(int status);

// Serializes JSON for the wire. Invalid UTF-8 inside strings (a byte token's
// text, say) is replaced by U+FFFD instead of throwing.
std::string DumpJson(const nlohmann::json& value);

}  // namespace ridge::server
