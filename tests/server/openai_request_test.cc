// Request parsing: the typed values of good requests, and a table of
// hostile bodies that must each be refused with a 400 naming the field.
#include "ridge/server/openai_request.h"

#include <gtest/gtest.h>

#include <random>

#include "ridge/server/api_error.h"
#include "ridge/server/json_fields.h"

namespace ridge::server {
namespace {

CompletionRequest Completion(const std::string& body) { return ParseCompletionRequest(ParseJsonObject(body)); }
ChatRequest Chat(const std::string& body) { return ParseChatRequest(ParseJsonObject(body), body); }

TEST(OpenAiRequest, CompletionReadsEveryField) {
  CompletionRequest r = Completion(R"({
    "model": "m", "prompt": "Once", "max_tokens": 7, "temperature": 0.5, "top_p": 0.9, "top_k": 40,
    "min_p": 0.1, "presence_penalty": 0.5, "frequency_penalty": -0.5, "repetition_penalty": 1.1,
    "seed": 42, "stop": ["a", "bc"], "stream": true, "stream_options": {"include_usage": true},
    "logprobs": 3, "echo": false, "n": 1, "best_of": 1, "user": "ignored", "ignore_eos": true})");
  EXPECT_EQ(r.model, "m");
  ASSERT_TRUE(r.prompt_text);
  EXPECT_EQ(*r.prompt_text, "Once");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_FLOAT_EQ(r.sampling.temperature, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.top_p, 0.9f);
  EXPECT_EQ(r.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(r.sampling.min_p, 0.1f);
  EXPECT_FLOAT_EQ(r.sampling.presence_penalty, 0.5f);
  EXPECT_FLOAT_EQ(r.sampling.frequency_penalty, -0.5f);
  EXPECT_FLOAT_EQ(r.sampling.repetition_penalty, 1.1f);
  EXPECT_TRUE(r.seed_given);
  EXPECT_EQ(r.sampling.seed, 42u);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "bc"}));
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_EQ(r.logprobs, 3);
  EXPECT_TRUE(r.sampling.logprobs);
  EXPECT_EQ(r.sampling.top_logprobs, 3);
  EXPECT_TRUE(r.ignore_eos);
}

TEST(OpenAiRequest, CompletionDefaultsAndNulls) {
  CompletionRequest r = Completion(R"({"prompt": "x", "max_tokens": null, "temperature": null, "stop": null})");
  EXPECT_FALSE(r.max_tokens);
  EXPECT_EQ(r.sampling.temperature, 0.0f);
  EXPECT_TRUE(r.stop.empty());
  EXPECT_FALSE(r.stream);
  EXPECT_FALSE(r.seed_given);
  EXPECT_FALSE(r.logprobs);
  EXPECT_FALSE(r.sampling.wants_logprobs());
}

TEST(OpenAiRequest, PromptForms) {
  EXPECT_EQ(*Completion(R"({"prompt": ""})").prompt_text, "");
  EXPECT_EQ(*Completion(R"({"prompt": ["hi"]})").prompt_text, "hi");
  EXPECT_EQ(Completion(R"({"prompt": [1, 2, 3]})").prompt_tokens, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(Completion(R"({"prompt": [[5, 6]]})").prompt_tokens, (std::vector<int64_t>{5, 6}));
  EXPECT_EQ(*Completion(R"({"prompt": "x", "stop": "END"})").stop.data(), "END");
  // An integral float is an integer, as in OpenAI's and vLLM's validators.
  EXPECT_EQ(Completion(R"({"prompt": "x", "max_tokens": 16.0})").max_tokens, 16);
  // vLLM's "top_k": -1 means off.
  EXPECT_EQ(Completion(R"({"prompt": "x", "top_k": -1})").sampling.top_k, 0);
  // Seeds are signed 64-bit integers, taken mod 2^64.
  EXPECT_EQ(Completion(R"({"prompt": "x", "seed": -1})").sampling.seed, ~uint64_t{0});
  EXPECT_EQ(Completion(R"({"prompt": "x", "seed": 9223372036854775807})").sampling.seed, (uint64_t{1} << 63) - 1);
}

TEST(OpenAiRequest, ChatReadsMessagesAndLogprobs) {
  ChatRequest r = Chat(R"({"model": "m", "messages": [
      {"role": "developer", "content": "Be brief."},
      {"role": "user", "content": [{"type": "text", "text": "Hello"}, {"type": "text", "text": "there"}]},
      {"role": "assistant", "content": null},
      {"role": "user", "content": "Again", "name": "bob"}],
    "max_tokens": 5, "max_completion_tokens": 9, "logprobs": true, "top_logprobs": 2})");
  ASSERT_EQ(r.messages.size(), 4u);
  EXPECT_EQ(r.messages[0].role, "system");
  EXPECT_EQ(r.messages[1].content, "Hello\nthere");
  EXPECT_EQ(r.messages[2].role, "assistant");
  EXPECT_EQ(r.messages[2].content, "");
  EXPECT_EQ(r.messages[3].content, "Again");
  EXPECT_EQ(r.max_tokens, 9);  // max_completion_tokens wins
  EXPECT_TRUE(r.sampling.logprobs);
  EXPECT_EQ(r.sampling.top_logprobs, 2);
  EXPECT_TRUE(r.add_generation_prompt);
}

