#pragma once
// Finds stop strings in text that arrives piece by piece (a streaming
// detokenizer's output) and holds back only what might still become one,
// so streamed text never shows part of a stop string and never waits longer
// than it must.
//
//   StopMatcher m({"\n\n", "END"});
//   emit(m.Push(piece)); ...            // until m.stopped()
//   if (!m.stopped()) emit(m.Flush());  // generation ended another way
#include <string>
#include <string_view>
#include <vector>

namespace ridge::server {

class StopMatcher {
 public:
  // Empty stop strings are ignored.
  explicit StopMatcher(std::vector<std::string> stops);

  // Appends `text`; returns the text that is now safe to emit. Once the
  // earliest occurrence of any stop string is known, returns the text before
  // it, sets stopped(), and ignores later input.
  std::string Push(std::string_view text);
  // Ends the text: returns the held-back tail, cut before a stop string
  // that it holds complete (then stopped() is set).
  std::string Flush();
  bool stopped() const { return stopped_; }
  // The stop string found, when stopped().
  const std::string& matched() const { return matched_; }

 private:
  size_t EarliestMatch();  // in held_, npos if none; sets matched_
  std::string CutAt(size_t at);

  std::vector<std::string> stops_;
  std::string held_;
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace ridge::server
