#include "ridge/server/http_request_parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>

namespace ridge::server {
namespace {

constexpr std::string_view kCrlf = "\r\n";
constexpr size_t kMaxHeaders = 100;
constexpr size_t kMaxChunkSizeLine = 1024;  // hex digits and chunk extensions

// RFC 9110 token characters (methods, header names).
bool IsTokenChar(unsigned char c) {
  return std::isalnum(c) || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return IsTokenChar(static_cast<unsigned char>(c)); });
}

// Field values: visible characters, space, tab and bytes >= 0x80; no other control character.
bool IsFieldValue(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c == '\t' || (c >= 0x20 && c != 0x7f);
  });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

// Calls f on each comma-separated, trimmed element of a header value.
template <typename F>
void ForEachListElement(std::string_view value, F f) {
  while (true) {
    const size_t comma = value.find(',');
    f(Trim(value.substr(0, comma)));
    if (comma == std::string_view::npos) return;
    value.remove_prefix(comma + 1);
  }
}

}  // namespace

void HttpRequestParser::Reset() { *this = HttpRequestParser(limits_); }

HttpRequestParser::Result HttpRequestParser::Fail(int status, std::string message) {
  error_status_ = status;
  error_message_ = std::move(message);
  return Result::kError;
}

HttpRequestParser::Result HttpRequestParser::Parse(std::string_view buf) {
  if (error_status_ != 0) return Result::kError;
  if (phase_ == Phase::kDone) return Result::kDone;
  if (phase_ == Phase::kHead) {
    // The head ends at the first empty line; search only the new bytes.
    const size_t from = scanned_ >= 3 ? scanned_ - 3 : 0;
    const size_t end = buf.find("\r\n\r\n", from);
    const size_t head_size = end == std::string_view::npos ? buf.size() : end + 4;
    if (head_size > limits_.max_head_bytes) {
      if (buf.substr(0, limits_.max_head_bytes).find(kCrlf) == std::string_view::npos)
        return Fail(414, fmt::format("the request line is longer than {} bytes", limits_.max_head_bytes));
      return Fail(431, fmt::format("the request headers are larger than {} bytes", limits_.max_head_bytes));
    }
    if (end == std::string_view::npos) {
      scanned_ = buf.size();
      return Result::kNeedMore;
    }
    if (Result r = ParseHead(buf.substr(0, end + 2)); r == Result::kError) return r;
    pos_ = end + 4;
    head_bytes_ = pos_;
    if (Result r = ChooseFraming(); r == Result::kError) return r;
  }
  return ParseBody(buf);
}

HttpRequestParser::Result HttpRequestParser::ParseHead(std::string_view head) {
  // head: every line, each ending in CRLF. A lone CR or LF inside a line is refused below.
  const size_t line_end = head.find(kCrlf);
  const std::string_view line = head.substr(0, line_end);
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
    return Fail(400, "the request line is not 'METHOD TARGET HTTP/1.1'");
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!IsToken(method)) return Fail(400, "the request method is not a token");
  if (target.empty() || target.front() != '/' ||
      !std::all_of(target.begin(), target.end(), [](char c) { return static_cast<unsigned char>(c) > 0x20 && c != 0x7f; }))
    return Fail(400, "the request target must be a path starting with '/'");
  if (version != "HTTP/1.1" && version != "HTTP/1.0") {
    if (version.size() == 8 && version.substr(0, 5) == "HTTP/") return Fail(505, "only HTTP/1.0 and HTTP/1.1 are served");
    return Fail(400, "the request line has no valid HTTP version");
  }
  request_.method = std::string(method);
  request_.target = std::string(target);
  request_.version = std::string(version);
  const size_t query = target.find('?');
  request_.path = httplib::detail::decode_url(std::string(target.substr(0, query)), false);
  if (query != std::string_view::npos) httplib::detail::parse_query_text(std::string(target.substr(query + 1)), request_.params);
  keep_alive_ = version == "HTTP/1.1";

  size_t at = line_end + 2;
  while (at < head.size()) {
    const size_t end = head.find(kCrlf, at);
    if (Result r = ParseHeaderLine(head.substr(at, end - at)); r == Result::kError) return r;
    at = end + 2;
  }
  return Result::kNeedMore;
}

HttpRequestParser::Result HttpRequestParser::ParseHeaderLine(std::string_view line) {
  if (request_.headers.size() >= kMaxHeaders) return Fail(431, fmt::format("more than {} request headers", kMaxHeaders));
  if (!line.empty() && (line.front() == ' ' || line.front() == '\t'))
    return Fail(400, "folded header lines (starting with white space) are not accepted");
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return Fail(400, "a header line has no ':'");
  const std::string_view name = line.substr(0, colon);
  const std::string_view value = Trim(line.substr(colon + 1));
  if (!IsToken(name)) return Fail(400, "a header name is empty or has characters a token cannot have");
  if (!IsFieldValue(value)) return Fail(400, fmt::format("the value of header '{}' has control characters", name));
  request_.headers.emplace(std::string(name), std::string(value));
  return Result::kNeedMore;
}

