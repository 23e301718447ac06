#include "ridge/grammar/grammar_cache.h"

#include "ridge/grammar/gbnf.h"

namespace ridge::grammar {

std::shared_ptr<const Grammar> GrammarCache::GetOrCompile(
    const std::string& key, const std::function<std::shared_ptr<const Grammar>()>& compile) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
  }
  std::shared_ptr<const Grammar> grammar = compile();
  std::lock_guard<std::mutex> lock(mutex_);
  if (auto it = index_.find(key); it != index_.end()) return it->second->second;  // compiled meanwhile by another
  lru_.emplace_front(key, grammar);
  index_[key] = lru_.begin();
  while (lru_.size() > capacity_) {
    index_.erase(lru_.back().first);
    lru_.pop_back();
  }
  return grammar;
}

size_t GrammarCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return lru_.size();
}

std::shared_ptr<const Grammar> ParseGbnfCached(std::string_view text) {
  static GrammarCache cache(64);
  return cache.GetOrCompile(std::string(text), [&] { return ParseGbnf(text); });
}

}  // namespace ridge::grammar
