#include "ridge/grammar/grammar_vocabulary.h"

namespace ridge::grammar {

GrammarVocabulary::GrammarVocabulary(const Tokenizer& tokenizer) : strips_first_space_(tokenizer.add_space_prefix()) {
  const int32_t n_vocab = tokenizer.n_vocab();
  bytes_.resize(static_cast<size_t>(n_vocab));
  end_of_generation_.resize(static_cast<size_t>(n_vocab));
  strippable_.resize(static_cast<size_t>(n_vocab));
  std::vector<std::pair<std::string, int32_t>> entries;
  entries.reserve(static_cast<size_t>(n_vocab));
  for (int32_t t = 0; t < n_vocab; ++t) {
    const size_t i = static_cast<size_t>(t);
    if (tokenizer.IsEndOfGeneration(t)) {
      end_of_generation_[i] = 1;
      end_tokens_.push_back(t);
      continue;
    }
    const TokenType type = tokenizer.token_type(t);
    if (type == TokenType::kControl || type == TokenType::kUnknown || type == TokenType::kUnused) continue;
    bytes_[i] = tokenizer.TokenBytes(t);
    // Tokenizer::AppendDecoded drops the space of normal tokens only.
    strippable_[i] = type == TokenType::kNormal || type == TokenType::kUndefined;
    if (!bytes_[i].empty()) entries.emplace_back(bytes_[i], t);
  }
  trie_ = TokenTrie(std::move(entries));
}

std::string_view GrammarVocabulary::FirstTokenBytes(int32_t token) const {
  std::string_view bytes = TokenBytes(token);
  if (strips_first_space_ && strippable_[static_cast<size_t>(token)] && !bytes.empty() && bytes.front() == ' ') {
    bytes.remove_prefix(1);
  }
  return bytes;
}

}  // namespace ridge::grammar
