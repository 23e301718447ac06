#pragma once
// Plain-HTTP calls the benchmark makes (cpp-httplib client underneath, one
// connection per call): JSON GET/POST for /v1/models and /tokenize, and a
// streaming POST that hands the body over as it arrives. Transport failures
// (refused, timed out, reset) come back in HttpReply::transport_error, never
// as exceptions, so one failed request does not stop a benchmark.
#include <functional>
#include <string>
#include <string_view>

namespace ridge::bench {

struct BaseUrl {
  std::string host;         // "127.0.0.1", "localhost", "::1"
  int port = 80;
  std::string path_prefix;  // "" or "/prefix" (no trailing '/')
  std::string ToString() const;  // "http://127.0.0.1:8080/prefix"
};

// "http://HOST[:PORT][/PREFIX]" (IPv6 as [ADDR]); "HOST:PORT" alone means
// http. Throws ridge::Error for https (this build has no TLS), a missing
// host, or a bad port.
BaseUrl ParseBaseUrl(const std::string& url);

struct HttpOptions {
  double timeout_s = 600;  // connect, and the longest silence while reading or writing
  std::string api_key;     // sent as "Authorization: Bearer KEY" when set
};

struct HttpReply {
  int status = 0;               // 0 when no response came
  std::string body;             // the whole body (for a streamed 200: empty)
  std::string transport_error;  // "" when the exchange completed
  bool ok() const { return transport_error.empty() && status == 200; }
};

HttpReply HttpGet(const BaseUrl& base, const std::string& path, const HttpOptions& options);
HttpReply HttpPostJson(const BaseUrl& base, const std::string& path, const std::string& json_body,
                       const HttpOptions& options);

// POSTs json_body and, when the status is 200, calls on_bytes with each piece
// of the body as it is received (return false to abort: transport_error then
// says "aborted by the client"). Other statuses collect the body in
// HttpReply::body instead.
HttpReply HttpPostStreaming(const BaseUrl& base, const std::string& path, const std::string& json_body,
                            const HttpOptions& options, const std::function<bool(std::string_view)>& on_bytes);

}  // namespace ridge::bench
