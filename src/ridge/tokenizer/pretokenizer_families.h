#pragma once
// The table of byte-level BPE pre-tokenizer families: each tokenizer.ggml.pre
// name llama.cpp's converter writes, the regexes that split text into words
// before merges (applied in order, each to every word the previous one left),
// and the family's encoding defaults.
#include <span>
#include <string>
#include <string_view>

namespace ridge::tokenizer_detail {

struct PretokenizerFamily {
  std::span<const std::string_view> names;     // tokenizer.ggml.pre values; names[0] is the family's own
  std::span<const std::string_view> patterns;  // PCRE2 (UTF + UCP) regexes, applied in sequence
  bool ignore_merges = false;  // a word that is a whole token stays whole (tiktoken-style vocabularies)
  bool add_bos = false;        // default of tokenizer.ggml.add_bos_token
  // After the regexes: every run of decimal digits (\d) is cut into threes
  // from the right ("1234567" → 1 234 567), as the zero-width split
  // (?=(\d{3})+(?!\d)) does, but in linear time (that regex rescans the rest
  // of the run from every position).
  bool digits_in_threes_from_right = false;
};

// The family of a tokenizer.ggml.pre name ("" reads as "default"), or nullptr.
const PretokenizerFamily* FindPretokenizerFamily(std::string_view pre);

// Every known name, comma-separated, for error messages.
std::string KnownPretokenizerNames();

}  // namespace ridge::tokenizer_detail
