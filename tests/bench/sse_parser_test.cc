#include "ridge/bench/sse_parser.h"

#include <gtest/gtest.h>

namespace ridge::bench {
namespace {

std::vector<SseEvent> FeedAll(const std::string& stream, const std::vector<size_t>& cuts) {
  SseParser parser;
  std::vector<SseEvent> events;
  size_t from = 0;
  for (const size_t cut : cuts) {
    for (auto& e : parser.Feed(std::string_view(stream).substr(from, cut - from))) events.push_back(e);
    from = cut;
  }
  for (auto& e : parser.Feed(std::string_view(stream).substr(from))) events.push_back(e);
  for (auto& e : parser.Finish()) events.push_back(e);
  return events;
}

const std::string kStream =
    "data: {\"choices\":[{\"text\":\"Once\"}]}\n\n"
    ": keep-alive comment\n\n"
    "data: {\"choices\":[{\"text\":\" upon\"}]}\r\n\r\n"
    "event: error\ndata: {\"error\":\"x\"}\r\r"
    "data: first line\ndata:second line\nid: 7\nretry: 100\n\n"
    "data: [DONE]\n\n";

const std::vector<SseEvent> kExpected = {
    {"", "{\"choices\":[{\"text\":\"Once\"}]}"},
    {"", "{\"choices\":[{\"text\":\" upon\"}]}"},
    {"error", "{\"error\":\"x\"}"},
    {"", "first line\nsecond line"},
    {"", "[DONE]"},
};

TEST(SseParserTest, WholeStream) { EXPECT_EQ(FeedAll(kStream, {}), kExpected); }

TEST(SseParserTest, SplitAtEveryPossiblePlace) {
  for (size_t cut = 0; cut <= kStream.size(); ++cut) EXPECT_EQ(FeedAll(kStream, {cut}), kExpected) << "cut at " << cut;
}

TEST(SseParserTest, OneByteAtATime) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < kStream.size(); ++i) cuts.push_back(i);
  EXPECT_EQ(FeedAll(kStream, cuts), kExpected);
}

TEST(SseParserTest, EventsComeOutAsSoonAsTheBlankLineArrives) {
  SseParser parser;
  EXPECT_TRUE(parser.Feed("data: a").empty());
  EXPECT_TRUE(parser.Feed("bc\n").empty());
  const auto events = parser.Feed("\ndata: [DO");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "abc");
  EXPECT_TRUE(parser.Feed("NE]\n").empty());
  const auto last = parser.Feed("\n");
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0].data, "[DONE]");
}

TEST(SseParserTest, CrLfSplitBetweenCrAndLfIsOneLineEnd) {
  SseParser parser;
  EXPECT_TRUE(parser.Feed("data: x\r").empty());
  EXPECT_TRUE(parser.Feed("\n").empty());  // the \n belongs to the \r: no blank line yet
  const auto events = parser.Feed("\r\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "x");
}

TEST(SseParserTest, FinishHandsOutAnUnterminatedEvent) {
  SseParser parser;
  EXPECT_TRUE(parser.Feed("data: [DONE]").empty());
  const auto events = parser.Finish();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "[DONE]");
  EXPECT_TRUE(parser.Finish().empty());
}

TEST(SseParserTest, ByteOrderMarkIsSkippedEvenWhenSplit) {
  const std::string stream = "\xEF\xBB\xBF" "data: hi\n\n";
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    const auto events = FeedAll(stream, {cut});
    ASSERT_EQ(events.size(), 1u) << cut;
    EXPECT_EQ(events[0].data, "hi");
  }
}

TEST(SseParserTest, FieldsWithoutDataDispatchNothing) {
  SseParser parser;
  EXPECT_TRUE(parser.Feed("event: ping\n\n: comment\n\nid: 3\n\n\n\n").empty());
  const auto events = parser.Feed("data\n\ndata:\n\n");
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].data, "");
  EXPECT_EQ(events[1].data, "");
}

TEST(SseParserTest, OnlyOneLeadingSpaceIsDropped) {
  SseParser parser;
  const auto events = parser.Feed("data:  two spaces\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, " two spaces");
}

TEST(SseParserTest, MultiByteCharactersSurviveAnySplit) {
  const std::string stream = "data: {\"text\":\"h\xC3\xA9llo \xE2\x9C\x93\"}\n\n";
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    const auto events = FeedAll(stream, {cut});
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].data, "{\"text\":\"h\xC3\xA9llo \xE2\x9C\x93\"}");
  }
}

}  // namespace
}  // namespace ridge::bench
