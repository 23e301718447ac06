#include "ridge/bench/openai_stream.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ridge/base/error.h"

namespace ridge::bench {
namespace {

using nlohmann::json;

TEST(OpenAiStreamTest, EndpointKinds) {
  EXPECT_EQ(ApiKindForEndpoint("/v1/completions"), ApiKind::kCompletions);
  EXPECT_EQ(ApiKindForEndpoint("/v1/chat/completions"), ApiKind::kChatCompletions);
  EXPECT_EQ(ApiKindForEndpoint("/openai/v1/chat/completions"), ApiKind::kChatCompletions);
  EXPECT_THROW(ApiKindForEndpoint("/v1/embeddings"), Error);
  EXPECT_THROW(ApiKindForEndpoint(""), Error);
}

TEST(OpenAiStreamTest, CompletionsBody) {
  const json body = json::parse(BuildRequestBody(ApiKind::kCompletions, {"m", "hello there", 42, true}));
  EXPECT_EQ(body["model"], "m");
  EXPECT_EQ(body["prompt"], "hello there");
  EXPECT_EQ(body["max_tokens"], 42);
  EXPECT_EQ(body["stream"], true);
  EXPECT_EQ(body["stream_options"]["include_usage"], true);
  EXPECT_EQ(body["ignore_eos"], true);
  EXPECT_EQ(body["temperature"], 0.0);
  EXPECT_FALSE(body.contains("messages"));
}

TEST(OpenAiStreamTest, ChatBodyWithoutModelOrIgnoreEos) {
  const json body = json::parse(BuildRequestBody(ApiKind::kChatCompletions, {"", "hi \"you\"", 3, false}));
  EXPECT_FALSE(body.contains("model"));
  EXPECT_FALSE(body.contains("ignore_eos"));
  EXPECT_FALSE(body.contains("prompt"));
  ASSERT_EQ(body["messages"].size(), 1u);
  EXPECT_EQ(body["messages"][0]["role"], "user");
  EXPECT_EQ(body["messages"][0]["content"], "hi \"you\"");
}

TEST(OpenAiStreamTest, CompletionChunks) {
  StreamChunk c = ParseStreamChunk(ApiKind::kCompletions,
                                   R"({"id":"1","choices":[{"index":0,"text":" upon","finish_reason":null}]})");
  EXPECT_FALSE(c.done);
  EXPECT_TRUE(c.has_choice);
  EXPECT_EQ(c.text, " upon");
  EXPECT_FALSE(c.finish_reason);
  c = ParseStreamChunk(ApiKind::kCompletions, R"({"choices":[{"text":"","finish_reason":"length"}]})");
  EXPECT_EQ(c.text, "");
  EXPECT_EQ(c.finish_reason, "length");
  c = ParseStreamChunk(ApiKind::kCompletions,
                       R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}})");
  EXPECT_FALSE(c.has_choice);
  EXPECT_EQ(c.prompt_tokens, 12);
  EXPECT_EQ(c.completion_tokens, 7);
  EXPECT_TRUE(ParseStreamChunk(ApiKind::kCompletions, "[DONE]").done);
  EXPECT_TRUE(ParseStreamChunk(ApiKind::kCompletions, "[DONE] \r\n").done);
}

TEST(OpenAiStreamTest, ChatChunks) {
  StreamChunk c = ParseStreamChunk(ApiKind::kChatCompletions, R"({"choices":[{"delta":{"role":"assistant"}}]})");
  EXPECT_TRUE(c.has_choice);
  EXPECT_EQ(c.text, "");  // role only: not a token
  c = ParseStreamChunk(ApiKind::kChatCompletions, R"({"choices":[{"delta":{"content":"Hi"},"finish_reason":null}]})");
  EXPECT_EQ(c.text, "Hi");
  c = ParseStreamChunk(ApiKind::kChatCompletions, R"({"choices":[{"delta":{"content":null},"finish_reason":"stop"}]})");
  EXPECT_EQ(c.text, "");
  EXPECT_EQ(c.finish_reason, "stop");
  c = ParseStreamChunk(ApiKind::kChatCompletions, R"({"choices":[{"delta":{},"text":"ignored"}]})");
  EXPECT_EQ(c.text, "");
}

TEST(OpenAiStreamTest, ErrorsInTheStream) {
  StreamChunk c = ParseStreamChunk(ApiKind::kCompletions, R"({"error":{"message":"out of KV blocks","code":503}})");
  EXPECT_EQ(c.error, "out of KV blocks");
  c = ParseStreamChunk(ApiKind::kCompletions, R"({"error":"plain"})");
  EXPECT_EQ(c.error, "plain");
}

TEST(OpenAiStreamTest, MalformedChunksThrow) {
  for (const char* bad : {"not json", "[1,2]", "\"text\"", R"({"choices":{}})", R"({"choices":[3]})",
                          R"({"choices":[{"text":5}]})", R"({"choices":[{"finish_reason":1}]})",
                          R"({"usage":{"completion_tokens":"7"}})", R"({"usage":[]})", "{\"choices\":[{\"te"})
    EXPECT_THROW(ParseStreamChunk(ApiKind::kCompletions, bad), Error) << bad;
}

TEST(OpenAiStreamTest, ErrorMessageFromBody) {
  EXPECT_EQ(ErrorMessageFromBody(R"({"error":{"message":"model 'x' not found","type":"invalid_request_error"}})"),
            "model 'x' not found");
  EXPECT_EQ(ErrorMessageFromBody("Bad Gateway"), "Bad Gateway");
  EXPECT_LT(ErrorMessageFromBody(std::string(5000, 'x')).size(), 400u);
}

}  // namespace
}  // namespace ridge::bench
