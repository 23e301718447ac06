#pragma once
// The real vocabularies of ../shared/vocab as grammar vocabularies, loaded
// once per test process: Llama 2's 32,000-token SentencePiece and Llama 3's
// 128,256-token byte-level BPE.
#include <map>
#include <memory>
#include <string>

#include "ridge/gguf/gguf_file.h"
#include "ridge/grammar/grammar_vocabulary.h"
#include "ridge/tokenizer/tokenizer.h"
#include "test_paths.h"

namespace ridge::grammar::testing {

inline const Tokenizer& SharedTokenizer(const std::string& file) {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& slot = cache[file];
  if (!slot) {
    const GgufFile gguf = GgufFile::Open(ridge::testing::SharedDir() + "/vocab/" + file);
    slot = std::make_unique<Tokenizer>(Tokenizer::FromGguf(gguf));
  }
  return *slot;
}

inline std::shared_ptr<const GrammarVocabulary> SharedVocabulary(const std::string& file) {
  static std::map<std::string, std::shared_ptr<const GrammarVocabulary>> cache;
  auto& slot = cache[file];
  if (!slot) slot = std::make_shared<GrammarVocabulary>(SharedTokenizer(file));
  return slot;
}

inline constexpr const char* kLlamaSpm = "ggml-vocab-llama-spm.gguf";
inline constexpr const char* kLlamaBpe = "ggml-vocab-llama-bpe.gguf";

}  // namespace ridge::grammar::testing
