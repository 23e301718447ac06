#include "ridge/server/stop_matcher.h"

#include <algorithm>
#include <utility>

namespace ridge::server {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (auto& s : stops)
    if (!s.empty()) stops_.push_back(std::move(s));
}

size_t StopMatcher::EarliestMatch() {
  size_t best = std::string::npos;
  for (const std::string& s : stops_) {
    const size_t at = held_.find(s);
    if (at < best) {
      best = at;
      matched_ = s;
    }
  }
  return best;
}

std::string StopMatcher::CutAt(size_t at) {
  stopped_ = true;
  std::string out = held_.substr(0, at);
  held_.clear();
  return out;
}

std::string StopMatcher::Push(std::string_view text) {
  if (stopped_) return {};
  held_.append(text);
  if (stops_.empty()) return std::exchange(held_, {});
  const size_t match = EarliestMatch();
  // The longest tail of held_ that is a proper prefix of some stop string
  // starts where an occurrence could still complete: nothing from there on
  // may be shown yet. Everything before it can never be part of a match
  // (a match starting there would already be complete, or be such a tail).
  size_t tail = held_.size();
  for (const std::string& s : stops_) {
    const size_t max_len = std::min(held_.size(), s.size() - 1);
    for (size_t len = max_len; len > held_.size() - tail; --len) {
      if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
        tail = held_.size() - len;
        break;
      }
    }
  }
  // A complete match wins unless an occurrence that may still complete
  // starts before it (the earliest occurrence in the text decides).
  if (match != std::string::npos && match <= tail) return CutAt(match);
  std::string out = held_.substr(0, tail);
  held_.erase(0, tail);
  return out;
}

std::string StopMatcher::Flush() {
  if (stopped_) return {};
  // No more text: unfinished prefixes can no longer complete.
  const size_t match = EarliestMatch();
  if (match != std::string::npos) return CutAt(match);
  return std::exchange(held_, {});
}

}  // namespace ridge::server
