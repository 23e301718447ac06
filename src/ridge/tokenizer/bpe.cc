// BPE by merge rank, as llama.cpp's llm_tokenizer_bpe and HF tokenizers: split
// the text with the pre-tokenizer, start each word from its symbols (byte-level:
// each byte as a printable code point; Gemma 4: each UTF-8 character), then
// repeatedly apply the lowest-ranked merge among adjacent pairs (leftmost on
// ties). Symbols carry token ids, so a merge is one hash look-up of the id pair.
// A symbol that is no token becomes byte tokens (Gemma 4's <0xNN> fallback).
#include <queue>
#include <string>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/tokenizer/tokenizer_state.h"
#include "ridge/tokenizer/utf8.h"

namespace ridge::tokenizer_detail {
namespace {

struct ByteTables {
  std::array<std::string, 256> byte_to_unicode;
  std::array<int16_t, 512> unicode_to_byte;  // every mapped code point is < 256 + 68
};

const ByteTables& Tables() {
  static const ByteTables tables = [] {
    ByteTables t;
    t.unicode_to_byte.fill(-1);
    uint32_t next_unprintable = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const uint32_t cp = printable ? static_cast<uint32_t>(b) : next_unprintable++;
      utf8::AppendCodepoint(cp, &t.byte_to_unicode[b]);
      t.unicode_to_byte[cp] = static_cast<int16_t>(b);
    }
    return t;
  }();
  return tables;
}

struct Symbol {
  int prev;
  int next;
  uint32_t offset;   // into the word
  uint32_t n_bytes;  // of the word, before any merge
  int32_t id;        // -1: text the vocabulary lacks (never merges)
  bool alive;
};

struct Candidate {
  int32_t rank;
  int left;
  int right;
  int32_t left_id;
  int32_t right_id;
  int32_t merged_id;
};

struct LowerPriority {
  // priority_queue puts the "largest" on top: lowest rank, then leftmost.
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

void EmitByte(const TokenizerState& state, uint8_t byte, std::vector<int32_t>* out) {
  const int32_t id = state.byte_ids[byte];
  if (id >= 0) {
    out->push_back(id);
  } else if (state.vocab.unk_id >= 0) {
    out->push_back(state.vocab.unk_id);
  } else {
    Fail("cannot encode byte 0x{:02X}: the vocabulary has no token for it and no unknown token", byte);
  }
}

// A word that is a whole token is that token, without merges: tiktoken-style
// vocabularies (ignore_merges), and Gemma 4's runs of line breaks.
int32_t WholeWordId(const TokenizerState& state, std::string_view word, std::string* scratch) {
  if (state.byte_level) {
    if (!state.ignore_merges) return -1;
    const std::array<std::string, 256>& mapped = ByteToUnicode();
    scratch->clear();
    for (const char c : word) scratch->append(mapped[static_cast<uint8_t>(c)]);
    return state.literal_ids.Find(*scratch);
  }
  if (word.find_first_not_of('\n') != std::string_view::npos) return -1;
  return state.literal_ids.Find(word);
}

class BpeSession {
 public:
  explicit BpeSession(const TokenizerState& state) : state_(state) {}

  void EncodeWord(std::string_view word, std::vector<int32_t>* out) {
    if (const int32_t id = WholeWordId(state_, word, &scratch_); id >= 0) {
      out->push_back(id);
      return;
    }
    InitSymbols(word);
    const int n = static_cast<int>(symbols_.size());
    for (int i = 1; i < n; ++i) TryAdd(i - 1, i);
    while (!queue_.empty()) {
      const Candidate c = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[c.left];
      Symbol& right = symbols_[c.right];
      // Stale entry: a side was merged away or became another token. Two alive
      // symbols with their queued ids are still adjacent (a symbol's next only
      // changes when it absorbs that neighbour, which changes its id).
      if (!left.alive || !right.alive || left.id != c.left_id || right.id != c.right_id) continue;
      left.id = c.merged_id;
      right.alive = false;
      left.next = right.next;
      if (right.next >= 0) symbols_[right.next].prev = c.left;
      TryAdd(left.prev, c.left);
      TryAdd(c.left, left.next);
    }
    for (int i = n == 0 ? -1 : 0; i != -1; i = symbols_[i].next) {
      const Symbol& symbol = symbols_[i];
      if (symbol.id >= 0) {
        out->push_back(symbol.id);
      } else {  // only unmerged symbols lack an id: one byte, or one character to spell in byte tokens
        for (const char c : word.substr(symbol.offset, symbol.n_bytes)) EmitByte(state_, static_cast<uint8_t>(c), out);
      }
    }
  }

