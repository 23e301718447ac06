// Tool calls parsed out of model text, per format, whole and fed in every
// split (a token boundary can fall anywhere, inside a marker or a UTF-8
// character): the same content and the same calls either way.
#include "ridge/server/tool_call_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ridge::server {
namespace {

struct Parsed {
  std::string content;
  std::vector<ToolCall> calls;
};

Parsed Whole(ToolCallFormat format, std::string_view text) {
  ToolCallEvents e = ParseToolCalls(format, text);
  Parsed p{e.content, {}};
  for (auto& [index, call] : e.calls) {
    EXPECT_EQ(index, static_cast<int>(p.calls.size()));
    p.calls.push_back(call);
  }
  return p;
}

// Fed in pieces of `piece` bytes; content released as it goes.
Parsed Streamed(ToolCallFormat format, std::string_view text, size_t piece) {
  ToolCallParser parser(format);
  Parsed p;
  auto take = [&](ToolCallEvents e) {
    p.content += e.content;
    for (auto& [index, call] : e.calls) p.calls.push_back(call);
  };
  for (size_t i = 0; i < text.size(); i += piece) take(parser.Feed(text.substr(i, piece)));
  take(parser.Finish());
  return p;
}

void ExpectParses(ToolCallFormat format, std::string_view text, const std::string& content,
                  const std::vector<ToolCall>& calls) {
  for (size_t piece : {text.size() + 1, size_t{1}, size_t{2}, size_t{3}, size_t{7}}) {
    const Parsed p = piece > text.size() ? Whole(format, text) : Streamed(format, text, piece);
    SCOPED_TRACE(std::string(ToolCallFormatName(format)) + " pieces of " + std::to_string(piece));
    EXPECT_EQ(p.content, content);
    ASSERT_EQ(p.calls.size(), calls.size());
    for (size_t i = 0; i < calls.size(); ++i) {
      EXPECT_EQ(p.calls[i].name, calls[i].name);
      EXPECT_EQ(p.calls[i].arguments, calls[i].arguments);
      EXPECT_EQ(p.calls[i].id, calls[i].id);
    }
  }
}

TEST(ToolCallParser, HermesCallsBetweenContent) {
  ExpectParses(ToolCallFormat::kHermes,
               "Let me check.<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
               "</tool_call><tool_call>{\"name\": \"now\", \"arguments\": {}}</tool_call>",
               "Let me check.",
               {{"call_0", "get_weather", R"({"city":"Paris"})"}, {"call_1", "now", "{}"}});
}

TEST(ToolCallParser, HermesWithoutCallsIsAllContentEvenWithAngleBrackets) {
  ExpectParses(ToolCallFormat::kHermes, "a < b and <tool> is not <tool_call", "a < b and <tool> is not <tool_call",
               {});
}

TEST(ToolCallParser, MalformedCallStaysContent) {
  const std::string text = "<tool_call>{\"name\": \"f\", \"arguments\": {oops}}</tool_call> after";
  ExpectParses(ToolCallFormat::kHermes, text, text, {});
}

TEST(ToolCallParser, Llama3JsonAndPythonTag) {
  ExpectParses(ToolCallFormat::kLlama3, "{\"name\": \"search\", \"parameters\": {\"q\": \"été \\\"x\\\"\"}}", "",
               {{"call_0", "search", R"({"q":"été \"x\""})"}});
  ExpectParses(ToolCallFormat::kLlama3, "<|python_tag|>{\"name\": \"a\", \"parameters\": {}}; {\"name\": \"b\", "
               "\"parameters\": {\"n\": 1}}", "", {{"call_0", "a", "{}"}, {"call_1", "b", R"({"n":1})"}});
  ExpectParses(ToolCallFormat::kLlama3, "The answer is {42}.", "The answer is {42}.", {});
}

TEST(ToolCallParser, MistralArrayAndNameArgsForms) {
  ExpectParses(ToolCallFormat::kMistral,
               "[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {\"x\": [1, 2]}, \"id\": \"abc123def\"}]", "",
               {{"abc123def", "f", R"({"x":[1,2]})"}});
  ExpectParses(ToolCallFormat::kMistral, "[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Oslo\"}", "",
               {{"call_0", "get_weather", R"({"city":"Oslo"})"}});
  ExpectParses(ToolCallFormat::kMistral, "[TOOL] is not it", "[TOOL] is not it", {});
}

TEST(ToolCallParser, DeepSeekRegionWithOrWithoutItsEnd) {
  const std::string call =
      "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Rome\"}\n```<｜tool▁call▁end｜>";
  for (std::string end : {"<｜tool▁calls▁end｜>", ""})
    ExpectParses(ToolCallFormat::kDeepSeek, "Sure.<｜tool▁calls▁begin｜>" + call + call + end, "Sure.",
                 {{"call_0", "get_weather", R"({"city":"Rome"})"}, {"call_1", "get_weather", R"({"city":"Rome"})"}});
}

TEST(ToolCallParser, ForcedJsonTakesOpenAiShapesToo) {
  ExpectParses(ToolCallFormat::kJson,
               "{\"tool_calls\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": "
               "\"{\\\"a\\\": 1}\"}}]}",
               "", {{"call_0", "f", R"({"a": 1})"}});
  ExpectParses(ToolCallFormat::kJson, "  no call here", "  no call here", {});
  // tool_choice "required": an array of {name, parameters} (tool_call_grammar.h), whitespace as the grammar allows.
  ExpectParses(ToolCallFormat::kJson,
               "\n   [ { \"name\" : \"f\" , \"parameters\" : { \"a\" : 1 } } , {\"name\": \"g\", \"parameters\": {}} ] ",
               "", {{"call_0", "f", R"({"a":1})"}, {"call_1", "g", "{}"}});
  ExpectParses(ToolCallFormat::kJson, "[1, 2]", "[1, 2]", {});
}

TEST(ToolCallParser, MaxCallsKeepsTheTextBeforeTheFirstCallAndDropsTheRest) {
  const std::string reply =
      "Sure. <tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call> then <tool_call>{\"name\": \"b\", "
      "\"arguments\": {}}</tool_call> done";
  for (size_t piece : {reply.size(), size_t{3}}) {
    SCOPED_TRACE(piece);
    ToolCallParser parser(ToolCallFormat::kHermes, "call_", 1);
    std::string content;
    std::vector<std::string> names;
    auto take = [&](const ToolCallEvents& e) {
      content += e.content;
      for (const auto& [index, call] : e.calls) names.push_back(call.name);
    };
    for (size_t i = 0; i < reply.size(); i += piece) take(parser.Feed(std::string_view(reply).substr(i, piece)));
    take(parser.Finish());
    EXPECT_EQ(content, "Sure. ");
    EXPECT_EQ(names, std::vector<std::string>{"a"});
    EXPECT_TRUE(parser.full());
  }
  // A list of calls in one region is cut to the first too.
  const ToolCallEvents list = [] {
    ToolCallParser parser(ToolCallFormat::kJson, "call_", 1);
    ToolCallEvents e = parser.Feed(R"([{"name": "a", "parameters": {}}, {"name": "b", "parameters": {}}])");
    ToolCallEvents rest = parser.Finish();
    for (auto& c : rest.calls) e.calls.push_back(c);
    return e;
  }();
  ASSERT_EQ(list.calls.size(), 1u);
  EXPECT_EQ(list.calls[0].second.name, "a");
}

TEST(ToolCallParser, UnterminatedCallIsReleasedAsContentAtTheEnd) {
  ExpectParses(ToolCallFormat::kHermes, "x<tool_call>{\"name\": \"f\"", "x<tool_call>{\"name\": \"f\"", {});
  ExpectParses(ToolCallFormat::kLlama3, "{\"name\": \"f\", \"parameters\": {", "{\"name\": \"f\", \"parameters\": {",
               {});
}

TEST(ToolCallParser, FormatFromTheTemplatesMarkers) {
  EXPECT_EQ(ToolCallFormatForTemplate("{{- '<tool_call>\\n' }}"), ToolCallFormat::kHermes);
  EXPECT_EQ(ToolCallFormatForTemplate("<|start_header_id|>ipython"), ToolCallFormat::kLlama3);
  EXPECT_EQ(ToolCallFormatForTemplate("{{ '[TOOL_CALLS]' }}"), ToolCallFormat::kMistral);
  EXPECT_EQ(ToolCallFormatForTemplate("<｜tool▁calls▁begin｜>"), ToolCallFormat::kDeepSeek);
  EXPECT_EQ(ToolCallFormatForTemplate("{{ messages }}"), ToolCallFormat::kJson);
}

TEST(JsonValueEnd, FindsTheEndOfNestedValuesAndStrings) {
  EXPECT_EQ(JsonValueEnd(R"({"a": "}\"{", "b": [1, {"c": 2}]} tail)", 0), 33u);
  EXPECT_EQ(JsonValueEnd(R"(x [1, 2)", 2), std::nullopt);
  EXPECT_EQ(JsonValueEnd(R"("s\\" rest)", 0), 5u);
}

}  // namespace
}  // namespace ridge::server