TEST(OpenAiRequest, ChatReadsToolsToolChoiceAndToolTurns) {
  ChatRequest r = Chat(R"({
    "messages": [
      {"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"z\": 1, \"a\": \"Paris\"}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "18 C"}],
    "tools": [{"type": "function", "function": {"name": "get_weather", "description": "d",
               "parameters": {"type": "object", "properties": {"a": {"type": "string"}}}}},
              {"type": "function", "function": {"name": "noop"}}],
    "tool_choice": {"type": "function", "function": {"name": "noop"}},
    "parallel_tool_calls": false})");
  ASSERT_EQ(r.tools.size(), 2u);
  EXPECT_EQ(r.tools[0]["function"]["description"], "d");
  // As the client wrote them (a template prints them; nlohmann::json would sort the keys).
  EXPECT_EQ(r.tools[1].dump(), R"({"type":"function","function":{"name":"noop"}})");
  EXPECT_EQ(r.tool_choice, ToolChoice::kNamed);
  EXPECT_EQ(r.tool_choice_name, "noop");
  EXPECT_FALSE(r.parallel_tool_calls);
  ASSERT_EQ(r.messages.size(), 3u);
  const ChatMessage& call_turn = r.messages[1];
  EXPECT_TRUE(call_turn.content_null);
  ASSERT_EQ(call_turn.tool_calls.size(), 1u);
  EXPECT_EQ(call_turn.tool_calls[0].id, "call_1");
  EXPECT_EQ(call_turn.tool_calls[0].name, "get_weather");
  EXPECT_EQ(call_turn.tool_calls[0].arguments.dump(), R"({"z":1,"a":"Paris"})");  // the client's key order
  const ChatMessage& result = r.messages[2];
  EXPECT_EQ(result.role, "tool");
  EXPECT_EQ(result.tool_call_id, "call_1");
  EXPECT_EQ(result.name, "get_weather");  // from the call it answers
  EXPECT_EQ(result.content, "18 C");

  EXPECT_EQ(Chat(R"({"messages": [{"role": "user", "content": "x"}]})").tool_choice, ToolChoice::kNone);
  const std::string tools = R"("tools": [{"type": "function", "function": {"name": "f"}}])";
  EXPECT_EQ(Chat(R"({"messages": [{"role": "user", "content": "x"}], )" + tools + "}").tool_choice,
            ToolChoice::kAuto);
  EXPECT_EQ(Chat(R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required", )" + tools + "}")
                .tool_choice,
            ToolChoice::kRequired);
  EXPECT_EQ(Chat(R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "none", )" + tools + "}")
                .tool_choice,
            ToolChoice::kNone);
}

