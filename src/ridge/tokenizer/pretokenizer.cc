#include "ridge/tokenizer/pretokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "ridge/base/error.h"
#include "ridge/tokenizer/pretokenizer_families.h"
#include "ridge/tokenizer/utf8.h"

namespace ridge::tokenizer_detail {
namespace {

std::string PcreMessage(int code) {
  PCRE2_UCHAR buffer[256];
  if (pcre2_get_error_message(code, buffer, sizeof(buffer)) < 0) return "error " + std::to_string(code);
  return reinterpret_cast<const char*>(buffer);
}

using MatchData = std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data*)>;

}  // namespace

class Pretokenizer::Regex {
 public:
  Regex(const std::string& name, std::string_view pattern) {
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    code_ = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                          PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &error_code, &error_offset, nullptr);
    if (code_ == nullptr) {
      Fail("pre-tokenizer '{}': PCRE2 rejected the pattern '{}' at offset {}: {}", name, pattern, error_offset,
           PcreMessage(error_code));
    }
    // JIT is an optimisation only: without it (or if it fails) the interpreter runs.
    pcre2_jit_compile(code_, PCRE2_JIT_COMPLETE);
    uint32_t capture_count = 0;
    pcre2_pattern_info(code_, PCRE2_INFO_CAPTURECOUNT, &capture_count);
    n_pairs_ = capture_count + 1;
  }
  ~Regex() { pcre2_code_free(code_); }
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;

  const pcre2_code* code() const { return code_; }
  uint32_t n_pairs() const { return n_pairs_; }

 private:
  pcre2_code* code_ = nullptr;
  uint32_t n_pairs_ = 1;
};

std::unique_ptr<Pretokenizer> Pretokenizer::Create(const std::string& pre) {
  const PretokenizerFamily* family = FindPretokenizerFamily(pre);
  if (family == nullptr) {
    Fail("tokenizer.ggml.pre = '{}' is not a known pre-tokenizer (known: {})", pre, KnownPretokenizerNames());
  }
  return FromPatterns(pre.empty() ? "default" : pre,
                      std::vector<std::string_view>(family->patterns.begin(), family->patterns.end()),
                      family->digits_in_threes_from_right);
}

std::unique_ptr<Pretokenizer> Pretokenizer::FromPatterns(const std::string& name,
                                                         const std::vector<std::string_view>& patterns,
                                                         bool digits_in_threes_from_right) {
  RIDGE_CHECK(!patterns.empty());
  std::unique_ptr<Pretokenizer> result(new Pretokenizer());
  result->name_ = name;
  for (const std::string_view pattern : patterns) result->regexes_.push_back(std::make_unique<Regex>(name, pattern));
  if (digits_in_threes_from_right) result->digit_runs_ = std::make_unique<Regex>(name, R"(\d+)");
  return result;
}

void Pretokenizer::CutDigitRuns(std::string_view word, void* match_data, std::vector<std::string_view>* words) const {
  auto* match = static_cast<pcre2_match_data*>(match_data);
  const auto subject = reinterpret_cast<PCRE2_SPTR>(word.data());
  size_t piece_start = 0;
  size_t pos = 0;
  while (pos < word.size()) {
    const int rc = pcre2_match(digit_runs_->code(), subject, word.size(), pos, 0, match, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) Fail("pre-tokenizer '{}': matching at byte {} failed: {}", name_, pos, PcreMessage(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
    const std::string_view run = word.substr(ovector[0], ovector[1] - ovector[0]);
    // A cut before every digit with a positive multiple of three digits left in the run.
    std::vector<size_t> starts;  // byte offset of each digit in the run
    for (size_t i = 0; i < run.size(); i += static_cast<size_t>(utf8::Classify(run.substr(i)).n_bytes)) {
      starts.push_back(i);
    }
    for (size_t k = 0; k < starts.size(); ++k) {
      if ((starts.size() - k) % 3 != 0) continue;
      const size_t cut = ovector[0] + starts[k];
      if (cut > piece_start) words->push_back(word.substr(piece_start, cut - piece_start));
      piece_start = cut;
    }
    pos = ovector[1];
  }
  if (piece_start < word.size()) words->push_back(word.substr(piece_start));
}

Pretokenizer::~Pretokenizer() = default;

void Pretokenizer::SplitWith(const Regex& regex, std::string_view word, void* match_data,
                             std::vector<std::string_view>* words) const {
  auto* match = static_cast<pcre2_match_data*>(match_data);
  const auto subject = reinterpret_cast<PCRE2_SPTR>(word.data());
  size_t pos = 0;        // where the next search starts
  size_t gap_start = 0;  // first byte not yet in a word
  while (pos < word.size()) {
    int rc = pcre2_match(regex.code(), subject, word.size(), pos, 0, match, nullptr);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      // A huge run of one class can exhaust the JIT's small stack; the
      // interpreter keeps its backtracking state on the heap.
      rc = pcre2_match(regex.code(), subject, word.size(), pos, PCRE2_NO_JIT, match, nullptr);
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      Fail("pre-tokenizer '{}': matching at byte {} of {} failed: {}", name_, pos, word.size(), PcreMessage(rc));
    }
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match);
    const size_t start = ovector[0];
    const size_t end = ovector[1];
    if (start > gap_start) words->push_back(word.substr(gap_start, start - gap_start));
    if (end == start) {  // a zero-width match: a cut before `start`; search on from the next character
      gap_start = start;
      if (start >= word.size()) break;
      pos = start + static_cast<size_t>(utf8::Classify(word.substr(start)).n_bytes);
      continue;
    }
    words->push_back(word.substr(start, end - start));
    pos = gap_start = end;
  }
  if (gap_start < word.size()) words->push_back(word.substr(gap_start));
}

void Pretokenizer::Split(std::string_view text, std::vector<std::string_view>* words) const {
  if (text.empty()) return;
  std::vector<std::string_view> current{text};
  std::vector<std::string_view> next;
  for (size_t i = 0; i < regexes_.size(); ++i) {
    const Regex& regex = *regexes_[i];
    MatchData match(pcre2_match_data_create(regex.n_pairs(), nullptr), pcre2_match_data_free);
    if (match == nullptr) Fail("pre-tokenizer '{}': out of memory for match data", name_);
    const bool last = i + 1 == regexes_.size() && digit_runs_ == nullptr;
    std::vector<std::string_view>* out = last ? words : &next;
    next.clear();
    for (const std::string_view word : current) SplitWith(regex, word, match.get(), out);
    if (!last) current.swap(next);
  }
  if (digit_runs_ == nullptr) return;
  MatchData match(pcre2_match_data_create(digit_runs_->n_pairs(), nullptr), pcre2_match_data_free);
  if (match == nullptr) Fail("pre-tokenizer '{}': out of memory for match data", name_);
  for (const std::string_view word : current) CutDigitRuns(word, match.get(), words);
}

}  // namespace ridge::tokenizer_detail
