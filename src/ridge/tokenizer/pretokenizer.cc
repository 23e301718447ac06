#include "ridge/tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "ridge/base/error.h"
#include "ridge/tokenizer/utf8.h"

namespace ridge::tokenizer_detail {
namespace {

// GPT-2 (openai/gpt-2 encoder.py), with the final \s+ that llama.cpp's copy
// omits: that alternative only matches what the others leave as a gap, and
// gaps become words here anyway, so the split is the same.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Llama 3 (tiktoken cl100k-style). PCRE2 supports the scoped caseless group
// (?i:...) of the original; in UTF+UCP mode it folds case the Unicode way
// ("'S", "'Re", and "'ſ" with the long s, as tiktoken and HF tokenizers do).
constexpr const char* kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen2: Llama 3's pattern with single digits.
constexpr const char* kQwen2Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::string PcreMessage(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof(buffer)) < 0) return "error " + std::to_string(code);
  return reinterpret_cast<const char*>(buffer);
}

}  // namespace

struct Pretokenizer::Code {
  pcre2_code* code = nullptr;
  bool jit = false;
  ~Code() { pcre2_code_free(code); }
};

std::string Pretokenizer::PatternFor(const std::string& pre) {
  if (pre.empty() || pre == "default" || pre == "gpt-2") return kGpt2Pattern;
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") return kLlama3Pattern;
  if (pre == "qwen2") return kQwen2Pattern;
  return "";
}

std::unique_ptr<Pretokenizer> Pretokenizer::Create(const std::string& pre) {
  const std::string pattern = PatternFor(pre);
  if (pattern.empty()) {
    Fail("tokenizer.ggml.pre = '{}' is not supported (supported: gpt-2, default, llama-bpe, llama3, llama-v3, qwen2)",
         pre);
  }
  std::unique_ptr<Pretokenizer> result(new Pretokenizer());
  result->name_ = pre.empty() ? "gpt-2" : pre;
  result->code_ = std::make_unique<Code>();
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  result->code_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                      PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error_code, &error_offset,
                                      nullptr);
  if (result->code_->code == nullptr) {
    Fail("pre-tokenizer '{}': PCRE2 rejected the pattern at offset {}: {}", pre, error_offset,
         PcreMessage(error_code));
  }
  // JIT is an optimisation only: without it (or if it fails) the interpreter runs.
  result->code_->jit = pcre2_jit_compile(result->code_->code, PCRE2_JIT_COMPLETE) == 0;
  return result;
}

Pretokenizer::~Pretokenizer() = default;

void Pretokenizer::Split(std::string_view text, std::vector<std::string_view>* words) const {
  if (text.empty()) return;
  std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)> match_owner(
      pcre2_match_data_create_from_pattern(code_->code, nullptr), pcre2_match_data_free);
  pcre2_match_data* match = match_owner.get();
  if (match == nullptr) Fail("pre-tokenizer '{}': out of memory for match data", name_);
  const auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;        // where the next search starts
  size_t gap_start = 0;  // first byte not yet in a word
  while (pos < text.size()) {
    int rc = pcre2_match(code_->code, subject, text.size(), pos, 0, match, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // A huge run of one class can exhaust the JIT's small stack; the
      // interpreter keeps its backtracking state on the heap.
      rc = pcre2_match(code_->code, subject, text.size(), pos, PCRE2_NO_JIT, match, nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      Fail("pre-tokenizer '{}': matching at byte {} of {} failed: {}", name_, pos, text.size(), PcreMessage(rc));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
    const size_t start = ovector[0];
    const size_t end = ovector[1];
    if (end == start) {  // none of the patterns matches empty text; be safe anyway
      if (start >= text.size()) break;
      pos = start + static_cast<size_t>(utf8::Classify(text.substr(start)).n_bytes);
      continue;
    }
    if (start > gap_start) words->push_back(text.substr(gap_start, start - gap_start));
    words->push_back(text.substr(start, end - start));
    pos = gap_start = end;
  }
  if (gap_start < text.size()) words->push_back(text.substr(gap_start));
}

}  // namespace ridge::tokenizer_detail