TEST(OpenAiRequest, TokenizeAndDetokenize) {
  TokenizeRequest t = ParseTokenizeRequest(ParseJsonObject(R"({"prompt": "hi", "add_special_tokens": false})"));
  EXPECT_EQ(*t.prompt, "hi");
  EXPECT_FALSE(t.add_special_tokens);
  EXPECT_TRUE(t.parse_special);  // special-token texts are parsed unless the request says not to
  EXPECT_FALSE(ParseTokenizeRequest(ParseJsonObject(R"({"prompt": "hi", "parse_special": false})")).parse_special);
  EXPECT_TRUE(ParseCompletionRequest(ParseJsonObject(R"({"prompt": "hi"})")).parse_special);
  EXPECT_FALSE(ParseCompletionRequest(ParseJsonObject(R"({"prompt": "hi", "parse_special": false})")).parse_special);
  TokenizeRequest m = ParseTokenizeRequest(ParseJsonObject(R"({"messages": [{"role": "user", "content": "x"}]})"));
  EXPECT_EQ(m.messages.size(), 1u);
  DetokenizeRequest d = ParseDetokenizeRequest(ParseJsonObject(R"({"tokens": [1, 2]})"));
  EXPECT_EQ(d.tokens, (std::vector<int64_t>{1, 2}));
}

