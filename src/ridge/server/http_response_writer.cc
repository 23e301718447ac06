#include "ridge/server/http_response_writer.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

namespace ridge::server {
namespace {

const char* Reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return status < 400 ? "OK" : status < 500 ? "Bad Request" : "Internal Server Error";
  }
}

}  // namespace

std::string ResponseHead(const httplib::Response& res, bool keep_alive) {
  std::string head = fmt::format("HTTP/1.1 {} {}\r\n", res.status, Reason(res.status));
  for (const auto& [name, value] : res.headers) head += fmt::format("{}: {}\r\n", name, value);
  if (res.content_provider_)
    head += "Transfer-Encoding: chunked\r\n";
  else
    head += fmt::format("Content-Length: {}\r\n", res.body.size());
  head += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return head;
}

bool SendAll(int fd, std::string_view data, std::chrono::milliseconds timeout) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n > 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      pollfd p{fd, POLLOUT, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(timeout.count()));
      if (ready < 0 && errno == EINTR) continue;
      if (ready <= 0 || (p.revents & (POLLERR | POLLHUP | POLLNVAL))) return false;
      continue;
    }
    return false;
  }
  return true;
}

bool WriteResponse(int fd, httplib::Response& res, bool keep_alive, std::chrono::milliseconds timeout) {
  if (!res.content_provider_) return SendAll(fd, ResponseHead(res, keep_alive) + res.body, timeout);
  // The server's handlers set only chunked providers (set_chunked_content_provider).
  if (!SendAll(fd, ResponseHead(res, keep_alive), timeout)) return false;
  bool ok = true, done = false;
  size_t offset = 0;
  httplib::DataSink sink;
  sink.write = [&](const char* data, size_t size) {
    if (!ok) return false;
    if (size == 0) return true;  // an empty chunk would end the body
    ok = SendAll(fd, fmt::format("{:x}\r\n", size) + std::string(data, size) + "\r\n", timeout);
    offset += size;
    return ok;
  };
  sink.done = [&] { done = true; };
  sink.is_writable = [&] { return ok; };
  while (ok && !done)
    if (!res.content_provider_(offset, /*length, unused by chunked providers=*/0, sink)) ok = false;
  if (ok) ok = SendAll(fd, "0\r\n\r\n", timeout);
  res.content_provider_success_ = ok;
  return ok;
}

}  // namespace ridge::server
