// response_format and regex over real HTTP on stories260K: chat and
// completion answers (streamed or not) are JSON that python3-jsonschema
// validates, or text the regex matches; a schema ridge cannot enforce is a
// 400 that names the field, the JSON pointer and the keyword.
#include <gtest/gtest.h>

#include "grammar/schema_oracle.h"
#include "ridge/grammar/gbnf.h"
#include "ridge/grammar/matcher.h"
#include "ridge/grammar/regex_to_gbnf.h"
#include "server_test_util.h"

namespace ridge::server {
namespace {

using nlohmann::json;
using namespace testing;

class StructuredOutputHttp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new TestServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static int port() { return server_->port(); }
  static TestServer* server_;
};
TestServer* StructuredOutputHttp::server_ = nullptr;

// Written as a client would: properties in an order nlohmann::json would sort differently.
const char* kSchema = R"({"type":"object","properties":{"title":{"type":"string","maxLength":12},
  "rating":{"type":"integer","minimum":1,"maximum":5},"genres":{"type":"array","items":{"enum":["fairy tale",
  "adventure","fable"]},"minItems":1,"maxItems":2}},"required":["title","rating","genres"],
  "additionalProperties":false})";

TEST_F(StructuredOutputHttp, ChatJsonSchemaAnswersValidate) {
  std::vector<std::pair<std::string, std::string>> answers;
  for (bool stream : {false, true}) {
    for (double temperature : {0.0, 1.0}) {
      const std::string body = R"({"messages":[{"role":"user","content":"Rate a story."}],"max_tokens":300,
          "seed":7,"temperature":)" + std::to_string(temperature) + R"(,"stream":)" + (stream ? "true" : "false") +
                               R"(,"response_format":{"type":"json_schema","json_schema":{"name":"review",
          "strict":true,"schema":)" + kSchema + "}}}";
      auto res = Post(port(), "/v1/chat/completions", body);
      ASSERT_TRUE(res);
      ASSERT_EQ(res->status, 200) << res->body;
      std::string content, finish;
      if (stream) {
        StreamResult r = ParseStream(res->body, true);
        content = r.text, finish = r.finish_reason;
      } else {
        const json answer = json::parse(res->body);
        content = answer["choices"][0]["message"]["content"];
        finish = answer["choices"][0]["finish_reason"];
      }
      EXPECT_EQ(finish, "stop") << content;
      // Property order as the client wrote it: title first.
      EXPECT_EQ(content.find("\"title\""), content.find_first_not_of(" \n\t{")) << content;
      answers.emplace_back(kSchema, content);
    }
  }
  const auto verdicts = ridge::testing::ValidateWithOracle(answers);
  for (size_t i = 0; i < verdicts.size(); ++i)
    EXPECT_TRUE(verdicts[i].ok) << verdicts[i].error << "\n" << answers[i].second;
}

TEST_F(StructuredOutputHttp, CompletionJsonObjectAndRegex) {
  auto res = Post(port(), "/v1/completions",
                  R"({"prompt":"Once upon a time","max_tokens":200,"temperature":0,
                      "response_format":{"type":"json_object"}})");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json answer = json::parse(res->body);
  if (answer["choices"][0]["finish_reason"] == "stop") {
    const json parsed = json::parse(answer["choices"][0]["text"].get<std::string>());
    EXPECT_TRUE(parsed.is_object()) << parsed;
  }
  const std::string regex = "(Lily|Tom) (is|was) [a-z]{2,8}\\.";
  res = Post(port(), "/v1/completions",
             json{{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 1}, {"seed", 2}, {"regex", regex}}
                 .dump());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json regex_answer = json::parse(res->body);
  EXPECT_EQ(regex_answer["choices"][0]["finish_reason"], "stop");
  const std::string text = regex_answer["choices"][0]["text"];
  EXPECT_TRUE(grammar::MatchesWhole(*grammar::ParseGbnf(grammar::RegexToGbnf(regex)), text)) << text;
}

TEST_F(StructuredOutputHttp, UnsupportedSchemaIsA400NamingTheKeyword) {
  auto res = Post(port(), "/v1/chat/completions",
                  R"({"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema",
                      "json_schema":{"name":"x","schema":{"type":"object","properties":{"tags":{"type":"array",
                      "uniqueItems":true}}}}}})");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  const json error = json::parse(res->body)["error"];
  EXPECT_EQ(error["param"], "response_format.json_schema.schema");
  EXPECT_NE(error["message"].get<std::string>().find("/properties/tags: 'uniqueItems' is not supported"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace ridge::server
