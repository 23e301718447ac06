// The `grammar` request field (GBNF, as llama.cpp's server takes it) over
// real HTTP on stories260K: completions and chat, streamed or not, give text
// in the grammar's language; a malformed or mistyped grammar is a 400 naming
// the field and the grammar's line and column, and so is one too ambiguous to follow.
#include <gtest/gtest.h>

#include "ridge/grammar/gbnf.h"
#include "ridge/grammar/matcher.h"
#include "server_test_util.h"

namespace ridge::server {
namespace {

using nlohmann::json;
using namespace testing;

class GrammarHttp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new TestServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static int port() { return server_->port(); }
  inline static TestServer* server_ = nullptr;
};

constexpr const char* kAnswerGbnf = "root ::= \" \" (\"yes\" | \"no\") \", \" [a-z]{2,10} \".\"";

TEST_F(GrammarHttp, CompletionTextIsInTheGrammar) {
  const auto grammar = grammar::ParseGbnf(kAnswerGbnf);
  for (double temperature : {0.0, 1.0}) {
    for (bool stream : {false, true}) {
      const json body = {{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", temperature},
                         {"seed", 7}, {"stream", stream}, {"grammar", kAnswerGbnf}};
      auto res = Post(port(), "/v1/completions", body.dump());
      ASSERT_TRUE(res);
      ASSERT_EQ(res->status, 200) << res->body;
      std::string text, finish;
      if (stream) {
        const StreamResult r = ParseStream(res->body, false);
        text = r.text;
        finish = r.finish_reason;
      } else {
        const json j = json::parse(res->body);
        text = j["choices"][0]["text"];
        finish = j["choices"][0]["finish_reason"];
      }
      EXPECT_EQ(finish, "stop") << text;
      EXPECT_TRUE(grammar::MatchesWhole(*grammar, text)) << text;
    }
  }
}

TEST_F(GrammarHttp, ChatContentIsInTheGrammar) {
  const char* gbnf = R"(root ::= "{\"answer\": " ("true" | "false") ", \"why\": \"" [a-z ]{0,20} "\"}")";
  const auto grammar = grammar::ParseGbnf(gbnf);
  for (bool stream : {false, true}) {
    const json body = {{"messages", json::array({{{"role", "user"}, {"content", "Is the sky blue?"}}})},
                       {"max_tokens", 60}, {"temperature", 1.0}, {"seed", 3}, {"stream", stream}, {"grammar", gbnf}};
    auto res = Post(port(), "/v1/chat/completions", body.dump());
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const std::string content = stream ? ParseStream(res->body, true).text
                                       : json::parse(res->body)["choices"][0]["message"]["content"].get<std::string>();
    ASSERT_TRUE(grammar::MatchesWhole(*grammar, content)) << content;
    const json answer = json::parse(content);  // and so it is JSON
    EXPECT_TRUE(answer["answer"].is_boolean());
  }
}

TEST_F(GrammarHttp, BadGrammarIsA400NamingLineAndColumn) {
  struct Case {
    json grammar;
    std::string expected;  // part of the message
  };
  const Case cases[] = {
      {"root ::= \"a\"\nitem ::= [a-z\n", "'grammar' is not valid GBNF: grammar line 2 col 10: unterminated character class"},
      {"start ::= \"a\"", "grammar line 1 col 1: no rule named 'root'"},
      {"root ::= x x\nx ::= x \"a\" | \"b\"", "grammar line 2 col 1: rule 'x' is left-recursive"},
      {42, "'grammar' must be a string"},
  };
  for (const Case& c : cases) {
    for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
      json body = {{"max_tokens", 5}, {"grammar", c.grammar}};
      if (std::string(path) == "/v1/completions") {
        body["prompt"] = "Once";
      } else {
        body["messages"] = json::array({{{"role", "user"}, {"content", "hi"}}});
      }
      auto res = Post(port(), path, body.dump());
      ASSERT_TRUE(res);
      EXPECT_EQ(res->status, 400) << res->body;
      const json error = json::parse(res->body)["error"];
      EXPECT_EQ(error["param"], "grammar") << res->body;
      EXPECT_NE(error["message"].get<std::string>().find(c.expected), std::string::npos) << res->body;
    }
  }
}

// A grammar that cannot be followed within the grammar module's bounds is
// the client's error, named by its field: refused at admission when its
// first parses are already too many, or ended during generation when the
// parses after a token are; streamed, the error event says the same.
TEST_F(GrammarHttp, GrammarPastItsBoundsIsA400NamingItsField) {
  std::string wide = "root ::= \"w0\"";
  for (int i = 1; i < 70000; ++i) wide += " | \"w" + std::to_string(i) + "\"";
  std::string optional_as;  // one 'a' could sit in any of 2000 slots: ~2 M parses after it
  for (int i = 0; i < 2000; ++i) optional_as += "a?";
  struct Case {
    const char* field;
    std::string value;
  };
  for (const Case& c : {Case{"grammar", wide}, Case{"regex", optional_as}}) {
    for (bool stream : {false, true}) {
      const json body = {{"prompt", "Once"}, {"max_tokens", 5}, {"stream", stream}, {c.field, c.value}};
      auto res = Post(port(), "/v1/completions", body.dump());
      ASSERT_TRUE(res);
      const bool admitted = std::string(c.field) == "regex";  // a stream's status then went out before the error
      json error;
      if (stream && admitted) {
        EXPECT_EQ(res->status, 200) << res->body;
        const size_t at = res->body.find("data: {\"error\"");
        ASSERT_NE(at, std::string::npos) << res->body;
        const size_t start = at + 6;
        error = json::parse(res->body.substr(start, res->body.find('\n', start) - start))["error"];
      } else {
        EXPECT_EQ(res->status, 400) << c.field << (stream ? " streamed" : "");
        error = json::parse(res->body)["error"];
      }
      EXPECT_EQ(error["type"], "invalid_request_error") << error.dump();
      EXPECT_EQ(error["param"], c.field) << error.dump();
      EXPECT_NE(error["message"].get<std::string>().find("too ambiguous to constrain generation"), std::string::npos)
          << error.dump();
    }
  }
  // And the server goes on serving.
  auto res = Post(port(), "/v1/completions", json{{"prompt", "Once"}, {"max_tokens", 3}}.dump());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
}

}  // namespace
}  // namespace ridge::server
