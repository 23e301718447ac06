// SentencePiece-style BPE, as llama.cpp's llm_tokenizer_spm and SentencePiece's
// bpe_model.cc: start from UTF-8 characters, repeatedly merge the adjacent pair
// whose concatenation is a token with the highest score (leftmost on ties),
// then emit each symbol's token, falling back to byte tokens <0xNN>.
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/tokenizer/tokenizer_state.h"
#include "ridge/tokenizer/utf8.h"

namespace ridge::tokenizer_detail {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // ▁ U+2581

struct Symbol {
  int prev;
  int next;
  size_t offset;  // into the text
  size_t n_bytes;  // 0 once merged into its left neighbour
};

struct Bigram {
  int left;
  int right;
  float score;
  size_t n_bytes;
};

struct LowerPriority {
  // priority_queue puts the "largest" on top: highest score, then leftmost.
  bool operator()(const Bigram& a, const Bigram& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

class SpmSession {
 public:
  SpmSession(const TokenizerState& state, std::string_view text) : state_(state), text_(text) {}

  void Encode(std::vector<int32_t>* out) {
    size_t offset = 0;
    while (offset < text_.size()) {
      // A well-formed character is one symbol; so is each ill-formed subpart
      // (it will fall back to byte tokens).
      const auto n = static_cast<size_t>(utf8::Classify(text_.substr(offset)).n_bytes);
      const int index = static_cast<int>(symbols_.size());
      symbols_.push_back({index - 1, offset + n == text_.size() ? -1 : index + 1, offset, n});
      offset += n;
    }
    for (int i = 1; i < static_cast<int>(symbols_.size()); ++i) TryAddBigram(i - 1, i);

    while (!queue_.empty()) {
      const Bigram bigram = queue_.top();
      queue_.pop();
      Symbol& left = symbols_[bigram.left];
      Symbol& right = symbols_[bigram.right];
      // Stale entry: one side was merged away or grew since it was queued.
      if (left.n_bytes == 0 || right.n_bytes == 0 || left.n_bytes + right.n_bytes != bigram.n_bytes) continue;
      left.n_bytes += right.n_bytes;
      right.n_bytes = 0;
      left.next = right.next;
      if (right.next >= 0) symbols_[right.next].prev = bigram.left;
      TryAddBigram(left.prev, bigram.left);
      TryAddBigram(bigram.left, left.next);
    }

    for (int i = symbols_.empty() ? -1 : 0; i != -1; i = symbols_[i].next) {
      Resegment(text_.substr(symbols_[i].offset, symbols_[i].n_bytes), out);
    }
  }

 private:
  void TryAddBigram(int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols_[left];
    const Symbol& r = symbols_[right];
    const std::string_view merged = text_.substr(l.offset, l.n_bytes + r.n_bytes);
    const int32_t id = state_.literal_ids.Find(merged);
    if (id < 0) return;
    queue_.push({left, right, state_.vocab.scores[id], merged.size()});
    // Unused tokens may be merged through but not emitted: remember the parts
    // (SentencePiece's rev_merge).
    if (state_.vocab.types[id] == TokenType::kUnused) {
      rev_merge_[std::string(merged)] = {std::string(text_.substr(l.offset, l.n_bytes)),
                                          std::string(text_.substr(r.offset, r.n_bytes))};
    }
  }

  void Resegment(std::string_view piece, std::vector<int32_t>* out) {
    const int32_t id = state_.literal_ids.Find(piece);
    if (id >= 0 && state_.vocab.types[id] != TokenType::kUnused) {
      out->push_back(id);
      return;
    }
    const auto parts = rev_merge_.empty() ? rev_merge_.end() : rev_merge_.find(std::string(piece));
    if (parts != rev_merge_.end()) {
      const auto [first, second] = parts->second;  // copies: the map may rehash while recursing
      Resegment(first, out);
      Resegment(second, out);
      return;
    }
    for (const char c : piece) {
      const int32_t byte_id = state_.byte_ids[static_cast<uint8_t>(c)];
      if (byte_id >= 0) {
        out->push_back(byte_id);
      } else if (state_.vocab.unk_id >= 0) {
        out->push_back(state_.vocab.unk_id);
      } else {
        Fail("cannot encode byte 0x{:02X}: the vocabulary has no byte token <0x{:02X}> and no unknown token",
             static_cast<uint8_t>(c), static_cast<uint8_t>(c));
      }
    }
  }

  const TokenizerState& state_;
  std::string_view text_;
  std::vector<Symbol> symbols_;
  std::priority_queue<Bigram, std::vector<Bigram>, LowerPriority> queue_;
  std::unordered_map<std::string, std::pair<std::string, std::string>> rev_merge_;
};

}  // namespace

void EncodeSpm(const TokenizerState& state, std::string_view text, std::vector<int32_t>* out) {
  if (!state.spm_words_are_independent) {
    SpmSession(state, text).Encode(out);
    return;
  }
  // No token joins a character to a following "▁", so no merge crosses the
  // start of a word: each word is encoded alone, with a small queue (one queue
  // over a long prompt spends its time in cache misses).
  size_t word_start = 0;
  for (size_t pos = text.find(kSpace, 1); pos != std::string_view::npos; pos = text.find(kSpace, pos + kSpace.size())) {
    if (pos >= word_start + kSpace.size() && text.substr(pos - kSpace.size(), kSpace.size()) == kSpace) continue;
    if (pos > word_start) SpmSession(state, text.substr(word_start, pos - word_start)).Encode(out);
    word_start = pos;
  }
  SpmSession(state, text.substr(word_start)).Encode(out);
}

bool SpmWordsAreIndependent(const TokenizerState& state) {
  for (int32_t id = 0; id < state.vocab.n_vocab(); ++id) {
    if (state.literal_ids.Find(state.vocab.tokens[id]) != id) continue;  // not reachable from text
    const std::string_view text = state.vocab.tokens[id];
    for (size_t pos = text.find(kSpace, 1); pos != std::string_view::npos; pos = text.find(kSpace, pos + 1)) {
      if (pos < kSpace.size() || text.substr(pos - kSpace.size(), kSpace.size()) != kSpace) return false;
    }
  }
  return true;
}

}  // namespace ridge::tokenizer_detail
