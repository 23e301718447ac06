#include "ridge/tokenizer/flat_tables.h"

#include <bit>
#include <functional>

#include "ridge/base/error.h"

namespace ridge::tokenizer_detail {
namespace {

uint64_t HashText(std::string_view text) { return std::hash<std::string_view>{}(text); }

// splitmix64's finalizer: spreads the id pair over all bits.
uint64_t HashKey(uint64_t key) {
  key ^= key >> 30;
  key *= 0xBF58476D1CE4E5B9ull;
  key ^= key >> 27;
  key *= 0x94D049BB133111EBull;
  key ^= key >> 31;
  return key;
}

// A power of two with room for n at a load factor of at most 2/3.
size_t CapacityFor(size_t n) { return std::bit_ceil(std::max<size_t>(16, n + n / 2 + 1)); }

}  // namespace

void TokenIndex::Build(const std::vector<std::string>* tokens, const std::vector<bool>& keep) {
  RIDGE_CHECK(tokens->size() == keep.size() && tokens->size() < 0xFFFFFFFFu);
  tokens_ = tokens;
  slots_.assign(CapacityFor(tokens->size()), 0);
  mask_ = slots_.size() - 1;
  size_ = 0;
  for (size_t id = 0; id < tokens->size(); ++id) {
    if (!keep[id]) continue;
    const std::string& text = (*tokens)[id];
    const uint64_t hash = HashText(text);
    const uint64_t tag = hash >> 32;
    for (uint64_t i = hash & mask_;; i = (i + 1) & mask_) {
      uint64_t& slot = slots_[i];
      if (slot == 0) {
        slot = (tag << 32) | (id + 1);
        ++size_;
        break;
      }
      if ((slot >> 32) == tag && (*tokens)[(slot & 0xFFFFFFFFu) - 1] == text) {
        slot = (tag << 32) | (id + 1);  // duplicate text: the later id wins
        break;
      }
    }
  }
}

int32_t TokenIndex::Find(std::string_view text) const {
  if (slots_.empty()) return -1;
  const uint64_t hash = HashText(text);
  const uint64_t tag = hash >> 32;
  for (uint64_t i = hash & mask_;; i = (i + 1) & mask_) {
    const uint64_t slot = slots_[i];
    if (slot == 0) return -1;
    if ((slot >> 32) == tag) {
      const auto id = static_cast<int32_t>((slot & 0xFFFFFFFFu) - 1);
      if ((*tokens_)[id] == text) return id;
    }
  }
}

void MergeTable::Reserve(size_t n) {
  if (CapacityFor(n) <= slots_.size()) return;
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(CapacityFor(n), Slot{});
  mask_ = slots_.size() - 1;
  size_ = 0;
  for (const Slot& s : old) {
    if (s.key != kEmpty) Insert(static_cast<int32_t>(s.key >> 32), static_cast<int32_t>(s.key & 0xFFFFFFFFu), s.merge);
  }
}

void MergeTable::Grow() { Reserve(std::max<size_t>(16, slots_.size() * 2 / 3 + 1) * 2); }

void MergeTable::Insert(int32_t left, int32_t right, BpeMerge merge) {
  RIDGE_CHECK(left >= 0 && right >= 0);
  if (4 * (size_ + 1) > 3 * slots_.size()) Grow();  // keep the load factor under 3/4
  const uint64_t key = (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right);
  for (uint64_t i = HashKey(key) & mask_;; i = (i + 1) & mask_) {
    Slot& slot = slots_[i];
    if (slot.key == key) return;
    if (slot.key == kEmpty) {
      slot.key = key;
      slot.merge = merge;
      ++size_;
      return;
    }
  }
}

const BpeMerge* MergeTable::Find(int32_t left, int32_t right) const {
  if (slots_.empty() || left < 0 || right < 0) return nullptr;
  const uint64_t key = (static_cast<uint64_t>(left) << 32) | static_cast<uint32_t>(right);
  for (uint64_t i = HashKey(key) & mask_;; i = (i + 1) & mask_) {
    const Slot& slot = slots_[i];
    if (slot.key == key) return &slot.merge;
    if (slot.key == kEmpty) return nullptr;
  }
}

}  // namespace ridge::tokenizer_detail
