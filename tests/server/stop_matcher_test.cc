// Stop strings over streamed text: held back only while they could still
// match, cut exactly before the earliest match, however the text is split.
#include "ridge/server/stop_matcher.h"

#include <gtest/gtest.h>

#include <random>

namespace ridge::server {
namespace {

// Feeds pieces; returns the emitted text and whether it stopped.
std::pair<std::string, bool> Feed(const std::vector<std::string>& stops, const std::vector<std::string>& pieces) {
  StopMatcher m(stops);
  std::string out;
  for (const auto& p : pieces) {
    out += m.Push(p);
    if (m.stopped()) return {out, true};
  }
  out += m.Flush();
  return {out, m.stopped()};
}

TEST(StopMatcher, NoStopsPassesEverythingThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.Push("abc"), "abc");
  EXPECT_EQ(m.Flush(), "");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, HoldsBackOnlyAPossiblePrefix) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.Push("hello E"), "hello ");  // "E" might start END
  EXPECT_EQ(m.Push("N"), "");
  EXPECT_EQ(m.Push("x"), "ENx");  // it did not
  EXPECT_EQ(m.Push("abc"), "abc");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcher, MatchAcrossPiecesCutsBeforeIt) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.Push("story E"), "story ");
  EXPECT_EQ(m.Push("ND and more"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "END");
  EXPECT_EQ(m.Push("later"), "");
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopMatcher, EarliestOfSeveralWins) {
  EXPECT_EQ(Feed({"cd", "b"}, {"abcd"}), std::make_pair(std::string("a"), true));
  EXPECT_EQ(Feed({"\n\n", "."}, {"One. Two\n\n"}), std::make_pair(std::string("One"), true));
}

TEST(StopMatcher, FlushReleasesAnUnfinishedPrefix) {
  EXPECT_EQ(Feed({"END"}, {"the EN"}), std::make_pair(std::string("the EN"), false));
}

TEST(StopMatcher, AnEarlierOccurrenceStillCompletingWins) {
  // "." is complete first, but "b.\n" started earlier and completes: it decides.
  EXPECT_EQ(Feed({".", "b.\n"}, {"a", "b", ".", "\n"}), std::make_pair(std::string("a"), true));
  // It does not complete: the later "." cuts.
  EXPECT_EQ(Feed({".", "b.\n"}, {"a", "b", ".", "x"}), std::make_pair(std::string("ab"), true));
  // The text ends while it is unresolved: the complete "." still cuts.
  EXPECT_EQ(Feed({".", "b.\n"}, {"a", "b", "."}), std::make_pair(std::string("ab"), true));
}

TEST(StopMatcher, OverlappingPrefixes) {
  // "aab" inside "aaab": the held tail must restart correctly.
  EXPECT_EQ(Feed({"aab"}, {"a", "a", "a", "b", "c"}), std::make_pair(std::string("a"), true));
  EXPECT_EQ(Feed({"abab"}, {"ab", "ab", "x"}), std::make_pair(std::string(""), true));
}

TEST(StopMatcher, MultiByteCharactersAreNeverSplit) {
  // "é" is two bytes; a stop string starting with it holds back whole characters only.
  auto [out, stopped] = Feed({"\xc3\xa9t\xc3\xa9"}, {"caf\xc3\xa9", " \xc3\xa9t\xc3\xa9"});
  EXPECT_TRUE(stopped);
  EXPECT_EQ(out, "caf\xc3\xa9 ");
}

// However a text is cut into pieces, the output equals the whole text cut
// before the earliest occurrence of any stop string.
TEST(StopMatcher, AnySplitGivesTheSameResult) {
  std::mt19937 rng(7);
  const std::string alphabet = "ab\n.";
  for (int iter = 0; iter < 3000; ++iter) {
    std::string text;
    const int len = static_cast<int>(rng() % 30);
    for (int i = 0; i < len; ++i) text += alphabet[rng() % alphabet.size()];
    std::vector<std::string> stops;
    const int n_stops = 1 + static_cast<int>(rng() % 3);
    for (int s = 0; s < n_stops; ++s) {
      std::string stop;
      const int stop_len = 1 + static_cast<int>(rng() % 4);
      for (int i = 0; i < stop_len; ++i) stop += alphabet[rng() % alphabet.size()];
      stops.push_back(stop);
    }
    size_t first = std::string::npos;
    for (const auto& s : stops) first = std::min(first, text.find(s));
    const std::string expected = first == std::string::npos ? text : text.substr(0, first);
    std::vector<std::string> pieces;
    for (size_t at = 0; at < text.size();) {
      size_t n = std::min(text.size() - at, static_cast<size_t>(rng() % 4));
      pieces.push_back(text.substr(at, n));
      at += n;
    }
    auto [out, stopped] = Feed(stops, pieces);
    std::string described;
    for (const auto& s : stops) described += "'" + s + "' ";
    for (const auto& p : pieces) described += "|" + p;
    ASSERT_EQ(out, expected) << "text '" << text << "' stops " << described;
    ASSERT_EQ(stopped, first != std::string::npos);
  }
}

}  // namespace
}  // namespace ridge::server
