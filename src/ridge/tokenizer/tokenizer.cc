#include "ridge/tokenizer/tokenizer.h"

#include <algorithm>

#include "ridge/base/error.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/tokenizer/pretokenizer_families.h"
#include "ridge/tokenizer/tokenizer_state.h"
#include "ridge/tokenizer/utf8.h"

namespace ridge {

using tokenizer_detail::TokenizerState;

namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";    // ▁ U+2581
constexpr std::string_view kSpmUnknown = "\xE2\x96\x85";  // ▅ U+2585, what llama.cpp prints for <unk>

// "<0xNN>" → NN, or -1.
int ParseByteToken(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (const char c : text.substr(3, 2)) {
    value <<= 4;
    if (c >= '0' && c <= '9') value |= c - '0';
    else if (c >= 'A' && c <= 'F') value |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') value |= c - 'a' + 10;
    else return -1;
  }
  return value;
}

bool IsTextType(TokenType type) { return type == TokenType::kNormal || type == TokenType::kUndefined; }

std::string ReplaceAll(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(from, pos);
    if (hit == std::string_view::npos) break;
    out.append(text.substr(pos, hit - pos));
    out.append(to);
    pos = hit + from.size();
  }
  out.append(text.substr(pos));
  return out;
}

// The bytes a token decodes to, without the leading-space rule.
std::string DecodedBytes(const Vocab& vocab, int32_t id) {
  const std::string& text = vocab.tokens[id];
  const TokenType type = vocab.types[id];
  switch (type) {
    case TokenType::kControl:
    case TokenType::kUnused:
      return "";
    case TokenType::kUserDefined:
      return text;  // added tokens are literal text
    case TokenType::kByte: {
      const int byte = ParseByteToken(text);
      return byte >= 0 ? std::string(1, static_cast<char>(byte)) : text;
    }
    case TokenType::kUnknown:
      return vocab.model == TokenizerModel::kSentencePiece ? std::string(kSpmUnknown) : "";
    case TokenType::kNormal:
    case TokenType::kUndefined:
      break;
  }
  if (vocab.model != TokenizerModel::kByteLevelBpe) return ReplaceAll(text, kSpmSpace, " ");
  // Byte-level BPE: each code point stands for one byte; anything else is kept.
  std::string out;
  size_t i = 0;
  while (i < text.size()) {
    const utf8::SeqInfo info = utf8::Classify(std::string_view(text).substr(i));
    const auto n = static_cast<size_t>(info.n_bytes);
    if (info.kind == utf8::SeqKind::kValid) {
      uint32_t cp = 0;
      const auto b0 = static_cast<uint8_t>(text[i]);
      if (n == 1) cp = b0;
      else if (n == 2) cp = ((b0 & 0x1Fu) << 6) | (static_cast<uint8_t>(text[i + 1]) & 0x3Fu);
      const int byte = n <= 2 ? tokenizer_detail::UnicodeToByte(cp) : -1;
      if (byte >= 0) {
        out.push_back(static_cast<char>(byte));
        i += n;
        continue;
      }
    }
    out.append(text, i, n);
    i += n;
  }
  return out;
}

bool IsEndOfTurnText(std::string_view text) {
  static constexpr std::string_view kTexts[] = {"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>",
                                                "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>"};
  return std::find(std::begin(kTexts), std::end(kTexts), text) != std::end(kTexts);
}

// User-defined tokens are split out of any text (Hugging Face's added tokens:
// GPT-NeoX's runs of spaces, say), except those written like markup
// ("</s>", "<|tool_call>", "[PAD7]"): those are special tokens in all but
// type, and literal text unless special tokens are parsed.
bool LooksLikeMarkup(std::string_view text) {
  if (text.size() < 3) return false;
  return (text.front() == '<' && text.back() == '>') || (text.front() == '[' && text.back() == ']');
}

// Gemma 4 splits words at line breaks only; BPE runs over whole lines.
constexpr std::string_view kGemma4Lines = R"([^\n]+|[\n]+)";

struct Fragment {
  std::string_view text;  // when id < 0
  int32_t id;             // a token split out of the text, or -1
};

}  // namespace

Tokenizer::Tokenizer(std::shared_ptr<const TokenizerState> state) : state_(std::move(state)) {}

Tokenizer Tokenizer::FromGguf(const GgufFile& file) {
  try {
    return FromVocab(VocabFromGguf(file));
  } catch (const Error& e) {
    const std::string message = e.what();
    if (message.starts_with(file.path())) throw;
    Fail("{}: {}", file.path(), message);
  }
}

