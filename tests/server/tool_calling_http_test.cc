// Tool calling over real HTTP on stories260K (no chat template: the generic
// form). A tiny story model never decides to call a tool, so the calls here
// are forced: tool_choice naming a function or "required" constrains the
// reply with the tools' schemas (tool_call_grammar.h), and the reply must come
// back as OpenAI's tool_calls, streamed or not, with arguments that satisfy
// the schema. The schema of a forced reply is checked on its own too.
#include <gtest/gtest.h>

#include "ridge/grammar/gbnf.h"
#include "ridge/grammar/json_schema_to_gbnf.h"
#include "ridge/grammar/matcher.h"
#include "ridge/server/json_fields.h"
#include "ridge/server/tool_call_grammar.h"
#include "server_test_util.h"

namespace ridge::server {
namespace {

using nlohmann::json;
using namespace testing;

class ToolCallingHttp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = new TestServer(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  static int port() { return server_->port(); }
  inline static TestServer* server_ = nullptr;
};

const char* kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string", "maxLength": 8}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
    "required": ["city", "days"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "ping"}}])";

json Request(json tool_choice, bool stream, bool parallel = true, int max_tokens = 100) {
  return {{"messages", json::array({{{"role", "user"}, {"content", "Weather?"}}})},
          {"tools", json::parse(kTools)},
          {"tool_choice", std::move(tool_choice)},
          {"parallel_tool_calls", parallel},
          {"max_tokens", max_tokens},
          {"temperature", 1.0},
          {"seed", 11},
          {"stream", stream}};
}

void ExpectWeatherArguments(const std::string& arguments) {
  const json args = json::parse(arguments);
  ASSERT_TRUE(args.is_object()) << arguments;
  ASSERT_TRUE(args.contains("city") && args["city"].is_string()) << arguments;
  EXPECT_LE(args["city"].get<std::string>().size(), 8u) << arguments;
  ASSERT_TRUE(args.contains("days") && args["days"].is_number_integer()) << arguments;
  EXPECT_GE(args["days"].get<int>(), 1);
  EXPECT_LE(args["days"].get<int>(), 7);
  EXPECT_EQ(args.size(), 2u) << arguments;
}

// The calls of a streamed reply, put together from its delta.tool_calls chunks.
json CallsFromStream(const StreamResult& r) {
  json calls = json::array();
  for (const json& chunk : r.chunks) {
    if (!chunk.contains("choices") || chunk["choices"].empty()) continue;
    const json& delta = chunk["choices"][0]["delta"];
    if (!delta.contains("tool_calls")) continue;
    for (const json& d : delta["tool_calls"]) {
      const size_t index = d["index"];
      while (calls.size() <= index) calls.push_back({{"id", ""}, {"name", ""}, {"arguments", ""}});
      if (d.contains("id")) calls[index]["id"] = d["id"];
      if (d.contains("function") && d["function"].contains("name")) calls[index]["name"] = d["function"]["name"];
      if (d.contains("function") && d["function"].contains("arguments"))
        calls[index]["arguments"] = calls[index]["arguments"].get<std::string>() + d["function"]["arguments"].get<std::string>();
    }
  }
  return calls;
}

TEST_F(ToolCallingHttp, NamedToolChoiceForcesAValidCall) {
  const json choice = {{"type", "function"}, {"function", {{"name", "get_weather"}}}};
  auto whole = Post(port(), "/v1/chat/completions", Request(choice, false).dump());
  ASSERT_TRUE(whole);
  ASSERT_EQ(whole->status, 200) << whole->body;
  const json r = json::parse(whole->body);
  const json& c = r["choices"][0];
  EXPECT_EQ(c["finish_reason"], "tool_calls") << whole->body;
  EXPECT_TRUE(c["message"]["content"].is_null());
  ASSERT_EQ(c["message"]["tool_calls"].size(), 1u);
  const json& call = c["message"]["tool_calls"][0];
  EXPECT_EQ(call["type"], "function");
  EXPECT_EQ(call["function"]["name"], "get_weather");
  ExpectWeatherArguments(call["function"]["arguments"]);

  auto streamed = Post(port(), "/v1/chat/completions", Request(choice, true).dump());
  ASSERT_TRUE(streamed);
  ASSERT_EQ(streamed->status, 200);
  const StreamResult s = ParseStream(streamed->body, true);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.finish_reason, "tool_calls");
  EXPECT_EQ(s.text, "");  // no content
  const json calls = CallsFromStream(s);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0]["name"], "get_weather");
  EXPECT_EQ(calls[0]["arguments"], call["function"]["arguments"]);  // same seed, same reply
  EXPECT_TRUE(calls[0]["id"].get<std::string>().starts_with("call_"));
}