TEST(OpenAiRequest, NestingDepthIgnoresBracketsInStrings) {
  EXPECT_EQ(JsonNestingDepth(R"({"a": [1, {"b": "[[[[{{"}]})", 100), 3);
  EXPECT_EQ(JsonNestingDepth(R"({"a": "\"[["})", 100), 1);
  EXPECT_EQ(JsonNestingDepth(std::string(1000, '['), 64), 65);  // stops early
}

enum class Endpoint { kCompletion, kChat, kTokenize, kDetokenize };

struct HostileCase {
  Endpoint endpoint;
  std::string body;
  std::string param;  // the field the error must name ("" = none in particular)
};

void ParseFor(Endpoint e, const std::string& body) {
  nlohmann::json j = ParseJsonObject(body);
  switch (e) {
    case Endpoint::kCompletion: ParseCompletionRequest(j); break;
    case Endpoint::kChat: ParseChatRequest(j); break;
    case Endpoint::kTokenize: ParseTokenizeRequest(j); break;
    case Endpoint::kDetokenize: ParseDetokenizeRequest(j); break;
  }
}

std::vector<HostileCase> HostileCases() {
  const auto C = Endpoint::kCompletion;
  const auto H = Endpoint::kChat;
  const std::string user = R"("messages": [{"role": "user", "content": "hi"}])";
  std::vector<HostileCase> cases = {
      // Not JSON, or not an object.
      {C, "", ""}, {C, "{", ""}, {C, "null", ""}, {C, "[]", ""}, {C, "42", ""}, {C, "\"prompt\"", ""},
      {C, R"({"prompt": "x",})", ""}, {C, R"({"prompt": 'x'})", ""}, {C, R"({"prompt": NaN})", ""},
      {C, "{\"prompt\": \"\xff\xfe\"}", ""},            // invalid UTF-8
      {C, "{\"prompt\": \"\xc0\xaf\"}", ""},            // overlong encoding
      {C, "{\"prompt\": \"\xed\xa0\x80\"}", ""},        // UTF-8-encoded surrogate
      {C, R"({"prompt": "\ud800"})", ""},               // lone surrogate escape
      {C, "{\"prompt\": \"a\x01b\"}", ""},              // raw control character
      {C, std::string(100000, '[') + std::string(100000, ']'), ""},  // nesting bomb
      {C, "{\"prompt\": \"x\"} trailing", ""},
      // Missing or mistyped prompt.
      {C, R"({})", "prompt"}, {C, R"({"prompt": null})", "prompt"}, {C, R"({"prompt": 5})", "prompt"},
      {C, R"({"prompt": []})", "prompt"}, {C, R"({"prompt": ["a", "b"]})", "prompt"},
      {C, R"({"prompt": [1, "a"]})", "prompt[1]"}, {C, R"({"prompt": [-1]})", "prompt[0]"},
      {C, R"({"prompt": [1.5]})", "prompt[0]"}, {C, R"({"prompt": [[]]})", "prompt[0]"},
      {C, R"({"prompt": [{"a": 1}]})", "prompt[0]"}, {C, R"({"prompt": [99999999999]})", "prompt[0]"},
      // Numbers of the wrong type or out of range.
      {C, R"({"prompt": "x", "max_tokens": -1})", "max_tokens"},
      {C, R"({"prompt": "x", "max_tokens": 0})", "max_tokens"},
      {C, R"({"prompt": "x", "max_tokens": 1.5})", "max_tokens"},
      {C, R"({"prompt": "x", "max_tokens": "16"})", "max_tokens"},
      {C, R"({"prompt": "x", "max_tokens": true})", "max_tokens"},
      {C, R"({"prompt": "x", "max_tokens": 1e30})", "max_tokens"},
      {C, R"({"prompt": "x", "max_tokens": 99999999999999999999999999})", "max_tokens"},
      {C, R"({"prompt": "x", "max_tokens": 9223372036854775808})", "max_tokens"},
      {C, R"({"prompt": "x", "max_tokens": -9223372036854775809})", "max_tokens"},
      {C, R"({"prompt": "x", "temperature": -0.1})", "temperature"},
      {C, R"({"prompt": "x", "temperature": 1e308})", "temperature"},
      {C, R"({"prompt": "x", "temperature": "hot"})", "temperature"},
      {C, R"({"prompt": "x", "top_p": 0})", "top_p"}, {C, R"({"prompt": "x", "top_p": 1.5})", "top_p"},
      {C, R"({"prompt": "x", "top_k": -2})", "top_k"}, {C, R"({"prompt": "x", "top_k": 1e12})", "top_k"},
      {C, R"({"prompt": "x", "min_p": 2})", "min_p"},
      {C, R"({"prompt": "x", "presence_penalty": 2.5})", "presence_penalty"},
      {C, R"({"prompt": "x", "frequency_penalty": -3})", "frequency_penalty"},
      {C, R"({"prompt": "x", "repetition_penalty": 0})", "repetition_penalty"},
      {C, R"({"prompt": "x", "seed": 1.5})", "seed"}, {C, R"({"prompt": "x", "seed": "7"})", "seed"},
      {C, R"({"prompt": "x", "seed": 1e300})", "seed"},
      // 2^63 and 2^64-1: past the signed 64-bit range the error message states.
      {C, R"({"prompt": "x", "seed": 9223372036854775808})", "seed"},
      {C, R"({"prompt": "x", "seed": 18446744073709551615})", "seed"},
      {C, R"({"prompt": "x", "logprobs": 21})", "logprobs"}, {C, R"({"prompt": "x", "logprobs": true})", "logprobs"},
      {C, R"({"prompt": "x", "logprobs": -1})", "logprobs"},
      // Booleans and objects of the wrong type.
      {C, R"({"prompt": "x", "stream": "yes"})", "stream"}, {C, R"({"prompt": "x", "echo": 1})", "echo"},
      {C, R"({"prompt": "x", "stream": true, "stream_options": 3})", "stream_options"},
      {C, R"({"prompt": "x", "stream": true, "stream_options": {"include_usage": "y"}})",
       "stream_options.include_usage"},
      {C, R"({"prompt": "x", "stream_options": {"include_usage": true}})", "stream_options"},
      {C, R"({"prompt": "x", "model": 5})", "model"}, {C, R"({"prompt": "x", "model": ["m"]})", "model"},
      // Stop strings.
      {C, R"({"prompt": "x", "stop": 5})", "stop"}, {C, R"({"prompt": "x", "stop": [1]})", "stop[0]"},
      {C, R"({"prompt": "x", "stop": [""]})", "stop[0]"}, {C, R"({"prompt": "x", "stop": ""})", "stop"},
      {C, R"({"prompt": "x", "stop": {"a": 1}})", "stop"},
      {C, R"({"prompt": "x", "stop": [")" + std::string(300, 'a') + R"("]})", "stop[0]"},
      // What ridge does not do.
      {C, R"({"prompt": "x", "n": 2})", "n"}, {C, R"({"prompt": "x", "n": 0})", "n"},
      {C, R"({"prompt": "x", "n": "1"})", "n"}, {C, R"({"prompt": "x", "best_of": 3})", "best_of"},
      {C, R"({"prompt": "x", "logit_bias": {"1": 5}})", "logit_bias"},
      {C, R"({"prompt": "x", "logit_bias": 5})", "logit_bias"}, {C, R"({"prompt": "x", "suffix": "z"})", "suffix"},
      {C, R"({"prompt": "x", "echo": true, "logprobs": 1})", "logprobs"},
      {C, R"({"prompt": "x", "response_format": {"type": "xml"}})", "response_format.type"},
      // Chat messages.
      {H, R"({})", "messages"}, {H, R"({"messages": {}})", "messages"}, {H, R"({"messages": []})", "messages"},
      {H, R"({"messages": "hi"})", "messages"}, {H, R"({"messages": [1]})", "messages[0]"},
      {H, R"({"messages": [{"content": "x"}]})", "messages[0].role"},
      {H, R"({"messages": [{"role": 1, "content": "x"}]})", "messages[0].role"},
      {H, R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages[0].role"},
      {H, R"({"messages": [{"role": "function", "content": "x"}]})", "messages[0].role"},
      {H, R"({"messages": [{"role": "tool", "content": "x"}]})", "messages[0].tool_call_id"},
      {H, R"({"messages": [{"role": "tool", "tool_call_id": "c"}]})", "messages[0].content"},
      {H, R"({"messages": [{"role": "user"}]})", "messages[0].content"},
      {H, R"({"messages": [{"role": "user", "content": 5}]})", "messages[0].content"},
      {H, R"({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}]})",
       "messages[0].content[0].type"},
      {H, R"({"messages": [{"role": "user", "content": [{"type": "text"}]}]})", "messages[0].content[0].text"},
      {H, R"({"messages": [{"role": "user", "content": [5]}]})", "messages[0].content[0]"},
      {H, R"({"messages": [{"role": "assistant", "content": "x", "tool_calls": [{"id": "1"}]}]})",
       "messages[0].tool_calls[0].function"},
      {H, R"({"messages": [{"role": "assistant", "tool_calls": {}}]})", "messages[0].tool_calls"},
      {H, R"({"messages": [{"role": "user", "content": "x", "tool_calls": []}]})", "messages[0].tool_calls"},
      {H, R"({"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}]})",
       "messages[0].tool_calls[0].id"},
      {H, R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f"}}]}]})",
       "messages[0].tool_calls[0].function.arguments"},
      {H, R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f",
          "arguments": "{\"a\": "}}]}]})", "messages[0].tool_calls[0].function.arguments"},
      {H, R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"name": "f",
          "arguments": "[1]"}}]}]})", "messages[0].tool_calls[0].function.arguments"},
      {H, R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "c", "type": "code", "function": {
          "name": "f", "arguments": "{}"}}]}]})", "messages[0].tool_calls[0].type"},
      {H, "{" + user + R"(, "top_logprobs": 2})", "top_logprobs"},
      {H, "{" + user + R"(, "logprobs": 1})", "logprobs"},
      {H, "{" + user + R"(, "logprobs": true, "top_logprobs": 50})", "top_logprobs"},
      {H, "{" + user + R"(, "max_completion_tokens": -5})", "max_completion_tokens"},
      {H, "{" + user + R"(, "tools": [{"type": "function"}]})", "tools[0].function"},
      {H, "{" + user + R"(, "tools": {"type": "function"}})", "tools"},
      {H, "{" + user + R"(, "tools": [{"type": "retrieval", "function": {"name": "f"}}]})", "tools[0].type"},
      {H, "{" + user + R"(, "tools": [{"type": "function", "function": {"name": "a b"}}]})", "tools[0].function.name"},
      {H, "{" + user + R"(, "tools": [{"type": "function", "function": {"name": "f", "parameters": 5}}]})",
       "tools[0].function.parameters"},
      {H, "{" + user + R"(, "tools": [{"type": "function", "function": {"name": "f"}},
          {"type": "function", "function": {"name": "f"}}]})", "tools[1].function.name"},
      {H, "{" + user + R"(, "functions": [{"name": "f"}]})", "functions"},
      {H, "{" + user + R"(, "tool_choice": "required"})", "tool_choice"},
      {H, "{" + user + R"(, "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": "always"})",
       "tool_choice"},
      {H, "{" + user + R"(, "tools": [{"type": "function", "function": {"name": "f"}}],
          "tool_choice": {"type": "function", "function": {"name": "g"}}})", "tool_choice.function.name"},
      {H, "{" + user + R"(, "tools": [{"type": "function", "function": {"name": "f"}}], "tool_choice": {}})",
       "tool_choice.function.name"},
      {H, "{" + user + R"(, "parallel_tool_calls": "yes"})", "parallel_tool_calls"},
      {H, "{" + user + R"(, "n": 3})", "n"},
      {H, "{\"messages\": [{\"role\": \"user\", \"content\": \"\xf8\x88\x80\x80\x80\"}]}", ""},
      // Tokenizer endpoints.
      {Endpoint::kTokenize, R"({})", "prompt"}, {Endpoint::kTokenize, R"({"prompt": 1})", "prompt"},
      {Endpoint::kTokenize, R"({"prompt": "a", "messages": []})", "prompt"},
      {Endpoint::kDetokenize, R"({})", "tokens"}, {Endpoint::kDetokenize, R"({"tokens": "1 2"})", "tokens"},
      {Endpoint::kDetokenize, R"({"tokens": [1, -2]})", "tokens[1]"},
      {Endpoint::kDetokenize, R"({"tokens": [3000000000]})", "tokens[0]"},
  };
  return cases;
}

