#include "ridge/server/chat_template.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "ridge/server/api_error.h"

namespace ridge::server {
namespace {

std::string_view Trim(std::string_view s) {
  const char* ws = " \t\n\r\f\v";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::string RenderLlama3(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  std::string out;
  for (const ChatMessage& m : messages)
    out += fmt::format("<|start_header_id|>{}<|end_header_id|>\n\n{}<|eot_id|>", m.role, Trim(m.content));
  if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
  return out;
}

std::string RenderChatMl(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  std::string out;
  for (const ChatMessage& m : messages) out += fmt::format("<|im_start|>{}\n{}<|im_end|>\n", m.role, m.content);
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
  return out;
}

std::string RenderPlain(const std::vector<ChatMessage>& messages, bool add_generation_prompt) {
  std::string out;
  for (const ChatMessage& m : messages) {
    const char* label = m.role == "system" ? "System" : m.role == "user" ? "User" : "Assistant";
    out += fmt::format("{}: {}\n", label, m.content);
  }
  if (add_generation_prompt) out += "Assistant:";
  return out;
}

}  // namespace

const char* ChatFamilyName(ChatFamily family) {
  switch (family) {
    case ChatFamily::kLlama2: return "llama2";
    case ChatFamily::kLlama3: return "llama3";
    case ChatFamily::kChatMl: return "chatml";
    case ChatFamily::kPlain: return "plain";
  }
  return "?";
}

std::optional<ChatFamily> ParseChatFamily(std::string_view name) {
  for (ChatFamily f : {ChatFamily::kLlama2, ChatFamily::kLlama3, ChatFamily::kChatMl, ChatFamily::kPlain})
    if (name == ChatFamilyName(f)) return f;
  return std::nullopt;
}

ChatTemplate ChatTemplate::Detect(std::string_view text) {
  ChatTemplate t;
  if (text.find("<|start_header_id|>") != std::string_view::npos) {
    t.family = ChatFamily::kLlama3;
  } else if (text.find("<|im_start|>") != std::string_view::npos) {
    t.family = ChatFamily::kChatMl;
  } else if (text.find("[INST]") != std::string_view::npos) {
    t.family = ChatFamily::kLlama2;
    t.llama2_system_block = text.find("<<SYS>>") != std::string_view::npos;
  }
  return t;
}

ChatTemplate ChatTemplate::FromJinja(std::string_view text) {
  ChatTemplate t = Detect(text);
  if (text.empty()) return t;
  try {
    t.jinja = std::make_shared<const jinja::Template>(text);
  } catch (const jinja::TemplateError& e) {
    t.jinja_error = e.Describe();
    return t;
  }
  t.renders_tools = text.find("tools") != std::string_view::npos;
  if (t.renders_tools) t.tool_format = ToolCallFormatForTemplate(text);
  return t;
}

std::string ChatTemplate::Describe() const { return jinja ? "jinja" : ChatFamilyName(family); }

namespace {

using ojson = nlohmann::ordered_json;

ojson MessageJson(const ChatMessage& m) {
  ojson out{{"role", m.role}};
  out["content"] = m.content_null ? ojson(nullptr) : ojson(m.content);
  if (!m.tool_calls.empty()) {
    ojson calls = ojson::array();
    for (const ChatToolCall& c : m.tool_calls)
      calls.push_back({{"id", c.id},
                       {"type", "function"},
                       {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    out["tool_calls"] = std::move(calls);
  }
  if (m.role == "tool") {
    out["tool_call_id"] = m.tool_call_id;
    if (!m.name.empty()) out["name"] = m.name;
  }
  return out;
}

std::string RenderJinja(const jinja::Template& t, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt, const ojson& tools, const ChatTemplate& c) {
  ojson vars;
  ojson list = ojson::array();
  for (const ChatMessage& m : messages) list.push_back(MessageJson(m));
  vars["messages"] = std::move(list);
  // As transformers passes them: None when the request has no tools.
  vars["tools"] = tools.empty() ? ojson(nullptr) : tools;
  vars["documents"] = nullptr;
  vars["add_generation_prompt"] = add_generation_prompt;
  vars["bos_token"] = c.bos_text;
  vars["eos_token"] = c.eos_text;
  std::string text;
  try {
    text = t.Render(vars);
  } catch (const jinja::TemplateRaised& e) {
    ThrowInvalid("messages", e.what());  // the template's own words, as transformers reports them
  } catch (const jinja::TemplateError& e) {
    ThrowInvalid("messages", "the model's chat template failed on these messages: " + e.Describe());
  }
  if (c.strip_leading_bos && !c.bos_text.empty() && text.compare(0, c.bos_text.size(), c.bos_text) == 0)
    text.erase(0, c.bos_text.size());
  return text;
}

// {"tool_calls": [{"name", "arguments"}]}: what the generic form asks the model to write.
std::string GenericCallsJson(const std::vector<ChatToolCall>& calls) {
  ojson list = ojson::array();
  for (const ChatToolCall& c : calls) list.push_back({{"name", c.name}, {"arguments", c.arguments}});
  return ojson{{"tool_calls", std::move(list)}}.dump();
}

// The conversation with tools spelt out for a template that cannot render
// them: tool descriptions and the answer format in the system message,
// earlier calls as the JSON the model was asked for, tool results as user
// turns (merged with a following user turn, so that roles still alternate).
std::vector<ChatMessage> WithGenericTools(const std::vector<ChatMessage>& messages, const ojson& tools) {
  std::vector<ChatMessage> out;
  if (!tools.empty()) {
    std::string system = "Tools you can call (arguments: JSON Schema):\n";
    for (const ojson& t : tools) system += t["function"].dump() + "\n";
    system += "To call, reply only with {\"tool_calls\": [{\"name\": NAME, \"arguments\": {...}}]}";
    if (!messages.empty() && messages[0].role == "system") system = messages[0].content + "\n\n" + system;
    out.push_back(ChatMessage{"system", system});
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (i == 0 && m.role == "system" && !tools.empty()) continue;  // folded in above
    ChatMessage plain{m.role, m.content};
    if (!m.tool_calls.empty())
      plain.content = (m.content.empty() ? "" : m.content + "\n") + GenericCallsJson(m.tool_calls);
    if (m.role == "tool") {
      plain.role = "user";
      plain.content = fmt::format("Result of the tool call {} ({}): {}", m.tool_call_id, m.name, m.content);
    }
    if (plain.role == "user" && !out.empty() && out.back().role == "user")
      out.back().content += "\n\n" + plain.content;
    else
      out.push_back(std::move(plain));
  }
  return out;
}

}  // namespace

std::string ChatTemplate::Render(const std::vector<ChatMessage>& conversation, bool add_generation_prompt,
                                 const ojson& tools) const {
  if (jinja && renders_tools) return RenderJinja(*jinja, conversation, add_generation_prompt, tools, *this);
  bool generic = !tools.empty();
  for (const ChatMessage& m : conversation) generic = generic || m.role == "tool" || !m.tool_calls.empty();
  const std::vector<ChatMessage> messages = generic ? WithGenericTools(conversation, tools) : conversation;
  if (jinja) return RenderJinja(*jinja, messages, add_generation_prompt, ojson::array(), *this);
  switch (family) {
    case ChatFamily::kLlama3: return RenderLlama3(messages, add_generation_prompt);
    case ChatFamily::kChatMl: return RenderChatMl(messages, add_generation_prompt);
    case ChatFamily::kPlain: return RenderPlain(messages, add_generation_prompt);
    case ChatFamily::kLlama2: break;
  }
  // Llama 2 (Meta's template): an optional leading system message folds into
  // the first user turn; then user and assistant strictly alternate. Each
  // user turn is "[INST] ... [/INST]", each answer " ... </s>", and every
  // user turn after the first starts with BOS. The prompt always ends with
  // "[/INST]", which is the generation prompt itself.
  std::string system;
  size_t first = 0;
  if (!messages.empty() && messages[0].role == "system") {
    system = messages[0].content;
    first = 1;
  }
  std::string out;
  if (first == 1 && messages.size() == 1) {
    // A system message alone still needs a turn to carry it.
    const std::string content = llama2_system_block ? fmt::format("<<SYS>>\n{}\n<</SYS>>", system) : system;
    return fmt::format("[INST] {} [/INST]", Trim(content));
  }
  for (size_t i = first; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    const bool expect_user = (i - first) % 2 == 0;
    if ((m.role == "user") != expect_user || m.role == "system")
      ThrowInvalid(fmt::format("messages[{}].role", i),
                   fmt::format("this model's chat template (Llama 2) needs user and assistant turns to alternate, "
                               "starting with user after an optional first system message; messages[{}] is '{}'",
                               i, m.role));
    if (m.role == "user") {
      std::string content = m.content;
      if (i == first && first == 1)
        content = llama2_system_block ? fmt::format("<<SYS>>\n{}\n<</SYS>>\n\n{}", system, content)
                                      : fmt::format("{}\n\n{}", system, content);
      if (i != first) out += bos_text;
      out += fmt::format("[INST] {} [/INST]", Trim(content));
    } else {
      out += fmt::format(" {} {}", Trim(m.content), eos_text);
    }
  }
  (void)add_generation_prompt;  // "[/INST]" already opens the answer
  return out;
}

}  // namespace ridge::server
