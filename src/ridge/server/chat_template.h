#pragma once
// Chat messages → the prompt text a chat model was trained on.
//
// A GGUF's tokenizer.chat_template (or a --chat-template FILE.jinja) is a
// Jinja2 program: FromJinja compiles it with ridge's interpreter
// (ridge/jinja) and Render runs it as transformers' apply_chat_template
// would (messages, tools = None, add_generation_prompt, bos_token and
// eos_token as the vocabulary's texts). A template that raises, or fails on
// a conversation, is the client's 400 with the template's own message.
//
// The built-in families below are the fallback when there is no template, or
// one the interpreter cannot parse, or when --chat-template names a family.
// They are written by hand, recognized from markers in the template text:
//   "<|start_header_id|>"  Llama 3   <|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>...
//   "<|im_start|>"         ChatML    <|im_start|>user\nHi<|im_end|>\n...       (Qwen, Yi, Hermes, ...)
//   "[INST]"               Llama 2   [INST] <<SYS>>\n...\n<</SYS>>\n\nHi [/INST] answer </s><s>[INST] ...
//                          (Mistral's variant, without "<<SYS>>", puts the system text before the first turn)
//   anything else / none   plain     "System: ...\nUser: Hi\nAssistant:"
// The rendered text contains control-token texts ("<|eot_id|>") and is
// encoded with parse_special; the leading BOS is not part of it (the
// tokenizer adds it as the vocabulary asks), later BOS/EOS texts are.
//
// Tools: a Jinja template that mentions `tools` renders them itself (with
// assistant tool_calls whose arguments are objects, and tool results), and
// the model answers in the format its template teaches (tool_format). Any
// other template, and every built-in family, gets the generic form: the tools
// and a JSON answer format described in the system message, earlier calls
// written as that JSON, and tool results as user turns; the model is then
// parsed as ToolCallFormat::kJson.
#include <memory>
#include <optional>
#include <vector>
#include <string>
#include <string_view>

#include "ridge/jinja/template.h"
#include "ridge/server/openai_request.h"
#include "ridge/server/tool_call_parser.h"

namespace ridge::server {

enum class ChatFamily { kLlama2, kLlama3, kChatMl, kPlain };
const char* ChatFamilyName(ChatFamily family);
// "llama2", "llama3", "chatml", "plain"; nullopt for anything else.
std::optional<ChatFamily> ParseChatFamily(std::string_view name);

struct ChatTemplate {
  ChatFamily family = ChatFamily::kPlain;
  bool llama2_system_block = true;  // "<<SYS>>" (Llama 2) or system text prepended (Mistral)
  std::string bos_text = "<s>";     // used between Llama 2 turns
  std::string eos_text = "</s>";
  // The compiled Jinja template that renders the prompt; null: the family does.
  std::shared_ptr<const jinja::Template> jinja;
  // Why a template text did not compile ("line 3: unknown tag 'x'"), for the
  // startup log; empty when it did or there was none.
  std::string jinja_error;
  // The tokenizer adds BOS itself: a leading bos_text the template renders is
  // dropped, so that the prompt does not start with two.
  bool strip_leading_bos = false;
  // The Jinja template renders `tools` itself (else the generic form is used).
  bool renders_tools = false;
  // How this template's model writes calls.
  ToolCallFormat tool_format = ToolCallFormat::kJson;

  // Chooses the family from a GGUF chat template's text ("" → plain).
  static ChatTemplate Detect(std::string_view template_text);
  // Detect, and compile the text as Jinja; when it does not parse, the family
  // renders and jinja_error says why.
  static ChatTemplate FromJinja(std::string_view template_text);

  // "jinja" or the family's name.
  std::string Describe() const;

  // The prompt for `messages`, ending with the assistant's turn opening when
  // add_generation_prompt. `tools`: the request's checked tools array (empty:
  // none). Throws ApiError 400 ("messages") for a conversation the family
  // cannot express (Llama 2: roles must alternate user/assistant), or that the
  // Jinja template refuses (its raise_exception message) or fails on.
  std::string Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                     const nlohmann::ordered_json& tools = nlohmann::ordered_json::array()) const;
};

}  // namespace ridge::server
