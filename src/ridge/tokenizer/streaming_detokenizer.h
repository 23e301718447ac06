#pragma once
// Turns a stream of token ids into text that is safe to show as it arrives:
// Push(id) returns only complete, valid UTF-8. Bytes of a character split over
// several tokens (byte tokens <0xE2><0x96><0x81>, or byte-level BPE pieces)
// are held until the character is complete. Bytes that can never form a valid
// character are replaced by U+FFFD (one per maximal ill-formed subpart, as the
// Unicode standard recommends); an incomplete tail is replaced at Flush().
//
// Concatenating every Push and the final Flush gives Decode(ids) whenever that
// is valid UTF-8 (same leading-space rule).
#include <cstdint>
#include <string>

#include "ridge/tokenizer/tokenizer.h"

namespace ridge {

class StreamingDetokenizer {
 public:
  // at_sequence_start: the first token pushed begins the text, so (SentencePiece
  // with dummy prefix) its leading space is dropped, as Decode does. Pass false
  // when the stream continues text decoded elsewhere (generated tokens after a
  // prompt). Either way the space of the token right after a BOS is dropped.
  // The tokenizer is copied (cheap: copies share tables).
  explicit StreamingDetokenizer(const Tokenizer& tokenizer, bool at_sequence_start = true);

  // Newly complete text after `id` (often empty). Throws ridge::Error on an id
  // out of range.
  std::string Push(int32_t id);
  // Ends the stream: the held incomplete bytes, if any, as U+FFFD. The
  // detokenizer can be reused afterwards as if continuing (no leading-space drop).
  std::string Flush();
  // Bytes held back waiting for the rest of a character (0..3).
  size_t n_pending_bytes() const { return pending_.size(); }

 private:
  Tokenizer tokenizer_;
  std::string pending_;
  bool strip_next_space_ = false;
};

}  // namespace ridge
