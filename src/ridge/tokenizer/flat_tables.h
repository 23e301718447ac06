#pragma once
// Internal: open-addressing hash tables for the tokenizer's hot look-ups
// (token text → id, BPE id pair → merge). A node-based std::unordered_map
// spends most of a 128k-token / 280k-merge vocabulary load in cache misses and
// allocations; these are flat arrays probed linearly.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ridge::tokenizer_detail {

// Token text → id over a vector of texts that must outlive the index and not move.
class TokenIndex {
 public:
  // Indexes tokens[id] for every id with keep[id]; on equal texts the later id
  // wins (as llama.cpp's token_to_id map).
  void Build(const std::vector<std::string>* tokens, const std::vector<bool>& keep);
  int32_t Find(std::string_view text) const;  // -1 if absent
  size_t size() const { return size_; }

 private:
  const std::vector<std::string>* tokens_ = nullptr;
  std::vector<uint64_t> slots_;  // high 32 bits: hash tag; low 32 bits: id + 1; 0 = empty
  uint64_t mask_ = 0;
  size_t size_ = 0;
};

struct BpeMerge {
  int32_t rank;       // lower merges first
  int32_t merged_id;  // the token the pair becomes
};

// (left id, right id) → merge. Ids are non-negative int32.
class MergeTable {
 public:
  void Reserve(size_t n);
  // Inserts unless the pair is present (the first, lowest rank wins).
  void Insert(int32_t left, int32_t right, BpeMerge merge);
  const BpeMerge* Find(int32_t left, int32_t right) const;
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key = kEmpty;
    BpeMerge merge{};
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  void Grow();
  std::vector<Slot> slots_;
  uint64_t mask_ = 0;
  size_t size_ = 0;
};

}  // namespace ridge::tokenizer_detail
