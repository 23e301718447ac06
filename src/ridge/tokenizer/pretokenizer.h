#pragma once
// Regex pre-tokenizer of byte-level BPE: splits text into words before merges,
// with PCRE2 in UTF + UCP mode so \p{L}, \p{N} and \s are Unicode-aware.
// Every byte of the input lands in exactly one word: text between matches
// (which the patterns leave only for odd input, e.g. invalid UTF-8) becomes a
// word of its own, so nothing is ever dropped.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ridge::tokenizer_detail {

class Pretokenizer {
 public:
  // `pre` is tokenizer.ggml.pre: "gpt-2" (also "" and "default"), "llama-bpe"
  // (also "llama3", "llama-v3"), "qwen2". ridge::Error for any other name.
  static std::unique_ptr<Pretokenizer> Create(const std::string& pre);
  // The regex for a pre-tokenizer name (the PCRE2 translation), or "" if unknown.
  static std::string PatternFor(const std::string& pre);
  ~Pretokenizer();
  Pretokenizer(const Pretokenizer&) = delete;
  Pretokenizer& operator=(const Pretokenizer&) = delete;

  // Thread-safe. Appends the words of `text` (views into it) to `words`.
  void Split(std::string_view text, std::vector<std::string_view>* words) const;
  const std::string& name() const { return name_; }

 private:
  Pretokenizer() = default;
  std::string name_;
  struct Code;
  std::unique_ptr<Code> code_;
};

}  // namespace ridge::tokenizer_detail
