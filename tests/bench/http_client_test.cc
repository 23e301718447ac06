#include "ridge/bench/http_client.h"

#include <gtest/gtest.h>

#include "ridge/base/error.h"

namespace ridge::bench {
namespace {

TEST(BaseUrlTest, Forms) {
  BaseUrl u = ParseBaseUrl("http://127.0.0.1:8080");
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, 8080);
  EXPECT_EQ(u.path_prefix, "");
  u = ParseBaseUrl("http://localhost");
  EXPECT_EQ(u.host, "localhost");
  EXPECT_EQ(u.port, 80);
  u = ParseBaseUrl("example.org:9000/api/");
  EXPECT_EQ(u.host, "example.org");
  EXPECT_EQ(u.port, 9000);
  EXPECT_EQ(u.path_prefix, "/api");
  EXPECT_EQ(u.ToString(), "http://example.org:9000/api");
  u = ParseBaseUrl("http://[::1]:8081/");
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.port, 8081);
  EXPECT_EQ(u.ToString(), "http://[::1]:8081");
  EXPECT_EQ(ParseBaseUrl("http://[::1]").port, 80);
}

TEST(BaseUrlTest, BadUrlsSayWhy) {
  for (const char* bad : {"https://api.openai.com", "ftp://x", "http://", "http://:80", "http://h:0", "http://h:65536",
                          "http://h:port", "http://[::1", "http://[::1]x"}) {
    try {
      ParseBaseUrl(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--base-url"), std::string::npos) << e.what();
    }
  }
}

TEST(HttpClientTest, RefusedConnectionIsATransportErrorNotAnException) {
  // Port 1 on localhost: nothing listens there.
  HttpOptions options;
  options.timeout_s = 2;
  const HttpReply reply = HttpGet(ParseBaseUrl("http://127.0.0.1:1"), "/v1/models", options);
  EXPECT_FALSE(reply.ok());
  EXPECT_EQ(reply.status, 0);
  EXPECT_FALSE(reply.transport_error.empty());
}

}  // namespace
}  // namespace ridge::bench
