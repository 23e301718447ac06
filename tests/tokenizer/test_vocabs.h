#pragma once
// Small hand-made vocabularies for the tokenizer unit tests.
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "ridge/tokenizer/tokenizer_state.h"
#include "ridge/tokenizer/vocab.h"

namespace ridge::testing {

inline const std::string kSp = "\xE2\x96\x81";  // ▁

// SentencePiece-style: 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>, then
// `normal` (text, score) pairs from id 259 on.
inline Vocab SpmVocab(const std::vector<std::pair<std::string, float>>& normal) {
  Vocab v;
  v.model = TokenizerModel::kSentencePiece;
  auto add = [&v](std::string text, float score, TokenType type) {
    v.tokens.push_back(std::move(text));
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0, TokenType::kUnknown);
  add("<s>", 0, TokenType::kControl);
  add("</s>", 0, TokenType::kControl);
  for (int b = 0; b < 256; ++b) {
    char buf[8];
    std::snprintf(buf, sizeof(buf), "<0x%02X>", b);
    add(buf, 0, TokenType::kByte);
  }
  for (const auto& [text, score] : normal) add(text, score, TokenType::kNormal);
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  v.add_bos = true;
  v.add_space_prefix = true;
  return v;
}
inline int32_t SpmByte(int b) { return 3 + b; }

// Byte-level BPE: ids 0..255 are the 256 mapped bytes (id = byte value), then
// `extra` tokens, then <|endoftext|> (control); `merges` as "left right".
inline Vocab BpeVocab(const std::vector<std::string>& extra, const std::vector<std::string>& merges,
                      const std::string& pre = "gpt-2") {
  Vocab v;
  v.model = TokenizerModel::kByteLevelBpe;
  v.pre = pre;
  for (int b = 0; b < 256; ++b) v.tokens.push_back(tokenizer_detail::ByteToUnicode()[b]);
  for (const std::string& t : extra) v.tokens.push_back(t);
  v.tokens.push_back("<|endoftext|>");
  v.types.assign(v.tokens.size(), TokenType::kNormal);
  v.types.back() = TokenType::kControl;
  v.scores.assign(v.tokens.size(), 0.0f);
  v.merges = merges;
  v.bos_id = v.eos_id = static_cast<int32_t>(v.tokens.size() - 1);
  return v;
}

}  // namespace ridge::testing