TEST(OpenAiRequest, HostileBodiesAreRefusedNamingTheField) {
  for (const HostileCase& c : HostileCases()) {
    SCOPED_TRACE(c.body.substr(0, 120));
    try {
      ParseFor(c.endpoint, c.body);
      ADD_FAILURE() << "accepted";
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_EQ(e.type(), "invalid_request_error");
      if (!c.param.empty()) {
        EXPECT_EQ(e.param(), c.param) << e.what();
      }
      EXPECT_FALSE(std::string(e.what()).empty());
      // The error object must serialize even when the message quotes bad bytes.
      EXPECT_NO_THROW(DumpJson(ErrorJson(e)));
    }
  }
}

// Random mutations of valid bodies: each parses or is refused with an
// ApiError 400 — never another exception, never a crash.
TEST(OpenAiRequest, MutatedBodiesNeverEscapeAsOtherErrors) {
  const std::vector<std::string> seeds = {
      R"({"model":"m","prompt":"Once upon","max_tokens":8,"temperature":0.7,"stop":["\n"],"stream":true,)"
      R"("stream_options":{"include_usage":true},"logprobs":2})",
      R"({"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hi"}]}],)"
      R"("top_p":0.5,"seed":3,"logprobs":true,"top_logprobs":1})",
  };
  const std::string alphabet = "{}[]\":,0123456789.-+eE \\ntrufalsn\xff\xc3\xa9";
  std::mt19937 rng(1234);
  int accepted = 0, refused = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::string body = seeds[iter % seeds.size()];
    const int n_edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < n_edits && !body.empty(); ++k) {
      size_t at = rng() % body.size();
      switch (rng() % 3) {
        case 0: body[at] = alphabet[rng() % alphabet.size()]; break;
        case 1: body.erase(at, 1 + rng() % 3); break;
        default: body.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      }
    }
    const Endpoint e = iter % 2 == 0 ? Endpoint::kCompletion : Endpoint::kChat;
    try {
      ParseFor(e, body);
      ++accepted;
    } catch (const ApiError& err) {
      EXPECT_EQ(err.status(), 400);
      ++refused;
    } catch (const std::exception& other) {
      ADD_FAILURE() << "escaped as " << other.what() << " for " << body;
    }
  }
  EXPECT_GT(accepted, 0);
  EXPECT_GT(refused, 0);
}

}  // namespace
}  // namespace ridge::server
