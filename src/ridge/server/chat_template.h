#pragma once
// Chat messages → the prompt text a chat model was trained on, for the
// template families most GGUF models use, written by hand rather than by a
// Jinja interpreter. The family is recognized from markers in the GGUF's
// tokenizer.chat_template:
//   "<|start_header_id|>"  Llama 3   <|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>...
//   "<|im_start|>"         ChatML    <|im_start|>user\nHi<|im_end|>\n...       (Qwen, Yi, Hermes, ...)
//   "[INST]"               Llama 2   [INST] <<SYS>>\n...\n<</SYS>>\n\nHi [/INST] answer </s><s>[INST] ...
//                          (Mistral's variant, without "<<SYS>>", puts the system text before the first turn)
//   anything else / none   plain     "System: ...\nUser: Hi\nAssistant:"
// The rendered text contains control-token texts ("<|eot_id|>") and is
// encoded with parse_special; the leading BOS is not part of it (the
// tokenizer adds it as the vocabulary asks), later BOS/EOS texts are.
#include <optional>
#include <vector>
#include <string>
#include <string_view>

#include "ridge/server/openai_request.h"

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

  // Chooses the family from a GGUF chat template's text ("" → plain).
  static ChatTemplate Detect(std::string_view template_text);

  // The prompt for `messages`, ending with the assistant's turn opening when
  // add_generation_prompt. Throws ApiError 400 ("messages") for a conversation
  // the family cannot express (Llama 2: roles must alternate user/assistant).
  std::string Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;
};

}  // namespace ridge::server
