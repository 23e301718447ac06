#pragma once
// Text ⇄ token ids for the tokenizer models of GGUF files:
//   "llama" (SentencePiece-style: dummy-prefix space, "▁" for space, merges by
//   score, byte fallback), "gpt2" (byte-level BPE: the regex pre-tokenizer
//   family named by tokenizer.ggml.pre, merges by rank), "gemma4" (merges by
//   rank over characters, "▁" for space, byte fallback) and "bert" (WordPiece).
// Output matches llama.cpp's conformance files (Hugging Face tokenizers' ids).
//
// A Tokenizer is immutable after construction; copies share the same tables,
// and every const method may be called from many threads at once.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ridge/tokenizer/vocab.h"

namespace ridge {

class GgufFile;

namespace tokenizer_detail {
struct TokenizerState;
}

class Tokenizer {
 public:
  // Reads tokenizer.ggml.* from the file (see VocabFromGguf). Throws ridge::Error.
  static Tokenizer FromGguf(const GgufFile& file);
  // Validates the vocabulary (ValidateVocab, merges, pre-tokenizer name) and
  // builds the look-up tables. Throws ridge::Error.
  static Tokenizer FromVocab(Vocab vocab);

  // Text → ids. `text` is taken as bytes: invalid UTF-8 is encoded through byte
  // tokens and decodes back to the same bytes.
  //   add_bos:       put bos_id() first (ridge::Error if the vocabulary has none).
  //                  Pass add_bos() to do what the model's metadata asks.
  //   parse_special: false = special-token texts are literal, "<s>" is three
  //                  characters; true = occurrences of control-token texts
  //                  ("<|eot_id|>") and of user-defined tokens written like
  //                  markup (phi-3's "</s>") become those tokens (chat
  //                  templates, completion prompts). Other user-defined tokens
  //                  (added words, runs of spaces) are always split out first,
  //                  as llama.cpp and HF do.
  //   add_eos:       append eos_id() (pass add_eos() for the metadata's choice).
  // Empty text gives no text tokens (just BOS/EOS if asked for).
  std::vector<int32_t> Encode(std::string_view text, bool add_bos, bool parse_special = false,
                              bool add_eos = false) const;

  // Ids → text (the raw bytes; may be invalid UTF-8 if the ids are an arbitrary
  // cut: use StreamingDetokenizer for text shown while generating). Control
  // tokens decode to nothing. For SentencePiece vocabularies with a dummy prefix,
  // the leading space of the first token and of the token after a BOS is dropped,
  // so Decode(Encode(t, ...)) == t. Throws ridge::Error on an id out of range.
  std::string Decode(std::span<const int32_t> ids) const;

  // The token's text exactly as stored in the vocabulary ("▁Hello", "Ġworld",
  // "<0x0A>", "<s>"). Throws ridge::Error on an id out of range.
  std::string TokenPiece(int32_t id) const;
  // The bytes this token contributes to decoded text, with no leading-space rule
  // ("▁Hello" → " Hello", "<0x0A>" → "\n", control → "").
  std::string TokenBytes(int32_t id) const;
  TokenType token_type(int32_t id) const;
  // Exact look-up of a token's stored text, any type ("<|eot_id|>"); -1 if absent.
  int32_t FindToken(std::string_view piece) const;

  int32_t n_vocab() const;
  int32_t bos_id() const;  // -1 when none
  int32_t eos_id() const;  // -1 when none
  int32_t unk_id() const;  // -1 when none
  int32_t pad_id() const;  // -1 when none
  bool add_bos() const;    // the metadata asks for BOS before a prompt
  bool add_eos() const;
  // SentencePiece with the dummy prefix (so its space is dropped when decoding);
  // always false for byte-level BPE.
  bool add_space_prefix() const;
  TokenizerModel model() const;
  const std::string& pre() const;  // tokenizer.ggml.pre as stored ("gpt-2", "llama-bpe", "" when absent)

  // True for tokens after which generation stops: eos, eot, eom and the usual
  // end-of-turn control tokens (<|eot_id|>, <|im_end|>, <|end|>, <end_of_turn>,
  // <|endoftext|>) when the vocabulary has them. Note: llama2.c additionally
  // stops at BOS; that rule belongs to the caller that reproduces it.
  bool IsEndOfGeneration(int32_t id) const;
  bool IsControl(int32_t id) const;

  const Vocab& vocab() const;
  // Byte-level BPE merges ignored because a part or the result is not a token.
  int64_t n_merges_skipped() const;

 private:
  explicit Tokenizer(std::shared_ptr<const tokenizer_detail::TokenizerState> state);
  // Appends the text of one token to `out`, applying and updating the
  // leading-space rule (see Decode).
  void AppendDecoded(int32_t id, bool* strip_next_space, std::string* out) const;
  std::shared_ptr<const tokenizer_detail::TokenizerState> state_;
  friend class StreamingDetokenizer;
};

}  // namespace ridge