Tokenizer Tokenizer::FromVocab(Vocab vocab) {
  if (vocab.scores.empty()) vocab.scores.assign(vocab.tokens.size(), 0.0f);
  if (vocab.types.empty()) vocab.types.assign(vocab.tokens.size(), TokenType::kNormal);
  ValidateVocab(vocab);
  auto state = std::make_shared<TokenizerState>();
  state->vocab = std::move(vocab);
  const Vocab& v = state->vocab;
  const int32_t n_vocab = v.n_vocab();
  const bool spm = v.model == TokenizerModel::kSentencePiece;

  std::vector<bool> keep(static_cast<size_t>(n_vocab), true);
  state->all_ids.Build(&v.tokens, keep);
  for (int32_t id = 0; id < n_vocab; ++id) {
    const TokenType type = v.types[id];
    keep[id] = IsTextType(type) || type == TokenType::kUserDefined || type == TokenType::kUnused;
  }
  state->literal_ids.Build(&v.tokens, keep);

  state->byte_ids.fill(-1);
  if (v.model == TokenizerModel::kSentencePiece || v.model == TokenizerModel::kSentencePieceBpe) {
    for (int32_t id = 0; id < n_vocab; ++id) {
      if (v.types[id] != TokenType::kByte) continue;
      const int byte = ParseByteToken(v.tokens[id]);
      if (byte < 0) Fail("vocabulary: byte token {} has text '{}', expected <0xNN>", id, v.tokens[id]);
      state->byte_ids[byte] = id;
    }
  }
  if (spm) {
    state->spm_words_are_independent = tokenizer_detail::SpmWordsAreIndependent(*state);
    for (int b = 0; b < 0x80; ++b) {  // llama.cpp's fallback: the byte as a one-character token
      if (state->byte_ids[b] >= 0) continue;
      state->byte_ids[b] = state->literal_ids.Find(std::string(1, static_cast<char>(b)));
    }
  }
  if (v.model == TokenizerModel::kByteLevelBpe) {
    const auto& mapped = tokenizer_detail::ByteToUnicode();
    for (int b = 0; b < 256; ++b) {
      state->byte_ids[b] = state->literal_ids.Find(mapped[b]);
    }
    state->pretokenizer = tokenizer_detail::Pretokenizer::Create(v.pre);
    state->ignore_merges = tokenizer_detail::FindPretokenizerFamily(v.pre)->ignore_merges;
    state->byte_level = true;
    tokenizer_detail::BuildBpeMerges(state.get());
  } else if (v.model == TokenizerModel::kSentencePieceBpe) {
    state->pretokenizer = tokenizer_detail::Pretokenizer::FromPatterns("gemma4", {kGemma4Lines});
    tokenizer_detail::BuildBpeMerges(state.get());
  }
  for (const std::string& token : v.tokens) state->max_token_bytes = std::max(state->max_token_bytes, token.size());

  for (int32_t id = 0; id < n_vocab; ++id) {
    const TokenType type = v.types[id];
    if ((type == TokenType::kControl || type == TokenType::kUserDefined || type == TokenType::kUnknown) &&
        !v.tokens[id].empty()) {
      state->split_first.push_back(id);
    }
  }
  std::stable_sort(state->split_first.begin(), state->split_first.end(),
                   [&v](int32_t a, int32_t b) { return v.tokens[a].size() > v.tokens[b].size(); });
  for (const int32_t id : state->split_first) {
    state->split_always.push_back(v.types[id] == TokenType::kUserDefined && !LooksLikeMarkup(v.tokens[id]));
  }

  state->end_of_generation.assign(static_cast<size_t>(n_vocab), 0);
  for (const int32_t id : {v.eos_id, v.eot_id, v.eom_id}) {
    if (id >= 0) state->end_of_generation[id] = 1;
  }
  for (int32_t id = 0; id < n_vocab; ++id) {
    if (v.types[id] == TokenType::kControl && IsEndOfTurnText(v.tokens[id])) state->end_of_generation[id] = 1;
  }

  state->decoded.reserve(static_cast<size_t>(n_vocab));
  for (int32_t id = 0; id < n_vocab; ++id) state->decoded.push_back(DecodedBytes(v, id));
  return Tokenizer(std::move(state));
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool add_bos, bool parse_special, bool add_eos) const {
  const TokenizerState& s = *state_;
  const Vocab& v = s.vocab;
  std::vector<int32_t> out;
  if (add_bos) {
    if (v.bos_id < 0) Fail("cannot add BOS: the vocabulary has no BOS token (tokenizer.ggml.bos_token_id)");
    out.push_back(v.bos_id);
  }

  // Split out special tokens, longest text first (llama.cpp's tokenizer_st_partition).
  std::vector<Fragment> fragments;
  if (!text.empty()) fragments.push_back({text, -1});
  std::vector<Fragment> next;
  for (size_t k = 0; k < s.split_first.size(); ++k) {
    if (!parse_special && !s.split_always[k]) continue;
    const int32_t special = s.split_first[k];
    const std::string_view piece = v.tokens[special];
    next.clear();
    bool found = false;
    for (const Fragment& f : fragments) {
      if (f.id >= 0 || f.text.find(piece) == std::string_view::npos) {
        next.push_back(f);
        continue;
      }
      found = true;
      size_t pos = 0;
      for (size_t hit = f.text.find(piece); hit != std::string_view::npos; hit = f.text.find(piece, pos)) {
        if (hit > pos) next.push_back({f.text.substr(pos, hit - pos), -1});
        next.push_back({{}, special});
        pos = hit + piece.size();
      }
      if (pos < f.text.size()) next.push_back({f.text.substr(pos), -1});
    }
    if (found) fragments.swap(next);
  }

  bool after_special = true;  // SentencePiece: the dummy prefix goes at the start and after each special token
  std::string escaped;
  for (const Fragment& f : fragments) {
    if (f.id >= 0) {
      out.push_back(f.id);
      after_special = true;
      continue;
    }
    switch (v.model) {
      case TokenizerModel::kSentencePiece:
        escaped.clear();
        if (v.add_space_prefix && after_special) escaped.append(kSpmSpace);
        escaped.append(ReplaceAll(f.text, " ", kSpmSpace));
        tokenizer_detail::EncodeSpm(s, escaped, &out);
        break;
      case TokenizerModel::kByteLevelBpe:
        tokenizer_detail::EncodeBpe(s, f.text, &out);
        break;
      case TokenizerModel::kSentencePieceBpe:
        tokenizer_detail::EncodeBpe(s, ReplaceAll(f.text, " ", kSpmSpace), &out);
        break;
      case TokenizerModel::kWordPiece:
        tokenizer_detail::EncodeWordPiece(s, f.text, &out);
        break;
    }
    after_special = false;
  }

  if (add_eos) {
    if (v.eos_id < 0) Fail("cannot add EOS: the vocabulary has no EOS token (tokenizer.ggml.eos_token_id)");
    out.push_back(v.eos_id);
  }
  return out;
}

