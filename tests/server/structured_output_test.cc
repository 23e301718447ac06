// response_format and regex, read from request bodies: the grammar they
// compile to, the order of a schema's properties taken from the body's text,
// and 400s that name the field and the problem.
#include <gtest/gtest.h>

#include <string>

#include "ridge/grammar/matcher.h"
#include "ridge/server/api_error.h"
#include "ridge/server/json_fields.h"
#include "ridge/server/openai_request.h"
#include "ridge/server/structured_output.h"

namespace ridge::server {
namespace {

std::shared_ptr<const grammar::Grammar> FromBody(const std::string& body) {
  return ParseStructuredOutput(ParseJsonObject(body), body).grammar;
}

TEST(StructuredOutputTest, NoneTextAndJsonObject) {
  EXPECT_EQ(FromBody(R"({"prompt": "x"})"), nullptr);
  EXPECT_EQ(FromBody(R"({"prompt": "x", "response_format": {"type": "text"}})"), nullptr);
  auto g = FromBody(R"({"prompt": "x", "response_format": {"type": "json_object"}})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(grammar::MatchesWhole(*g, R"({"a": [1, null]})"));
  EXPECT_FALSE(grammar::MatchesWhole(*g, "[1]"));
}

TEST(StructuredOutputTest, SchemaKeepsTheBodysPropertyOrder) {
  // nlohmann::json sorts keys: "z" after "a". The client wrote z first.
  const std::string body = R"({"messages": [], "response_format": {"type": "json_schema", "json_schema": {
      "name": "t", "strict": true, "schema": {"type": "object", "properties": {"z": {"type": "integer"},
      "a": {"type": "string"}}, "required": ["z", "a"], "additionalProperties": false}}}})";
  auto g = FromBody(body);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(grammar::MatchesWhole(*g, R"({"z": 1, "a": "b"})"));
  EXPECT_FALSE(grammar::MatchesWhole(*g, R"({"a": "b", "z": 1})"));
  EXPECT_EQ(FromBody(body), g) << "the same schema compiles once (cached by its text)";
}

TEST(StructuredOutputTest, Regex) {
  auto g = FromBody(R"({"prompt": "x", "regex": "(yes|no)\\.[0-9]{2}"})");
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(grammar::MatchesWhole(*g, "yes.42"));
  EXPECT_FALSE(grammar::MatchesWhole(*g, "maybe.42"));
}

// The grammar and the field that set it, which errors of following it name.
TEST(StructuredOutputTest, RequestParsersCarryTheGrammarAndItsField) {
  const std::string body = R"({"prompt": "x", "regex": "a+"})";
  const CompletionRequest completion = ParseCompletionRequest(ParseJsonObject(body), body);
  EXPECT_NE(completion.grammar, nullptr);
  EXPECT_EQ(completion.grammar_param, "regex");
  const std::string gbnf = R"({"prompt": "x", "grammar": "root ::= \"a\""})";
  EXPECT_EQ(ParseCompletionRequest(ParseJsonObject(gbnf), gbnf).grammar_param, "grammar");
  const std::string chat = R"({"messages": [{"role": "user", "content": "hi"}],
                               "response_format": {"type": "json_object"}})";
  const ChatRequest constrained = ParseChatRequest(ParseJsonObject(chat), chat);
  EXPECT_NE(constrained.grammar, nullptr);
  EXPECT_EQ(constrained.grammar_param, "response_format");
  const ChatRequest free = ParseChatRequest(ParseJsonObject(R"({"messages": [{"role": "user", "content": "hi"}]})"));
  EXPECT_EQ(free.grammar, nullptr);
  EXPECT_EQ(free.grammar_param, "");
}

TEST(StructuredOutputTest, BadRequestsNameTheFieldAndTheProblem) {
  struct Case {
    std::string body, param, message;
  };
  const std::string schema_param = "response_format.json_schema.schema";
  const std::vector<Case> cases = {
      {R"({"response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema":
          {"type": "object", "properties": {"a": {"type": "string", "not": {}}}}}}})",
       schema_param, "json schema at /properties/a: 'not' is not supported"},
      {R"({"response_format": {"type": "json_schema", "json_schema": {"schema": {"type": "array",
          "items": {"type": "string", "pattern": "(a)\\1"}}}}})",
       schema_param, "json schema at /items/pattern: backreferences are not supported"},
      {R"({"response_format": {"type": "json_schema", "json_schema": {"name": "n"}}})", schema_param, "is required"},
      {R"({"response_format": {"type": "json_schema", "json_schema": {"schema": 3}}})", schema_param,
       "must be an object"},
      {R"({"response_format": {"type": "json_schema"}})", "response_format.json_schema", "is required"},
      {R"({"response_format": {"type": "json_schema", "json_schema": {"name": 5, "schema": {}}}})",
       "response_format.json_schema.name", "string"},
      {R"({"response_format": {"type": "yaml"}})", "response_format.type", "'yaml' is not supported"},
      {R"({"response_format": {}})", "response_format.type", "is required"},
      {R"({"response_format": "json"})", "response_format", "must be an object"},
      {R"js({"regex": "a(?=b)"})js", "regex", "lookahead is not supported at offset 1 of regex 'a(?=b)'"},
      {R"({"regex": 5})", "regex", "string"},
      {R"({"regex": "a", "response_format": {"type": "json_object"}})", "regex", "exclude each other"},
      {R"({"grammar": "root ::= \"a\"", "response_format": {"type": "json_object"}})", "response_format",
       "'response_format' and 'grammar' exclude each other"},
      {R"({"grammar": "root ::= \"a\"", "regex": "a"})", "regex", "'regex' and 'grammar' exclude each other"},
  };
  for (const auto& c : cases) {
    try {
      FromBody(c.body);
      ADD_FAILURE() << c.body << " was accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400) << c.body;
      EXPECT_EQ(e.param(), c.param) << c.body << "\n" << e.what();
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << c.body << "\n" << e.what();
    }
  }
}

}  // namespace
}  // namespace ridge::server
