#pragma once
// Regex pre-tokenizer of byte-level BPE: splits text into words before merges,
// with PCRE2 in UTF + UCP mode so \p{L}, \p{N} and \s are Unicode-aware. A
// family's regexes (pretokenizer_families.h) apply in sequence, each to every
// word the previous one produced. Every byte of the input lands in exactly one
// word: text between matches becomes a word of its own (as in Hugging Face's
// "isolated" splits, and for odd input such as invalid UTF-8), and a
// zero-width match cuts the word where it stands, so nothing is ever dropped.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ridge::tokenizer_detail {

struct PretokenizerFamily;

class Pretokenizer {
 public:
  // `pre` is tokenizer.ggml.pre ("" reads as "default"). ridge::Error naming
  // every known name when `pre` is none of them.
  static std::unique_ptr<Pretokenizer> Create(const std::string& pre);
  // The same from a word-splitting regex list (Gemma 4's line split), and
  // optionally digit runs cut into threes from the right after them.
  static std::unique_ptr<Pretokenizer> FromPatterns(const std::string& name,
                                                    const std::vector<std::string_view>& patterns,
                                                    bool digits_in_threes_from_right = false);
  ~Pretokenizer();
  Pretokenizer(const Pretokenizer&) = delete;
  Pretokenizer& operator=(const Pretokenizer&) = delete;

  // Thread-safe. Appends the words of `text` (views into it) to `words`.
  void Split(std::string_view text, std::vector<std::string_view>* words) const;
  const std::string& name() const { return name_; }

 private:
  Pretokenizer() = default;
  class Regex;
  // One regex over one word, appending its pieces.
  void SplitWith(const Regex& regex, std::string_view word, void* match_data,
                 std::vector<std::string_view>* words) const;
  // Cuts each run of decimal digits in `word` into threes from the right.
  void CutDigitRuns(std::string_view word, void* match_data, std::vector<std::string_view>* words) const;
  std::string name_;
  std::vector<std::unique_ptr<Regex>> regexes_;
  std::unique_ptr<Regex> digit_runs_;  // \d+ when digit runs are cut in threes, else null
};

}  // namespace ridge::tokenizer_detail
