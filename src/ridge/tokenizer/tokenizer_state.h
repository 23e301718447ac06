#pragma once
// Internal: the immutable tables a Tokenizer shares between its copies, and the
// encoding algorithms that read them. Not for use outside the tokenizer layer.
// The state is built in place and never moved (the indexes point into vocab.tokens).
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ridge/tokenizer/flat_tables.h"
#include "ridge/tokenizer/pretokenizer.h"
#include "ridge/tokenizer/vocab.h"

namespace ridge::tokenizer_detail {

struct TokenizerState {
  Vocab vocab;
  TokenIndex all_ids;      // every token (last wins on duplicate texts, as llama.cpp)
  TokenIndex literal_ids;  // tokens literal text may turn into: normal, undefined, user-defined, unused
  std::array<int32_t, 256> byte_ids{};  // token of each byte: <0xNN> (SentencePiece, Gemma 4) or its
                                        // mapped code point (byte-level BPE); -1 if the vocabulary lacks it
  size_t max_token_bytes = 0;           // longest token text
  std::vector<int32_t> split_first;     // user-defined / control / unknown ids, longest text first
  std::vector<bool> split_always;       // [split_first.size()] split even when special tokens are not parsed
  std::vector<uint8_t> end_of_generation;  // [n_vocab] 1 for IsEndOfGeneration
  std::vector<std::string> decoded;        // [n_vocab] bytes each token decodes to (TokenBytes)

  // SentencePiece only: no token has a "▁" right after another character, so
  // words (a "▁" run and what follows it) encode independently.
  bool spm_words_are_independent = false;

  // BPE by rank (byte-level, and Gemma 4's over characters) only.
  MergeTable merges;             // (left id, right id) → merge
  int64_t n_merges_skipped = 0;  // merges naming texts that are not tokens (can never apply)
  bool byte_level = false;       // symbols start as mapped bytes (else as UTF-8 characters)
  bool ignore_merges = false;    // Llama 3, tekken: a word that is a whole token stays whole
  std::unique_ptr<Pretokenizer> pretokenizer;
};

// SentencePiece-style encoding of one text fragment whose spaces are already
// "▁" (and dummy prefix added). Appends ids.
void EncodeSpm(const TokenizerState& state, std::string_view text, std::vector<int32_t>* out);
// Whether spm_words_are_independent holds for the vocabulary (literal_ids built).
bool SpmWordsAreIndependent(const TokenizerState& state);

// BPE encoding of one text fragment (pre-tokenizer, byte mapping or characters,
// merges by rank; Gemma 4's spaces already "▁"). Appends ids.
void EncodeBpe(const TokenizerState& state, std::string_view text, std::vector<int32_t>* out);

// WordPiece encoding of one text fragment (BERT normalization, split, longest
// pieces). Appends ids.
void EncodeWordPiece(const TokenizerState& state, std::string_view text, std::vector<int32_t>* out);

// GPT-2's bytes_to_unicode: each byte as a printable code point, UTF-8 encoded.
const std::array<std::string, 256>& ByteToUnicode();
// The inverse, for decoding: code point → byte, -1 when not a mapped code point.
int UnicodeToByte(uint32_t codepoint);

// Fills merges / n_merges_skipped from state->vocab.merges and state->all_ids.
// ridge::Error for a malformed merge line.
void BuildBpeMerges(TokenizerState* state);

}  // namespace ridge::tokenizer_detail
