// WordPiece (BERT), as Hugging Face's BertNormalizer + BertPreTokenizer +
// WordPiece on the vocabulary llama.cpp's converter writes: word-initial pieces
// carry "▁" in front, continuation pieces are stored bare (no "##").
//   normalize: drop NUL, U+FFFD and control characters, whitespace becomes a
//              space, CJK ideographs get spaces around them, then (options)
//              NFD with combining marks removed, and lowercase;
//   split:     at whitespace (dropped) and around each punctuation character;
//   pieces:    longest known prefix first; a word with no full cover, or longer
//              than 100 characters, is one [UNK].
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>

#include <string>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/tokenizer/tokenizer_state.h"
#include "ridge/tokenizer/utf8.h"

namespace ridge::tokenizer_detail {
namespace {

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // ▁
constexpr size_t kMaxWordChars = 100;                    // HF's max_input_chars_per_word

bool IsBertWhitespace(UChar32 c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || u_isUWhiteSpace(c); }

bool IsBertControl(UChar32 c) {
  if (c == '\t' || c == '\n' || c == '\r') return false;
  switch (u_charType(c)) {
    case U_CONTROL_CHAR:
    case U_FORMAT_CHAR:
    case U_UNASSIGNED:
    case U_PRIVATE_USE_CHAR:
    case U_SURROGATE:
      return true;
    default:
      return false;
  }
}

bool IsBertPunctuation(UChar32 c) {
  if ((c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~')) {
    return true;
  }
  return u_ispunct(c);
}

// The CJK blocks BERT isolates (its _is_chinese_char, with HF's bounds).
bool IsCjkIdeograph(UChar32 c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

// UTF-8 → code points; an ill-formed subpart reads as U+FFFD (which the
// normalizer then drops, as it drops U+FFFD itself).
std::u32string CodePoints(std::string_view text) {
  std::u32string out;
  out.reserve(text.size());
  const icu::UnicodeString utf16 =
      icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
  for (int32_t i = 0; i < utf16.length(); i = utf16.moveIndex32(i, 1)) {
    out.push_back(static_cast<char32_t>(utf16.char32At(i)));
  }
  return out;
}

std::u32string Normalize(const Vocab& vocab, std::string_view text) {
  std::u32string cleaned;
  for (const char32_t c : CodePoints(text)) {
    const auto cp = static_cast<UChar32>(c);
    if (cp == 0 || cp == 0xFFFD || IsBertControl(cp)) continue;
    if (IsBertWhitespace(cp)) {
      cleaned.push_back(U' ');
    } else if (IsCjkIdeograph(cp)) {
      cleaned.append({U' ', c, U' '});
    } else {
      cleaned.push_back(c);
    }
  }
  if (vocab.strip_accents) {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* nfd = icu::Normalizer2::getNFDInstance(status);
    if (U_FAILURE(status)) Fail("WordPiece: ICU has no NFD normalizer: {}", u_errorName(status));
    const auto* code_points = reinterpret_cast<const UChar32*>(cleaned.data());
    const icu::UnicodeString utf16 = icu::UnicodeString::fromUTF32(code_points, static_cast<int32_t>(cleaned.size()));
    const icu::UnicodeString decomposed = nfd->normalize(utf16, status);
    if (U_FAILURE(status)) Fail("WordPiece: NFD failed: {}", u_errorName(status));
    cleaned.clear();
    for (int32_t i = 0; i < decomposed.length(); i = decomposed.moveIndex32(i, 1)) {
      const UChar32 cp = decomposed.char32At(i);
      if (u_charType(cp) != U_NON_SPACING_MARK) cleaned.push_back(static_cast<char32_t>(cp));
    }
  }
  if (!vocab.lowercase) return cleaned;
  // Each character alone (full mapping, no context: Σ is always σ), as HF does.
  std::u32string lowered;
  lowered.reserve(cleaned.size());
  for (const char32_t c : cleaned) {
    UChar in[2];
    int32_t in_length = 0;
    UBool error = false;
    U16_APPEND(in, in_length, 2, static_cast<UChar32>(c), error);
    UChar lower[8];
    UErrorCode status = U_ZERO_ERROR;
    const int32_t n = u_strToLower(lower, 8, in, in_length, "", &status);
    if (U_FAILURE(status) || error) {
      lowered.push_back(c);
      continue;
    }
    for (int32_t i = 0; i < n;) {
      UChar32 cp;
      U16_NEXT(lower, i, n, cp);
      lowered.push_back(static_cast<char32_t>(cp));
    }
  }
  return lowered;
}

void AppendUtf8(std::u32string_view chars, std::string* out) {
  for (const char32_t c : chars) utf8::AppendCodepoint(static_cast<uint32_t>(c), out);
}

void EncodeWord(const TokenizerState& state, std::u32string_view word, std::vector<int32_t>* out) {
  const size_t n_before = out->size();
  bool covered = word.size() <= kMaxWordChars;
  std::string piece;
  for (size_t start = 0; covered && start < word.size();) {
    size_t end = word.size();
    int32_t id = -1;
    for (; end > start; --end) {
      piece.assign(start == 0 ? kWordStart : "");
      AppendUtf8(word.substr(start, end - start), &piece);
      if (piece.size() > state.max_token_bytes) continue;  // no token is that long
      id = state.literal_ids.Find(piece);
      if (id >= 0) break;
    }
    if (id < 0) {
      covered = false;
      break;
    }
    out->push_back(id);
    start = end;
  }
  if (covered) return;
  out->resize(n_before);
  if (state.vocab.unk_id < 0) Fail("WordPiece: a word has no pieces in the vocabulary and there is no [UNK] token");
  out->push_back(state.vocab.unk_id);
}

}  // namespace

void EncodeWordPiece(const TokenizerState& state, std::string_view text, std::vector<int32_t>* out) {
  const std::u32string normalized = Normalize(state.vocab, text);
  size_t word_start = 0;
  auto flush = [&](size_t end) {
    if (end > word_start) EncodeWord(state, std::u32string_view(normalized).substr(word_start, end - word_start), out);
  };
  for (size_t i = 0; i < normalized.size(); ++i) {
    const auto cp = static_cast<UChar32>(normalized[i]);
    if (IsBertWhitespace(cp)) {
      flush(i);
      word_start = i + 1;
    } else if (IsBertPunctuation(cp)) {
      flush(i);
      EncodeWord(state, std::u32string_view(normalized).substr(i, 1), out);
      word_start = i + 1;
    }
  }
  flush(normalized.size());
}

}  // namespace ridge::tokenizer_detail
