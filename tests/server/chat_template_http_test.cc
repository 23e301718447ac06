// The server renders chat prompts with the GGUF's own Jinja chat template:
// /v1/tokenize of messages gives the tokens of the text the template
// renders, and a template that refuses a conversation is a 400 carrying its
// message (the server keeps serving).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ridge/gguf/gguf_file.h"
#include "server_test_util.h"

namespace ridge::server::testing {
namespace {

using nlohmann::json;

// Not any family's markers: only a Jinja interpreter renders it like this.
const char* kTemplate =
    "{{ bos_token }}{% for m in messages %}{% if m.role == 'system' and not loop.first %}"
    "{{ raise_exception('The system message must come first') }}{% endif %}"
    "{{ m.role | upper }}: {{ m.content | trim }}\n{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}";

const std::string& TemplateModelPath() {
  static const std::string path = [] {
    RandomModelOptions options;
    options.shape.n_embd = 64;
    options.shape.n_ff = 128;
    options.shape.n_layers = 1;
    options.shape.n_heads = 4;
    options.shape.n_kv_heads = 4;
    options.shape.n_ctx = 512;
    options.seed = 3;
    options.name = "jinja-template-test";
    GgufFile vocab = GgufFile::Open(ridge::testing::Stories260kGguf());
    GgufWriter writer = BuildRandomModelGguf(vocab, options, nullptr);
    writer.SetString("tokenizer.chat_template", kTemplate);
    const std::string path = ridge::testing::ScratchDir("server-jinja") + "/template.gguf";
    writer.Write(path);
    return path;
  }();
  return path;
}

class ChatTemplateHttp : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = Model::Load(TemplateModelPath()).release();
    tokenizer_ = new Tokenizer(Tokenizer::FromGguf(model_->file()));
  }
  static Model* model_;
  static Tokenizer* tokenizer_;
};
Model* ChatTemplateHttp::model_ = nullptr;
Tokenizer* ChatTemplateHttp::tokenizer_ = nullptr;

TEST_F(ChatTemplateHttp, PromptIsWhatTheGgufTemplateRenders) {
  TestServer server(*model_, *tokenizer_, TestEngineOptions());
  EXPECT_EQ(server.server().chat_template().Describe(), "jinja");
  const json messages = json::array({{{"role", "system"}, {"content", "Be brief."}},
                                     {{"role", "user"}, {"content", "  Hi there  "}}});
  auto res = Post(server.port(), "/tokenize", json{{"messages", messages}}.dump());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  // The template's leading bos_token is the BOS the tokenizer adds itself.
  const std::string text = "SYSTEM: Be brief.\nUSER: Hi there\nASSISTANT:";
  std::vector<int64_t> expected;
  for (int32_t id : tokenizer_->Encode(text, tokenizer_->add_bos(), true, false)) expected.push_back(id);
  EXPECT_EQ(json::parse(res->body)["tokens"].get<std::vector<int64_t>>(), expected);
}

TEST_F(ChatTemplateHttp, TemplateRaiseIsA400WithItsMessage) {
  TestServer server(*model_, *tokenizer_, TestEngineOptions());
  const json messages = json::array({{{"role", "user"}, {"content", "Hi"}},
                                     {{"role", "system"}, {"content", "late"}}});
  auto res = Post(server.port(), "/v1/chat/completions", json{{"messages", messages}, {"max_tokens", 2}}.dump());
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  const json error = json::parse(res->body)["error"];
  EXPECT_EQ(error["message"], "The system message must come first");
  EXPECT_EQ(error["param"], "messages");
  // The server is still serving.
  auto ok = Post(server.port(), "/v1/chat/completions",
                 json{{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})}, {"max_tokens", 2}}.dump());
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

TEST_F(ChatTemplateHttp, NamedFamilyReplacesTheGgufTemplate) {
  ServerOptions options = TestServerOptions();
  options.chat_family = ChatFamily::kChatMl;
  TestServer server(*model_, *tokenizer_, TestEngineOptions(), options);
  EXPECT_EQ(server.server().chat_template().Describe(), "chatml");
}

TEST_F(ChatTemplateHttp, JinjaFileReplacesTheGgufTemplate) {
  ServerOptions options = TestServerOptions();
  options.chat_template_jinja = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}";
  TestServer server(*model_, *tokenizer_, TestEngineOptions(), options);
  auto res = Post(server.port(), "/tokenize",
                  json{{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})}}.dump());
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  std::vector<int64_t> expected;
  for (int32_t id : tokenizer_->Encode("<user>Hi", tokenizer_->add_bos(), true, false)) expected.push_back(id);
  EXPECT_EQ(json::parse(res->body)["tokens"].get<std::vector<int64_t>>(), expected);
}

TEST_F(ChatTemplateHttp, JinjaFileThatDoesNotParseStopsTheServerFromStarting) {
  ServerOptions options = TestServerOptions();
  options.chat_template_jinja = "{% for m in messages %}";
  EXPECT_THROW(TestServer(*model_, *tokenizer_, TestEngineOptions(), options), Error);
}

}  // namespace
}  // namespace ridge::server::testing
