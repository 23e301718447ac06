#pragma once
// Strict, incremental HTTP/1.1 request parsing for the server's front
// (http_front.h). It refuses what proxies and servers may read differently
// (request smuggling): Content-Length together with Transfer-Encoding,
// Content-Length values that disagree, transfer codings other than
// "chunked", folded header lines, control characters. Sizes are checked as
// soon as they are known: a head over max_head_bytes is 431 (414 when the
// request line alone is), a body over max_body_bytes is 413, whether
// Content-Length or a chunk size line announces it.
#include <httplib.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace ridge::server {

struct HttpLimits {
  size_t max_head_bytes = size_t{32} << 10;  // request line + headers (and chunked trailers)
  size_t max_body_bytes = size_t{4} << 20;
};

class HttpRequestParser {
 public:
  enum class Result { kNeedMore, kDone, kError };

  explicit HttpRequestParser(HttpLimits limits) : limits_(limits) {}

  // Parses the bytes received so far on a connection (`buf` starts at the
  // request's first byte, and only grows between calls until kDone). It
  // keeps its place, so each byte is looked at about once. On kDone,
  // request() is complete and the first consumed() bytes of `buf` were it;
  // on kError, error_status() and error_message() say why. Reset() before
  // the next request on the connection.
  Result Parse(std::string_view buf);
  void Reset();

  // Whether the head has been parsed (the request line and headers are valid).
  bool head_done() const { return phase_ != Phase::kHead; }
  // The client sent "Expect: 100-continue" and waits for it before its body.
  bool expects_continue() const { return expects_continue_; }
  // The connection may carry another request after this one.
  bool keep_alive() const { return keep_alive_; }
  httplib::Request& request() { return request_; }
  size_t consumed() const { return pos_; }
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }

 private:
  enum class Phase { kHead, kFixedBody, kChunkSize, kChunkData, kChunkEnd, kTrailers, kDone };
  Result Fail(int status, std::string message);
  Result ParseHead(std::string_view head);
  Result ParseHeaderLine(std::string_view line);
  Result ChooseFraming();
  Result ParseBody(std::string_view buf);

  HttpLimits limits_;
  Phase phase_ = Phase::kHead;
  size_t pos_ = 0;            // bytes of buf consumed so far
  size_t scanned_ = 0;        // kHead: bytes already searched for the end of the head
  size_t head_bytes_ = 0;     // head (and trailer) bytes, against max_head_bytes
  size_t body_length_ = 0;    // kFixedBody: Content-Length
  size_t chunk_left_ = 0;     // kChunkData: bytes of the current chunk still to come
  bool expects_continue_ = false;
  bool keep_alive_ = true;
  httplib::Request request_;
  int error_status_ = 0;
  std::string error_message_;
};

}  // namespace ridge::server
