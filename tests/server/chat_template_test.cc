// Chat templates: family detection from real GGUF template texts, and the
// exact prompt text each family renders (compared with what the models'
// Jinja templates produce).
#include "ridge/server/chat_template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "ridge/server/api_error.h"
#include "test_paths.h"

namespace ridge::server {
namespace {

// Abbreviated real templates (the markers are what detection looks at).
const char* kLlama3Template =
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
    "message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}...";
const char* kChatMlTemplate =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + "
    "'\n'}}{% endfor %}";
const char* kLlama2Template =
    "{% if messages[0]['role'] == 'system' %}...{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' "
    "+ message['content'] %}...{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}";
const char* kMistralTemplate =
    "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] "
    "+ ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ message['content'] + eos_token}}{% endif %}";

std::vector<ChatMessage> Conversation() {
  return {{"system", "You are terse."}, {"user", " Hi! "}, {"assistant", "Hello."}, {"user", "Bye"}};
}

TEST(ChatTemplate, DetectsFamiliesByMarkers) {
  EXPECT_EQ(ChatTemplate::Detect(kLlama3Template).family, ChatFamily::kLlama3);
  EXPECT_EQ(ChatTemplate::Detect(kChatMlTemplate).family, ChatFamily::kChatMl);
  ChatTemplate llama2 = ChatTemplate::Detect(kLlama2Template);
  EXPECT_EQ(llama2.family, ChatFamily::kLlama2);
  EXPECT_TRUE(llama2.llama2_system_block);
  ChatTemplate mistral = ChatTemplate::Detect(kMistralTemplate);
  EXPECT_EQ(mistral.family, ChatFamily::kLlama2);
  EXPECT_FALSE(mistral.llama2_system_block);
  EXPECT_EQ(ChatTemplate::Detect("").family, ChatFamily::kPlain);
  EXPECT_EQ(ChatTemplate::Detect("{{ messages }} something else").family, ChatFamily::kPlain);
}

TEST(ChatTemplate, FamilyNamesRoundTrip) {
  for (ChatFamily f : {ChatFamily::kLlama2, ChatFamily::kLlama3, ChatFamily::kChatMl, ChatFamily::kPlain})
    EXPECT_EQ(ParseChatFamily(ChatFamilyName(f)), f);
  EXPECT_FALSE(ParseChatFamily("jinja"));
}

TEST(ChatTemplate, Llama3) {
  ChatTemplate t = ChatTemplate::Detect(kLlama3Template);
  EXPECT_EQ(t.Render(Conversation(), true),
            "<|start_header_id|>system<|end_header_id|>\n\nYou are terse.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nBye<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(t.Render({{"user", "x"}}, false), "<|start_header_id|>user<|end_header_id|>\n\nx<|eot_id|>");
}

TEST(ChatTemplate, ChatMl) {
  ChatTemplate t = ChatTemplate::Detect(kChatMlTemplate);
  EXPECT_EQ(t.Render(Conversation(), true),
            "<|im_start|>system\nYou are terse.<|im_end|>\n"
            "<|im_start|>user\n Hi! <|im_end|>\n"
            "<|im_start|>assistant\nHello.<|im_end|>\n"
            "<|im_start|>user\nBye<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplate, Llama2WithSystemBlock) {
  ChatTemplate t = ChatTemplate::Detect(kLlama2Template);
  // The first BOS comes from the tokenizer; later turns carry BOS/EOS texts.
  EXPECT_EQ(t.Render(Conversation(), true),
            "[INST] <<SYS>>\nYou are terse.\n<</SYS>>\n\n Hi! [/INST] Hello. </s><s>[INST] Bye [/INST]");
  EXPECT_EQ(t.Render({{"user", "Hi"}}, true), "[INST] Hi [/INST]");
  EXPECT_EQ(t.Render({{"system", "S"}}, true), "[INST] <<SYS>>\nS\n<</SYS>> [/INST]");
}

TEST(ChatTemplate, MistralPutsSystemTextBeforeTheFirstTurn) {
  ChatTemplate t = ChatTemplate::Detect(kMistralTemplate);
  EXPECT_EQ(t.Render({{"system", "S"}, {"user", "U"}}, true), "[INST] S\n\nU [/INST]");
}

TEST(ChatTemplate, Llama2RefusesTurnsThatDoNotAlternate) {
  ChatTemplate t = ChatTemplate::Detect(kLlama2Template);
  try {
    t.Render({{"user", "a"}, {"user", "b"}}, true);
    FAIL() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "messages[1].role");
  }
  EXPECT_THROW(t.Render({{"assistant", "a"}}, true), ApiError);
  EXPECT_THROW(t.Render({{"user", "a"}, {"system", "s"}}, true), ApiError);
}

TEST(ChatTemplate, PlainFallback) {
  ChatTemplate t;
  EXPECT_EQ(t.Render(Conversation(), true),
            "System: You are terse.\nUser:  Hi! \nAssistant: Hello.\nUser: Bye\nAssistant:");
  EXPECT_EQ(t.Render({{"user", "x"}}, false), "User: x\n");
}

// A GGUF's Jinja template renders the prompt itself, with the vocabulary's BOS/EOS texts.
const char* kJinjaTemplate =
    "{{ bos_token }}{% for m in messages %}{% if m.role == 'user' %}[U] {{ m.content | trim }}{% else %}"
    "[{{ m.role | upper }}] {{ m.content }}{{ eos_token }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}[A]{% endif %}";

TEST(ChatTemplate, JinjaTemplateRendersThePrompt) {
  ChatTemplate t = ChatTemplate::FromJinja(kJinjaTemplate);
  ASSERT_TRUE(t.jinja);
  EXPECT_EQ(t.Describe(), "jinja");
  t.bos_text = "<s>";
  t.eos_text = "</s>";
  EXPECT_EQ(t.Render(Conversation(), true), "<s>[SYSTEM] You are terse.</s>[U] Hi![ASSISTANT] Hello.</s>[U] Bye[A]");
  EXPECT_EQ(t.Render({{"user", "x"}}, false), "<s>[U] x");
  // The tokenizer adds BOS itself: the template's leading one is dropped, later ones kept.
  t.strip_leading_bos = true;
  EXPECT_EQ(t.Render({{"user", "x"}}, false), "[U] x");
}

TEST(ChatTemplate, JinjaRaiseExceptionIsA400WithTheTemplatesMessage) {
  ChatTemplate t = ChatTemplate::FromJinja(
      "{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}ok");
  ASSERT_TRUE(t.jinja);
  EXPECT_EQ(t.Render({{"user", "x"}}, true), "ok");
  try {
    t.Render(Conversation(), true);
    FAIL() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "messages");
    EXPECT_STREQ(e.what(), "System role not supported");
  }
}

TEST(ChatTemplate, JinjaFailureOnAConversationIsA400NamingTheLine) {
  ChatTemplate t = ChatTemplate::FromJinja("{% for m in messages %}\n{{ m.content + 1 }}{% endfor %}");
  ASSERT_TRUE(t.jinja);
  try {
    t.Render({{"user", "x"}}, true);
    FAIL() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_NE(std::string(e.what()).find("line 2: unsupported operand"), std::string::npos) << e.what();
  }
}

TEST(ChatTemplate, UnparsableTemplateFallsBackToTheFamilyWithTheReason) {
  ChatTemplate t = ChatTemplate::FromJinja("<|im_start|>{% for m in messages %}{{ m.content }}");
  EXPECT_FALSE(t.jinja);
  EXPECT_EQ(t.family, ChatFamily::kChatMl);
  EXPECT_EQ(t.Describe(), "chatml");
  EXPECT_NE(t.jinja_error.find("endfor"), std::string::npos) << t.jinja_error;
  EXPECT_EQ(t.Render({{"user", "x"}}, true), "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n");
}

// Tools: a conversation that calls a tool and gets its result back.
std::vector<ChatMessage> ToolConversation() {
  ChatMessage call_turn("assistant", "");
  call_turn.content_null = true;
  call_turn.tool_calls.push_back({"call_1", "get_weather", nlohmann::ordered_json::parse(R"({"city": "Paris"})")});
  ChatMessage result("tool", "18 C");
  result.tool_call_id = "call_1";
  result.name = "get_weather";
  return {{"user", "Weather?"}, call_turn, result};
}

nlohmann::ordered_json WeatherTools() {
  return nlohmann::ordered_json::parse(R"([{"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])");
}

std::string TemplateFile(const std::string& name) {
  std::ifstream in(ridge::testing::SourceDir() + "/tests/jinja/templates/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(ChatTemplate, ToolFormatsFollowTheTemplatesThatRenderTools) {
  const std::pair<const char*, ToolCallFormat> cases[] = {
      {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFormat::kHermes},
      {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", ToolCallFormat::kHermes},
      {"meta-llama-Llama-3.3-70B-Instruct.jinja", ToolCallFormat::kLlama3},
      {"mistralai-Mistral-Nemo-Instruct-2407.jinja", ToolCallFormat::kMistral},
  };
  for (const auto& [file, format] : cases) {
    SCOPED_TRACE(file);
    ChatTemplate t = ChatTemplate::FromJinja(TemplateFile(file));
    ASSERT_TRUE(t.jinja) << t.jinja_error;
    EXPECT_TRUE(t.renders_tools);
    EXPECT_EQ(t.tool_format, format);
  }
  ChatTemplate gemma = ChatTemplate::FromJinja(TemplateFile("google-gemma-2-2b-it.jinja"));
  ASSERT_TRUE(gemma.jinja);
  EXPECT_FALSE(gemma.renders_tools);
  EXPECT_EQ(gemma.tool_format, ToolCallFormat::kJson);
}

TEST(ChatTemplate, JinjaTemplateRendersToolsCallsAndResultsAsTheModelWasTrained) {
  ChatTemplate t = ChatTemplate::FromJinja(TemplateFile("Qwen-Qwen2.5-7B-Instruct.jinja"));
  ASSERT_TRUE(t.jinja) << t.jinja_error;
  const std::string text = t.Render(ToolConversation(), true, WeatherTools());
  // Qwen 2.5's own spelling (tools as JSON lines in <tools>, calls in
  // <tool_call>, results in <tool_response> inside a user turn).
  EXPECT_NE(text.find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\""),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
                      "{\"city\": \"Paris\"}}\n</tool_call><|im_end|>"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("<|im_start|>user\n<tool_response>\n18 C\n</tool_response><|im_end|>\n"
                      "<|im_start|>assistant\n"),
            std::string::npos)
      << text;
}

TEST(ChatTemplate, TemplatesWithoutToolsGetTheGenericForm) {
  ChatTemplate t = ChatTemplate::Detect(kChatMlTemplate);  // the built-in ChatML family
  const std::string text = t.Render(ToolConversation(), true, WeatherTools());
  EXPECT_EQ(text.rfind("<|im_start|>system\nTools you can call", 0), 0u) << text;
  EXPECT_NE(text.find(R"({"name":"get_weather","parameters":)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(<|im_start|>assistant
{"tool_calls":[{"name":"get_weather","arguments":{"city":"Paris"}}]}<|im_end|>)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("<|im_start|>user\nResult of the tool call call_1 (get_weather): 18 C<|im_end|>"),
            std::string::npos)
      << text;
  EXPECT_EQ(t.tool_format, ToolCallFormat::kJson);

  // Llama 2 needs alternating turns: a tool result and the next question become one user turn.
  ChatTemplate llama2 = ChatTemplate::Detect(kLlama2Template);
  std::vector<ChatMessage> conversation = ToolConversation();
  conversation.push_back({"assistant", "Mild."});
  conversation.push_back({"tool", "late"});
  conversation.back().tool_call_id = "call_1";
  conversation.push_back({"user", "Thanks"});
  const std::string llama2_text = llama2.Render(conversation, true, WeatherTools());
  EXPECT_NE(llama2_text.find("Result of the tool call call_1 (): late\n\nThanks [/INST]"), std::string::npos)
      << llama2_text;
}

}  // namespace
}  // namespace ridge::server
