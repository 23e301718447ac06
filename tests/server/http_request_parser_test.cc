// The strict HTTP/1.1 request parser alone: fed all at once or one byte at a
// time it reads the same request, and it refuses each ambiguous framing.
#include "ridge/server/http_request_parser.h"

#include <gtest/gtest.h>

namespace ridge::server {
namespace {

using Result = HttpRequestParser::Result;

// Feeds `bytes` in pieces of `step` bytes; returns the final result.
Result Feed(HttpRequestParser& p, const std::string& bytes, size_t step) {
  Result r = Result::kNeedMore;
  for (size_t n = step; r == Result::kNeedMore; n += step) {
    r = p.Parse(std::string_view(bytes).substr(0, std::min(n, bytes.size())));
    if (n >= bytes.size()) break;
  }
  return r;
}

TEST(HttpRequestParser, ReadsTheSameRequestWhateverThePieces) {
  const std::string request =
      "POST /v1/x%20y?a=1&b=two HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
      "3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nTrailer: t\r\n\r\n"
      "GET /next HTTP/1.1\r\n\r\n";  // pipelined: not consumed
  for (size_t step : {request.size(), size_t{1}, size_t{7}}) {
    SCOPED_TRACE(step);
    HttpRequestParser p(HttpLimits{});
    ASSERT_EQ(Feed(p, request, step), Result::kDone) << p.error_message();
    EXPECT_EQ(p.request().method, "POST");
    EXPECT_EQ(p.request().path, "/v1/x y");
    EXPECT_EQ(p.request().get_param_value("b"), "two");
    EXPECT_EQ(p.request().body, "abcde");
    EXPECT_EQ(p.request().get_header_value("host"), "h");
    EXPECT_TRUE(p.keep_alive());
    EXPECT_EQ(request.substr(p.consumed()), "GET /next HTTP/1.1\r\n\r\n");
  }
}

TEST(HttpRequestParser, RefusesWhatCouldBeReadTwoWays) {
  const std::vector<std::pair<std::string, int>> cases = {
      {"POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 501},
      {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n", 400},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n", 400},
      {"GET / HTTP/2.0\r\n\r\n", 505},
      {"GET  / HTTP/1.1\r\n\r\n", 400},
      {"GET / HTTP/1.1\r\nBad\rHeader: x\r\n\r\n", 400},
      {"POST / HTTP/1.1\r\nContent-Length: 4194305\r\n\r\n", 413},
      {"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffffff\r\n", 413},
  };
  for (const auto& [bytes, status] : cases) {
    SCOPED_TRACE(bytes);
    HttpRequestParser p(HttpLimits{});
    ASSERT_EQ(p.Parse(bytes), Result::kError);
    EXPECT_EQ(p.error_status(), status) << p.error_message();
    EXPECT_FALSE(p.error_message().empty());
  }
}

TEST(HttpRequestParser, ConnectionCloseAndHttp10EndTheConnection) {
  HttpRequestParser close(HttpLimits{});
  ASSERT_EQ(close.Parse("GET / HTTP/1.1\r\nConnection: keep-alive, Close\r\n\r\n"), Result::kDone);
  EXPECT_FALSE(close.keep_alive());
  HttpRequestParser old(HttpLimits{});
  ASSERT_EQ(old.Parse("GET / HTTP/1.0\r\n\r\n"), Result::kDone);
  EXPECT_FALSE(old.keep_alive());
}

}  // namespace
}  // namespace ridge::server
