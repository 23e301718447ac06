#include "ridge/server/api_error.h"

namespace ridge::server {

void ThrowInvalid(const std::string& param, const std::string& message, const std::string& code) {
  throw ApiError(400, "invalid_request_error", message, param, code);
}

ApiError ToApiError(const std::exception& e) {
  if (const auto* api = dynamic_cast<const ApiError*>(&e)) return *api;
  return ApiError(500, "server_error", "internal error: " + std::string(e.what()));
}

nlohmann::json ErrorJson(const ApiError& error) {
  nlohmann::json body;
  body["message"] = error.what();
  body["type"] = error.type();
  body["param"] = error.param().empty() ? nlohmann::json(nullptr) : nlohmann::json(error.param());
  body["code"] = error.code().empty() ? nlohmann::json(nullptr) : nlohmann::json(error.code());
  return nlohmann::json{{"error", std::move(body)}};
}

ApiError ErrorForStatus(int status) {
  switch (status) {
    case 400: return ApiError(400, "invalid_request_error", "the HTTP request could not be parsed");
    case 401: return ApiError(401, "invalid_request_error", "missing or wrong API key", "", "invalid_api_key");
    case 404: return ApiError(404, "invalid_request_error", "no such endpoint", "", "not_found");
    case 405: return ApiError(405, "invalid_request_error", "method not allowed for this endpoint");
    case 413:
      return ApiError(413, "invalid_request_error", "the request body is larger than the server accepts", "",
                      "request_too_large");
    case 414: return ApiError(414, "invalid_request_error", "the request URI is too long");
    case 416: return ApiError(416, "invalid_request_error", "range not satisfiable");
    case 429: return ApiError(429, "rate_limit_error", "too many requests are waiting; retry later", "", "queue_full");
    case 503: return ApiError(503, "server_error", "the server is shutting down", "", "unavailable");
    default:
      if (status >= 500) return ApiError(status, "server_error", "internal server error");
      return ApiError(status, "invalid_request_error", "the request was refused");
  }
}

std::string DumpJson(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace ridge::server
