#pragma once
// What the grammar layer needs to know of a tokenizer, built once per
// tokenizer and shared by every grammar used with it:
//   - the bytes each token adds to the output text, and the trie over them;
//   - the end-of-generation tokens (allowed exactly where the grammar may end);
//   - which tokens are never allowed under a grammar: control and other
//     special tokens that add no text (BOS, padding, <unk>, unused slots),
//     since a token that adds nothing makes no progress through the grammar.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ridge/grammar/token_trie.h"
#include "ridge/tokenizer/tokenizer.h"

namespace ridge::grammar {

class GrammarVocabulary {
 public:
  explicit GrammarVocabulary(const Tokenizer& tokenizer);

  int32_t n_vocab() const { return static_cast<int32_t>(bytes_.size()); }
  // The bytes `token` adds to the text; empty for a token never allowed by bytes.
  std::string_view TokenBytes(int32_t token) const { return bytes_[static_cast<size_t>(token)]; }
  // The same at the very start of a SentencePiece text, where the decoder
  // drops the leading space of a normal token (Tokenizer::Decode's rule).
  std::string_view FirstTokenBytes(int32_t token) const;
  bool IsEndOfGeneration(int32_t token) const { return end_of_generation_[static_cast<size_t>(token)] != 0; }
  const std::vector<int32_t>& end_tokens() const { return end_tokens_; }
  // Whether the tokenizer drops the first token's leading space at the start of a text.
  bool strips_first_space() const { return strips_first_space_; }
  const TokenTrie& trie() const { return trie_; }

 private:
  std::vector<std::string> bytes_;         // [n_vocab]
  std::vector<uint8_t> end_of_generation_;  // [n_vocab]
  std::vector<uint8_t> strippable_;         // [n_vocab] a normal token whose leading space the decoder may drop
  std::vector<int32_t> end_tokens_;
  bool strips_first_space_ = false;
  TokenTrie trie_;
};

}  // namespace ridge::grammar
