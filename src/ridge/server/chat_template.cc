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
  }
  return t;
}

std::string ChatTemplate::Describe() const { return jinja ? "jinja" : ChatFamilyName(family); }

namespace {

std::string RenderJinja(const jinja::Template& t, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt, const ChatTemplate& c) {
  nlohmann::ordered_json vars;
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) list.push_back({{"role", m.role}, {"content", m.content}});
  vars["messages"] = std::move(list);
  vars["tools"] = nullptr;  // as transformers passes them when a request has none
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

}  // namespace

std::string ChatTemplate::Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  if (jinja) return RenderJinja(*jinja, messages, add_generation_prompt, *this);
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
