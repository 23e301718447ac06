#pragma once
// The vocabulary a tokenizer is built from: the tokenizer.ggml.* keys of a GGUF
// file, as plain data. Tests build one by hand; VocabFromGguf reads a file.
#include <cstdint>
#include <string>
#include <vector>

namespace ridge {

class GgufFile;

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : uint8_t {
  kUndefined = 0,    // treated as normal
  kNormal = 1,
  kUnknown = 2,      // <unk>
  kControl = 3,      // <s>, </s>, <|eot_id|>: never produced from literal text
  kUserDefined = 4,  // added tokens: always split out of the text first
  kUnused = 5,
  kByte = 6,         // SentencePiece byte fallback <0xNN>
};
const char* TokenTypeName(TokenType type);

// tokenizer.ggml.model
enum class TokenizerModel {
  kSentencePiece,     // "llama": score-driven merges over UTF-8 characters, "▁" for space, byte fallback
  kByteLevelBpe,      // "gpt2": regex pre-tokenizer, bytes mapped to printable code points, merges by rank
  kSentencePieceBpe,  // "gemma4": merges by rank over UTF-8 characters, "▁" for space, byte fallback <0xNN>
  kWordPiece,         // "bert": BERT normalization, longest-match-first word pieces ("▁" starts a word)
};
const char* TokenizerModelName(TokenizerModel model);

struct Vocab {
  TokenizerModel model = TokenizerModel::kSentencePiece;
  std::string pre;                   // tokenizer.ggml.pre ("" when absent)
  std::vector<std::string> tokens;   // [n_vocab] token texts as stored ("▁the", "Ġthe", "<0x0A>")
  std::vector<float> scores;         // [n_vocab] merge priority for SentencePiece (0 when absent)
  std::vector<TokenType> types;      // [n_vocab] (kNormal when absent)
  std::vector<std::string> merges;   // "left right"; the rank is the index (byte-level BPE only)
  int32_t bos_id = -1;               // -1: the vocabulary has none ([CLS] for WordPiece)
  int32_t eos_id = -1;               // ([SEP] for WordPiece)
  int32_t unk_id = -1;
  int32_t pad_id = -1;
  int32_t eot_id = -1;               // end of turn (chat models), optional
  int32_t eom_id = -1;               // end of message, optional
  bool add_bos = false;              // the model expects BOS before a prompt
  bool add_eos = false;
  bool add_space_prefix = false;     // SentencePiece dummy prefix: " " before the text
  bool lowercase = false;            // WordPiece: BERT's normalizer lowercases...
  bool strip_accents = false;        // ...and drops combining marks after NFD

  int32_t n_vocab() const { return static_cast<int32_t>(tokens.size()); }
};

// Reads the tokenizer.ggml.* keys with llama.cpp's defaults: SentencePiece adds
// BOS and a space prefix unless the metadata says otherwise; byte-level BPE adds
// BOS when its pre-tokenizer family does (Llama 3, tekken, chameleon) or when
// add_bos_token says so; WordPiece puts [CLS] first and [SEP] last; gemma4
// always adds BOS.
// Throws ridge::Error naming the key when a key is missing, of the wrong kind,
// or inconsistent (arrays of different lengths, ids out of range).
Vocab VocabFromGguf(const GgufFile& file);

// Checks the invariants every tokenizer relies on: at least one token, scores
// and types of length n_vocab, special ids in [0, n_vocab) or -1, finite
// scores. Throws ridge::Error with the field name.
void ValidateVocab(const Vocab& vocab);

}  // namespace ridge