 private:
  // Byte-level BPE starts from the word's bytes (each a mapped code point);
  // Gemma 4 from its characters.
  void InitSymbols(std::string_view word) {
    symbols_.clear();
    uint32_t offset = 0;
    const auto size = static_cast<uint32_t>(word.size());
    while (offset < size) {
      uint32_t n_bytes = 1;
      int32_t id = -1;
      if (state_.byte_level) {
        id = state_.byte_ids[static_cast<uint8_t>(word[offset])];
      } else {
        n_bytes = static_cast<uint32_t>(utf8::Classify(word.substr(offset)).n_bytes);
        id = state_.literal_ids.Find(word.substr(offset, n_bytes));
      }
      const int index = static_cast<int>(symbols_.size());
      symbols_.push_back({index - 1, offset + n_bytes == size ? -1 : index + 1, offset, n_bytes, id, true});
      offset += n_bytes;
    }
  }

  void TryAdd(int left, int right) {
    if (left < 0 || right < 0) return;
    const int32_t left_id = symbols_[left].id;
    const int32_t right_id = symbols_[right].id;
    if (left_id < 0 || right_id < 0) return;
    const BpeMerge* merge = state_.merges.Find(left_id, right_id);
    if (merge == nullptr) return;
    queue_.push({merge->rank, left, right, left_id, right_id, merge->merged_id});
  }

  const TokenizerState& state_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Candidate, std::vector<Candidate>, LowerPriority> queue_;
  std::string scratch_;
};

}  // namespace

const std::array<std::string, 256>& ByteToUnicode() { return Tables().byte_to_unicode; }

int UnicodeToByte(uint32_t codepoint) {
  const ByteTables& tables = Tables();
  return codepoint < tables.unicode_to_byte.size() ? tables.unicode_to_byte[codepoint] : -1;
}

void EncodeBpe(const TokenizerState& state, std::string_view text, std::vector<int32_t>* out) {
  std::vector<std::string_view> words;
  state.pretokenizer->Split(text, &words);
  BpeSession session(state);
  for (const std::string_view word : words) session.EncodeWord(word, out);
}

void BuildBpeMerges(TokenizerState* state) {
  const std::vector<std::string>& lines = state->vocab.merges;
  state->merges.Reserve(lines.size());
  std::string merged;
  for (size_t rank = 0; rank < lines.size(); ++rank) {
    const std::string& line = lines[rank];
    // The separator is the first space after the first character (llama.cpp):
    // a part may itself be a space in vocabularies that keep raw spaces.
    const size_t space = line.size() > 1 ? line.find(' ', 1) : std::string::npos;
    if (space == std::string::npos || space + 1 >= line.size()) {
      Fail("tokenizer.ggml.merges[{}] = '{}' is not two token texts separated by a space", rank, line);
    }
    const std::string_view first = std::string_view(line).substr(0, space);
    const std::string_view second = std::string_view(line).substr(space + 1);
    merged.assign(first);
    merged.append(second);
    const int32_t a = state->all_ids.Find(first);
    const int32_t b = state->all_ids.Find(second);
    const int32_t m = a < 0 || b < 0 ? -1 : state->all_ids.Find(merged);
    if (m < 0) {
      // A merge naming a text that is no token can never produce a token; HF
      // refuses such files, llama.cpp ignores the merge's effect. Skip it.
      ++state->n_merges_skipped;
      continue;
    }
    // Duplicate pairs: the first (lowest) rank wins.
    state->merges.Insert(a, b, BpeMerge{static_cast<int32_t>(rank), m});
  }
}

}  // namespace ridge::tokenizer_detail
