#include "ridge/bench/http_client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "ridge/base/error.h"

namespace ridge::bench {
namespace {

std::unique_ptr<httplib::Client> MakeClient(const BaseUrl& base, const HttpOptions& options) {
  auto client = std::make_unique<httplib::Client>(base.host, base.port);
  const double timeout_s = std::max(options.timeout_s, 0.001);
  const auto sec = static_cast<time_t>(std::floor(timeout_s));
  const auto usec = static_cast<time_t>((timeout_s - std::floor(timeout_s)) * 1e6);
  client->set_connection_timeout(sec, usec);
  client->set_read_timeout(sec, usec);
  client->set_write_timeout(sec, usec);
  client->set_tcp_nodelay(true);
  client->set_keep_alive(false);
  if (!options.api_key.empty()) client->set_bearer_token_auth(options.api_key.c_str());
  return client;
}

std::string TransportError(httplib::Error error) {
  switch (error) {
    case httplib::Error::Success: return "";
    case httplib::Error::Connection: return "could not connect";
    case httplib::Error::Read: return "connection lost while reading the response";
    case httplib::Error::Write: return "connection lost while sending the request";
    case httplib::Error::ConnectionTimeout: return "connection timed out";
    case httplib::Error::Canceled: return "aborted by the client";
    default: return "HTTP transport error: " + httplib::to_string(error);
  }
}

HttpReply FromResult(const httplib::Result& result) {
  HttpReply reply;
  if (!result) {
    reply.transport_error = TransportError(result.error());
    return reply;
  }
  reply.status = result->status;
  reply.body = result->body;
  return reply;
}

}  // namespace

std::string BaseUrl::ToString() const {
  const bool ipv6 = host.find(':') != std::string::npos;
  return fmt::format("http://{}{}{}:{}{}", ipv6 ? "[" : "", host, ipv6 ? "]" : "", port, path_prefix);
}

BaseUrl ParseBaseUrl(const std::string& url) {
  std::string rest = url;
  if (rest.rfind("https://", 0) == 0)
    Fail("--base-url '{}': https is not supported (this build's HTTP client has no TLS); use http://", url);
  if (rest.rfind("http://", 0) == 0) rest = rest.substr(7);
  else if (rest.find("://") != std::string::npos) Fail("--base-url '{}': only http:// URLs are supported", url);
  BaseUrl base;
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) base.path_prefix = rest.substr(slash);
  while (!base.path_prefix.empty() && base.path_prefix.back() == '/') base.path_prefix.pop_back();
  std::string port_text;
  bool has_port = false;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) Fail("--base-url '{}': unterminated IPv6 address", url);
    base.host = authority.substr(1, close - 1);
    const std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') Fail("--base-url '{}': unexpected '{}' after the IPv6 address", url, after);
      port_text = after.substr(1);
      has_port = true;
    }
  } else {
    const size_t colon = authority.rfind(':');
    base.host = authority.substr(0, colon);
    if (colon != std::string::npos) {
      port_text = authority.substr(colon + 1);
      has_port = true;
    }
  }
  if (base.host.empty()) Fail("--base-url '{}': no host", url);
  if (has_port) {
    errno = 0;
    char* end = nullptr;
    const long port = std::strtol(port_text.c_str(), &end, 10);
    if (port_text.empty() || *end != '\0' || port < 1 || port > 65535)
      Fail("--base-url '{}': port '{}' is not a number in 1..65535", url, port_text);
    base.port = static_cast<int>(port);
  }
  return base;
}

HttpReply HttpGet(const BaseUrl& base, const std::string& path, const HttpOptions& options) {
  auto client = MakeClient(base, options);
  return FromResult(client->Get(base.path_prefix + path));
}

HttpReply HttpPostJson(const BaseUrl& base, const std::string& path, const std::string& json_body,
                       const HttpOptions& options) {
  auto client = MakeClient(base, options);
  return FromResult(client->Post(base.path_prefix + path, json_body, "application/json"));
}

HttpReply HttpPostStreaming(const BaseUrl& base, const std::string& path, const std::string& json_body,
                            const HttpOptions& options, const std::function<bool(std::string_view)>& on_bytes) {
  auto client = MakeClient(base, options);
  httplib::Request request;
  request.method = "POST";
  request.path = base.path_prefix + path;
  request.headers.emplace("Accept", "text/event-stream");
  request.headers.emplace("Content-Type", "application/json");
  request.body = json_body;
  HttpReply reply;
  request.response_handler = [&reply](const httplib::Response& response) {
    reply.status = response.status;
    return true;
  };
  request.content_receiver = [&reply, &on_bytes](const char* data, size_t n, uint64_t, uint64_t) {
    if (reply.status != 200) {
      reply.body.append(data, n);
      return true;
    }
    return on_bytes(std::string_view(data, n));
  };
  const httplib::Result result = client->send(request);
  if (!result) reply.transport_error = TransportError(result.error());
  else reply.status = result->status;
  return reply;
}

}  // namespace ridge::bench