TEST_F(ToolCallingHttp, RequiredToolChoiceForcesCallsOfTheGivenTools) {
  int judged = 0;
  for (bool parallel : {true, false}) {
    SCOPED_TRACE(parallel ? "parallel" : "one call");
    auto res = Post(port(), "/v1/chat/completions", Request("required", false, parallel, 200).dump());
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status, 200) << res->body;
    const json reply = json::parse(res->body);
    const json& c = reply["choices"][0];
    if (c["finish_reason"] == "length") continue;  // the budget ran out inside the JSON: nothing to judge
    ++judged;
    EXPECT_EQ(c["finish_reason"], "tool_calls") << res->body;
    const json& calls = c["message"]["tool_calls"];
    ASSERT_GE(calls.size(), 1u) << res->body;
    if (!parallel) {
      EXPECT_EQ(calls.size(), 1u);
    }
    for (const json& call : calls) {
      const std::string name = call["function"]["name"];
      if (name == "get_weather")
        ExpectWeatherArguments(call["function"]["arguments"]);
      else
        EXPECT_EQ(name, "ping");
    }
  }
  EXPECT_GE(judged, 1) << "every reply ran out of tokens";
}

TEST_F(ToolCallingHttp, ForcedCallsRefuseOtherConstraintsAndBadSchemas) {
  json body = Request("required", false);
  body["response_format"] = {{"type", "json_object"}};
  auto res = Post(port(), "/v1/chat/completions", body.dump());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["error"]["param"], "tool_choice");

  body = Request({{"type", "function"}, {"function", {{"name", "bad"}}}}, false);
  body["tools"] = json::parse(R"([{"type": "function", "function": {"name": "bad",
      "parameters": {"type": "object", "properties": {"x": {"type": "array", "uniqueItems": true}}}}}])");
  res = Post(port(), "/v1/chat/completions", body.dump());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  const json error = json::parse(res->body)["error"];
  EXPECT_EQ(error["param"], "tools[0].function.parameters") << res->body;
  EXPECT_NE(error["message"].get<std::string>().find("uniqueItems"), std::string::npos) << res->body;
}

TEST(ToolCallGrammar, RequiredSchemaKeepsEachToolsReferencesPointingIntoItsOwnSchema) {
  const char* body = R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required",
    "parallel_tool_calls": false,
    "tools": [{"type": "function", "function": {"name": "tree", "parameters": {
      "$defs": {"node": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"},
                                                                    "maxItems": 2}},
                         "required": ["kids"], "additionalProperties": false}},
      "type": "object", "properties": {"root": {"$ref": "#/$defs/node"}}, "required": ["root"],
      "additionalProperties": false}}}]})";
  const ChatRequest r = ParseChatRequest(ParseJsonObject(body), body);
  ASSERT_EQ(r.tool_choice, ToolChoice::kRequired);
  ASSERT_TRUE(r.grammar);
  EXPECT_EQ(r.grammar_param, "tool_choice");
  const nlohmann::ordered_json schema = ForcedToolCallSchema(r);
  EXPECT_EQ(schema["maxItems"], 1);
  EXPECT_EQ(schema["$defs"]["tool0"]["properties"]["root"]["$ref"], "#/$defs/tool0/$defs/node");
  const auto grammar = grammar::ParseGbnf(grammar::JsonSchemaToGbnf(schema.dump()));
  EXPECT_TRUE(grammar::MatchesWhole(
      *grammar, R"([{"name": "tree", "parameters": {"root": {"kids": [{"kids": []}, {"kids": [{"kids": []}]}]}}}])"));
  EXPECT_FALSE(grammar::MatchesWhole(*grammar, R"([{"name": "tree", "parameters": {"root": {}}}])"));
  EXPECT_FALSE(grammar::MatchesWhole(*grammar, R"([{"name": "other", "parameters": {"root": {"kids": []}}}])"));
  EXPECT_FALSE(grammar::MatchesWhole(  // one call at most without parallel_tool_calls
      *grammar, R"([{"name": "tree", "parameters": {"root": {"kids": []}}}, {"name": "tree", "parameters": {"root": {"kids": []}}}])"));
}

}  // namespace
}  // namespace ridge::server
