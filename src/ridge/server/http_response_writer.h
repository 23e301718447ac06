#pragma once
// Writes an httplib::Response as HTTP/1.1 on a non-blocking socket, for the
// server's front (http_front.h): a fixed body with Content-Length, or a
// chunked content provider (SSE streams) driven until it says done or a
// write fails. A write that cannot progress for write_timeout (a client that
// stopped reading) fails.
#include <httplib.h>

#include <chrono>
#include <string>

namespace ridge::server {

// The head of a response: status line, the response's headers, the framing
// header, and "Connection: keep-alive" or "close".
std::string ResponseHead(const httplib::Response& res, bool keep_alive);

// Sends all of `data`, waiting for the socket to drain when it is full.
// False when the peer is gone or the socket stayed full for `timeout`.
bool SendAll(int fd, std::string_view data, std::chrono::milliseconds timeout);

// Writes the whole response. False if it could not be written completely
// (the connection must then be closed). Records the provider's outcome in
// res.content_provider_success_, which the response's releaser receives.
bool WriteResponse(int fd, httplib::Response& res, bool keep_alive, std::chrono::milliseconds timeout);

}  // namespace ridge::server
