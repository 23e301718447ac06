#include "ridge/tokenizer/vocab.h"

#include <cmath>

#include "ridge/base/error.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/tokenizer/pretokenizer_families.h"

namespace ridge {
namespace {

constexpr const char* kModelKey = "tokenizer.ggml.model";
constexpr const char* kTokensKey = "tokenizer.ggml.tokens";
constexpr const char* kScoresKey = "tokenizer.ggml.scores";
constexpr const char* kTypesKey = "tokenizer.ggml.token_type";
constexpr const char* kMergesKey = "tokenizer.ggml.merges";

const std::vector<GgufValue>& RequireArray(const GgufFile& file, const std::string& key) {
  const GgufValue* value = file.Find(key);
  if (value == nullptr) Fail("{}: required metadata key '{}' is missing", file.path(), key);
  const std::vector<GgufValue>* array = value->AsArray();
  if (array == nullptr) {
    Fail("{}: metadata key '{}' is a {} but an array was expected", file.path(), key, GgufValueTypeName(value->type));
  }
  return *array;
}

std::vector<std::string> ReadStrings(const GgufFile& file, const std::string& key) {
  const std::vector<GgufValue>& array = RequireArray(file, key);
  std::vector<std::string> out;
  out.reserve(array.size());
  for (size_t i = 0; i < array.size(); ++i) {
    const std::string* s = array[i].AsString();
    if (s == nullptr) {
      Fail("{}: {}[{}] is a {} but a string was expected", file.path(), key, i, GgufValueTypeName(array[i].type));
    }
    out.push_back(*s);
  }
  return out;
}

// An optional special-token id: `fallback` when the key is absent, -1 (none)
// when the file says "unset" the way llama.cpp's writers do (-1 as an int32,
// or its bits 0xFFFFFFFF as a uint32); otherwise it must name a token.
int32_t ReadTokenId(const GgufFile& file, const std::string& key, int32_t fallback, int64_t n_vocab) {
  const std::optional<int64_t> value = file.GetInt(key);
  if (!value) return fallback;
  if (*value == -1 || *value == int64_t{0xFFFFFFFF}) return -1;
  if (*value < 0 || *value >= n_vocab) {
    Fail("{}: metadata key '{}' = {} is not a token id (the vocabulary has {} tokens)", file.path(), key, *value,
         n_vocab);
  }
  return static_cast<int32_t>(*value);
}

void CheckId(const Vocab& vocab, int32_t id, const char* name) {
  if (id < -1 || id >= vocab.n_vocab()) {
    Fail("vocabulary: {} = {} is not a token id (the vocabulary has {} tokens)", name, id, vocab.n_vocab());
  }
}

}  // namespace

const char* TokenizerModelName(TokenizerModel model) {
  switch (model) {
    case TokenizerModel::kSentencePiece: return "llama";
    case TokenizerModel::kByteLevelBpe: return "gpt2";
    case TokenizerModel::kSentencePieceBpe: return "gemma4";
    case TokenizerModel::kWordPiece: return "bert";
  }
  return "invalid";
}

const char* TokenTypeName(TokenType type) {
  switch (type) {
    case TokenType::kUndefined: return "undefined";
    case TokenType::kNormal: return "normal";
    case TokenType::kUnknown: return "unknown";
    case TokenType::kControl: return "control";
    case TokenType::kUserDefined: return "user-defined";
    case TokenType::kUnused: return "unused";
    case TokenType::kByte: return "byte";
  }
  return "invalid";
}

Vocab VocabFromGguf(const GgufFile& file) {
  Vocab vocab;
  const std::string model = file.RequireString(kModelKey);
  if (model == "llama") {
    vocab.model = TokenizerModel::kSentencePiece;
  } else if (model == "gpt2") {
    vocab.model = TokenizerModel::kByteLevelBpe;
  } else if (model == "gemma4") {
    vocab.model = TokenizerModel::kSentencePieceBpe;
  } else if (model == "bert") {
    vocab.model = TokenizerModel::kWordPiece;
  } else {
    Fail("{}: {} = '{}' is not supported (supported: llama = SentencePiece, gpt2 = byte-level BPE, "
         "gemma4 = BPE over characters, bert = WordPiece)",
         file.path(), kModelKey, model);
  }
  const bool spm = vocab.model == TokenizerModel::kSentencePiece;
  const bool wordpiece = vocab.model == TokenizerModel::kWordPiece;
  vocab.pre = file.GetString("tokenizer.ggml.pre").value_or("");

  vocab.tokens = ReadStrings(file, kTokensKey);
  const int64_t n_vocab = static_cast<int64_t>(vocab.tokens.size());
  if (n_vocab == 0) Fail("{}: {} is empty", file.path(), kTokensKey);
  if (n_vocab > INT32_MAX) Fail("{}: {} has {} tokens, more than ids can address", file.path(), kTokensKey, n_vocab);

  if (file.Find(kScoresKey) != nullptr) {
    const std::vector<GgufValue>& array = RequireArray(file, kScoresKey);
    if (static_cast<int64_t>(array.size()) != n_vocab) {
      Fail("{}: {} has {} entries but {} has {}", file.path(), kScoresKey, array.size(), kTokensKey, n_vocab);
    }
    vocab.scores.reserve(array.size());
    for (size_t i = 0; i < array.size(); ++i) {
      const std::optional<double> score = array[i].AsFloat();
      if (!score) {
        Fail("{}: {}[{}] is a {} but a number was expected", file.path(), kScoresKey, i,
             GgufValueTypeName(array[i].type));
      }
      if (std::isnan(*score)) Fail("{}: {}[{}] is NaN", file.path(), kScoresKey, i);
      vocab.scores.push_back(static_cast<float>(*score));
    }
  } else {
    vocab.scores.assign(vocab.tokens.size(), 0.0f);
  }

  if (file.Find(kTypesKey) != nullptr) {
    const std::vector<GgufValue>& array = RequireArray(file, kTypesKey);
    if (static_cast<int64_t>(array.size()) != n_vocab) {
      Fail("{}: {} has {} entries but {} has {}", file.path(), kTypesKey, array.size(), kTokensKey, n_vocab);
    }
    vocab.types.reserve(array.size());
    for (size_t i = 0; i < array.size(); ++i) {
      const std::optional<int64_t> type = array[i].AsInt();
      if (!type || *type < 0 || *type > static_cast<int64_t>(TokenType::kByte)) {
        Fail("{}: {}[{}] is not a token type (0..6)", file.path(), kTypesKey, i);
      }
      vocab.types.push_back(static_cast<TokenType>(*type));
    }
  } else {
    vocab.types.assign(vocab.tokens.size(), TokenType::kNormal);
  }

  if (file.Find(kMergesKey) != nullptr) {
    vocab.merges = ReadStrings(file, kMergesKey);
  } else if (!spm && !wordpiece) {
    Fail("{}: required metadata key '{}' is missing (BPE needs its merges)", file.path(), kMergesKey);
  }

  // llama.cpp's defaults when a key is absent: SentencePiece vocabularies put
  // <unk>, <s>, </s> at 0, 1, 2; BERT's put [UNK], [CLS], [SEP] at 100, 101, 102.
  const bool spm_defaults = spm && n_vocab > 2;
  const bool bert_defaults = wordpiece && n_vocab > 102;
  const int32_t default_bos = spm_defaults ? 1 : bert_defaults ? 101 : -1;
  const int32_t default_eos = spm_defaults ? 2 : bert_defaults ? 102 : -1;
  const int32_t default_unk = spm_defaults ? 0 : bert_defaults ? 100 : -1;
  if (wordpiece) {
    // BERT files name [CLS] and [SEP] (spelled "seperator" by llama.cpp's converter).
    vocab.bos_id = ReadTokenId(file, "tokenizer.ggml.cls_token_id", default_bos, n_vocab);
    vocab.eos_id = ReadTokenId(file, "tokenizer.ggml.seperator_token_id", default_eos, n_vocab);
  } else {
    vocab.bos_id = ReadTokenId(file, "tokenizer.ggml.bos_token_id", default_bos, n_vocab);
    vocab.eos_id = ReadTokenId(file, "tokenizer.ggml.eos_token_id", default_eos, n_vocab);
  }
  vocab.unk_id = ReadTokenId(file, "tokenizer.ggml.unknown_token_id", default_unk, n_vocab);
  vocab.pad_id = ReadTokenId(file, "tokenizer.ggml.padding_token_id", -1, n_vocab);
  vocab.eot_id = ReadTokenId(file, "tokenizer.ggml.eot_token_id", -1, n_vocab);
  vocab.eom_id = ReadTokenId(file, "tokenizer.ggml.eom_token_id", -1, n_vocab);

  bool default_add_bos = spm || wordpiece;
  if (vocab.model == TokenizerModel::kByteLevelBpe) {
    const tokenizer_detail::PretokenizerFamily* family = tokenizer_detail::FindPretokenizerFamily(vocab.pre);
    default_add_bos = family != nullptr && family->add_bos;
  }
  vocab.add_bos = file.GetBool("tokenizer.ggml.add_bos_token").value_or(default_add_bos);
  // Gemma 4's files say false, but the model needs its <bos> (as llama.cpp overrides).
  if (vocab.model == TokenizerModel::kSentencePieceBpe) vocab.add_bos = true;
  vocab.add_eos = file.GetBool("tokenizer.ggml.add_eos_token").value_or(wordpiece);
  vocab.add_space_prefix = file.GetBool("tokenizer.ggml.add_space_prefix").value_or(spm);
  vocab.lowercase = file.GetBool("tokenizer.ggml.normalizer.lowercase").value_or(wordpiece);
  vocab.strip_accents = file.GetBool("tokenizer.ggml.normalizer.strip_accents").value_or(vocab.lowercase);
  if (vocab.add_bos && vocab.bos_id < 0) {
    Fail("{}: tokenizer.ggml.add_bos_token is set but there is no tokenizer.ggml.bos_token_id", file.path());
  }
  if (vocab.add_eos && vocab.eos_id < 0) {
    Fail("{}: tokenizer.ggml.add_eos_token is set but there is no tokenizer.ggml.eos_token_id", file.path());
  }
  ValidateVocab(vocab);
  return vocab;
}

void ValidateVocab(const Vocab& vocab) {
  if (vocab.tokens.empty()) Fail("vocabulary: no tokens");
  if (vocab.tokens.size() > static_cast<size_t>(INT32_MAX)) Fail("vocabulary: {} tokens is too many", vocab.tokens.size());
  if (vocab.scores.size() != vocab.tokens.size()) {
    Fail("vocabulary: {} scores for {} tokens", vocab.scores.size(), vocab.tokens.size());
  }
  if (vocab.types.size() != vocab.tokens.size()) {
    Fail("vocabulary: {} token types for {} tokens", vocab.types.size(), vocab.tokens.size());
  }
  for (size_t i = 0; i < vocab.scores.size(); ++i) {
    if (std::isnan(vocab.scores[i])) Fail("vocabulary: score of token {} is NaN", i);
  }
  for (size_t i = 0; i < vocab.types.size(); ++i) {
    if (static_cast<int>(vocab.types[i]) > static_cast<int>(TokenType::kByte)) {
      Fail("vocabulary: token {} has type {}, not one of 0..6", i, static_cast<int>(vocab.types[i]));
    }
  }
  CheckId(vocab, vocab.bos_id, "bos_id");
  CheckId(vocab, vocab.eos_id, "eos_id");
  CheckId(vocab, vocab.unk_id, "unk_id");
  CheckId(vocab, vocab.pad_id, "pad_id");
  CheckId(vocab, vocab.eot_id, "eot_id");
  CheckId(vocab, vocab.eom_id, "eom_id");
  if (vocab.add_bos && vocab.bos_id < 0) Fail("vocabulary: add_bos is set but there is no BOS token");
  if (vocab.add_eos && vocab.eos_id < 0) Fail("vocabulary: add_eos is set but there is no EOS token");
}

}  // namespace ridge
