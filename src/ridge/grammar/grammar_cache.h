#pragma once
// Compiled grammars by their source text (GBNF, or whatever a converter keys
// them by: a JSON schema's text), least recently used first out. Requests
// that repeat a grammar then share one Grammar object, and through it the
// engine's token-mask cache for it (Engine keys its maskers by grammar).
// Thread-safe.
#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "ridge/grammar/grammar.h"

namespace ridge::grammar {

class GrammarCache {
 public:
  explicit GrammarCache(size_t capacity) : capacity_(capacity) {}

  // The grammar cached under `key`, or compile() (outside the lock, so a slow
  // compilation holds no one up; what it throws reaches the caller, and
  // nothing is cached).
  std::shared_ptr<const Grammar> GetOrCompile(const std::string& key,
                                              const std::function<std::shared_ptr<const Grammar>()>& compile);
  size_t size() const;

 private:
  using Lru = std::list<std::pair<std::string, std::shared_ptr<const Grammar>>>;
  const size_t capacity_;
  mutable std::mutex mutex_;
  Lru lru_;  // most recently used first
  std::unordered_map<std::string, Lru::iterator> index_;
};

// ParseGbnf through a process-wide cache of the 64 most recent grammars.
std::shared_ptr<const Grammar> ParseGbnfCached(std::string_view text);

}  // namespace ridge::grammar