void Tokenizer::AppendDecoded(int32_t id, bool* strip_next_space, std::string* out) const {
  const TokenizerState& s = *state_;
  if (id < 0 || id >= s.vocab.n_vocab()) {
    Fail("token id {} is out of range (the vocabulary has {} tokens)", id, s.vocab.n_vocab());
  }
  if (id == s.vocab.bos_id) {
    *strip_next_space = add_space_prefix();
    return;
  }
  const std::string& bytes = s.decoded[id];
  if (bytes.empty()) return;  // control tokens leave the rule pending
  std::string_view piece = bytes;
  if (*strip_next_space && IsTextType(s.vocab.types[id]) && piece.front() == ' ') piece.remove_prefix(1);
  *strip_next_space = false;
  out->append(piece);
}

std::string Tokenizer::Decode(std::span<const int32_t> ids) const {
  std::string out;
  bool strip_next_space = add_space_prefix();
  for (const int32_t id : ids) AppendDecoded(id, &strip_next_space, &out);
  return out;
}

std::string Tokenizer::TokenPiece(int32_t id) const {
  if (id < 0 || id >= n_vocab()) Fail("token id {} is out of range (the vocabulary has {} tokens)", id, n_vocab());
  return state_->vocab.tokens[id];
}

std::string Tokenizer::TokenBytes(int32_t id) const {
  if (id < 0 || id >= n_vocab()) Fail("token id {} is out of range (the vocabulary has {} tokens)", id, n_vocab());
  return state_->decoded[id];
}

TokenType Tokenizer::token_type(int32_t id) const {
  if (id < 0 || id >= n_vocab()) Fail("token id {} is out of range (the vocabulary has {} tokens)", id, n_vocab());
  return state_->vocab.types[id];
}

int32_t Tokenizer::FindToken(std::string_view piece) const {
  return state_->all_ids.Find(piece);
}

int32_t Tokenizer::n_vocab() const { return state_->vocab.n_vocab(); }
int32_t Tokenizer::bos_id() const { return state_->vocab.bos_id; }
int32_t Tokenizer::eos_id() const { return state_->vocab.eos_id; }
int32_t Tokenizer::unk_id() const { return state_->vocab.unk_id; }
int32_t Tokenizer::pad_id() const { return state_->vocab.pad_id; }
bool Tokenizer::add_bos() const { return state_->vocab.add_bos; }
bool Tokenizer::add_eos() const { return state_->vocab.add_eos; }
bool Tokenizer::add_space_prefix() const {
  return state_->vocab.model == TokenizerModel::kSentencePiece && state_->vocab.add_space_prefix;
}
TokenizerModel Tokenizer::model() const { return state_->vocab.model; }
const std::string& Tokenizer::pre() const { return state_->vocab.pre; }
const Vocab& Tokenizer::vocab() const { return state_->vocab; }
int64_t Tokenizer::n_merges_skipped() const { return state_->n_merges_skipped; }

bool Tokenizer::IsEndOfGeneration(int32_t id) const {
  return id >= 0 && id < n_vocab() && state_->end_of_generation[id] != 0;
}

bool Tokenizer::IsControl(int32_t id) const {
  return id >= 0 && id < n_vocab() && state_->vocab.types[id] == TokenType::kControl;
}

}  // namespace ridge