HttpRequestParser::Result HttpRequestParser::ChooseFraming() {
  const auto& headers = request_.headers;
  for (auto [it, end] = headers.equal_range("Connection"); it != end; ++it)
    ForEachListElement(it->second, [this](std::string_view token) {
      if (EqualsIgnoreCase(token, "close")) keep_alive_ = false;
    });
  for (auto [it, end] = headers.equal_range("Expect"); it != end; ++it)
    if (EqualsIgnoreCase(it->second, "100-continue")) expects_continue_ = true;

  const size_t n_te = headers.count("Transfer-Encoding");
  const size_t n_cl = headers.count("Content-Length");
  if (n_te > 0) {
    if (n_cl > 0) return Fail(400, "a request may not have both Content-Length and Transfer-Encoding");
    if (request_.version == "HTTP/1.0") return Fail(400, "Transfer-Encoding is not defined in HTTP/1.0");
    if (n_te > 1 || !EqualsIgnoreCase(headers.find("Transfer-Encoding")->second, "chunked"))
      return Fail(501, "the only transfer coding accepted is 'chunked'");
    phase_ = Phase::kChunkSize;
    return Result::kNeedMore;
  }
  // Every Content-Length value (repeated headers, comma lists) must be the same number.
  std::optional<uint64_t> length;
  bool valid = true, too_large = false, conflicting = false;
  for (auto [it, end] = headers.equal_range("Content-Length"); it != end; ++it)
    ForEachListElement(it->second, [&](std::string_view v) {
      if (v.empty() || !std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; })) {
        valid = false;
        return;
      }
      const size_t first_digit = std::min(v.find_first_not_of('0'), v.size());
      if (v.size() - first_digit > 18) {
        too_large = true;  // more than any limit can be, and would overflow
        return;
      }
      uint64_t n = 0;
      for (char c : v) n = n * 10 + static_cast<uint64_t>(c - '0');
      if (length && *length != n) conflicting = true;
      length = n;
    });
  if (!valid) return Fail(400, "Content-Length is not a decimal number");
  if (conflicting) return Fail(400, "the request has Content-Length values that differ");
  if (too_large || (length && *length > limits_.max_body_bytes))
    return Fail(413, fmt::format("the request body is larger than {} bytes", limits_.max_body_bytes));
  body_length_ = length.value_or(0);
  phase_ = Phase::kFixedBody;
  return Result::kNeedMore;
}

HttpRequestParser::Result HttpRequestParser::ParseBody(std::string_view buf) {
  while (true) {
    switch (phase_) {
      case Phase::kFixedBody:
        if (buf.size() - pos_ < body_length_) return Result::kNeedMore;
        request_.body.assign(buf.substr(pos_, body_length_));
        pos_ += body_length_;
        phase_ = Phase::kDone;
        break;
      case Phase::kChunkSize: {
        const size_t end = buf.find(kCrlf, pos_);
        if (end == std::string_view::npos) {
          if (buf.size() - pos_ > kMaxChunkSizeLine) return Fail(400, "a chunk size line is too long");
          return Result::kNeedMore;
        }
        const std::string_view line = buf.substr(pos_, end - pos_);
        const size_t n_digits = std::min(line.find_first_not_of("0123456789abcdefABCDEF"), line.size());
        if (n_digits == 0 || (n_digits < line.size() && line[n_digits] != ';' && line[n_digits] != ' ' &&
                              line[n_digits] != '\t'))
          return Fail(400, "a chunk size is not a hexadecimal number");
        const std::string_view digits = line.substr(0, n_digits);
        const size_t significant = digits.size() - std::min(digits.find_first_not_of('0'), digits.size());
        const uint64_t size = significant > 15 ? UINT64_MAX : std::stoull(std::string(digits), nullptr, 16);
        if (size > limits_.max_body_bytes - request_.body.size())
          return Fail(413, fmt::format("the request body is larger than {} bytes", limits_.max_body_bytes));
        pos_ = end + 2;
        chunk_left_ = static_cast<size_t>(size);
        phase_ = size == 0 ? Phase::kTrailers : Phase::kChunkData;
        break;
      }
      case Phase::kChunkData: {
        const size_t take = std::min(chunk_left_, buf.size() - pos_);
        request_.body.append(buf.substr(pos_, take));
        pos_ += take;
        chunk_left_ -= take;
        if (chunk_left_ > 0) return Result::kNeedMore;
        phase_ = Phase::kChunkEnd;
        break;
      }
      case Phase::kChunkEnd:
        if (buf.size() - pos_ < 2) return Result::kNeedMore;
        if (buf.substr(pos_, 2) != kCrlf) return Fail(400, "a chunk is longer than its size says");
        pos_ += 2;
        phase_ = Phase::kChunkSize;
        break;
      case Phase::kTrailers: {
        // Trailer fields are read and dropped; they count against the head limit.
        const size_t end = buf.find(kCrlf, pos_);
        const size_t line_bytes = (end == std::string_view::npos ? buf.size() : end + 2) - pos_;
        if (head_bytes_ + line_bytes > limits_.max_head_bytes)
          return Fail(431, fmt::format("the request headers are larger than {} bytes", limits_.max_head_bytes));
        if (end == std::string_view::npos) return Result::kNeedMore;
        head_bytes_ += line_bytes;
        pos_ = end + 2;
        if (line_bytes == 2) phase_ = Phase::kDone;
        break;
      }
      case Phase::kDone:
        return Result::kDone;
      case Phase::kHead:
        return Fail(500, "internal error: body parsing before the head");
    }
  }
}

}  // namespace ridge::server
