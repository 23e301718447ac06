#include "ridge/bench/dataset.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include "ridge/base/error.h"

namespace ridge::bench {
namespace {

// One id per distinct word; Decode joins with spaces.
class WordTokenizer : public PromptTokenizer {
 public:
  std::string Describe() const override { return "words"; }
  std::vector<int32_t> Encode(const std::string& text) override {
    std::istringstream in(text);
    std::vector<int32_t> ids;
    for (std::string w; in >> w;) {
      auto [it, inserted] = ids_.emplace(w, static_cast<int32_t>(words_.size()));
      if (inserted) words_.push_back(w);
      ids.push_back(it->second);
    }
    ++n_encode_calls;
    return ids;
  }
  std::string Decode(const std::vector<int32_t>& ids) override {
    std::string text;
    for (const int32_t id : ids) text += (text.empty() ? "" : " ") + words_.at(static_cast<size_t>(id));
    return text;
  }
  int n_encode_calls = 0;

 private:
  std::map<std::string, int32_t> ids_;
  std::vector<std::string> words_;
};

// Two tokens per word, and decoding then encoding a cut that ends inside a
// word gives one token more than the cut (the half word is re-split), as
// real subword tokenizers can.
class HalfWordTokenizer : public PromptTokenizer {
 public:
  std::string Describe() const override { return "half words"; }
  std::vector<int32_t> Encode(const std::string& text) override {
    std::istringstream in(text);
    std::vector<int32_t> ids;
    for (std::string w; in >> w;) {
      if (w == "#") {  // a lone half word costs 2 tokens
        ids.push_back(1);
        ids.push_back(1);
      } else {
        ids.push_back(0);
        ids.push_back(1);
      }
    }
    return ids;
  }
  std::string Decode(const std::vector<int32_t>& ids) override {
    std::string text;
    for (size_t i = 0; i + 1 < ids.size(); i += 2) text += "w ";
    if (ids.size() % 2 == 1) text += "#";
    return text;
  }
};

TEST(LengthRangeTest, IntegersInsideTheInterval) {
  EXPECT_EQ(LengthRangeFor(100, 0.1, 1, "x").min, 90);
  EXPECT_EQ(LengthRangeFor(100, 0.1, 1, "x").max, 110);  // 100 × 1.1 = 110.00000000000001
  EXPECT_EQ(LengthRangeFor(128, 0.0, 1, "x").min, 128);
  EXPECT_EQ(LengthRangeFor(128, 0.0, 1, "x").max, 128);
  EXPECT_EQ(LengthRangeFor(10, 0.25, 1, "x").min, 8);   // 7.5 → 8
  EXPECT_EQ(LengthRangeFor(10, 0.25, 1, "x").max, 12);  // 12.5 → 12
  EXPECT_EQ(LengthRangeFor(2, 0.9, 1, "x").min, 1);     // 0.2 raised to the minimum
  EXPECT_EQ(LengthRangeFor(2, 0.9, 1, "x").max, 3);
  EXPECT_THROW(LengthRangeFor(0, 0.0, 1, "--random-output-len"), Error);
  EXPECT_THROW(LengthRangeFor(10, 1.0, 1, "x"), Error);
  EXPECT_THROW(LengthRangeFor(10, -0.1, 1, "x"), Error);
}

TEST(LengthRangeTest, SamplesStayInRangeAndReachBothEnds) {
  BenchRng rng(4);
  const LengthRange range = LengthRangeFor(100, 0.1, 1, "x");
  const auto lengths = SampleLengths(5000, range, rng);
  std::set<int64_t> seen(lengths.begin(), lengths.end());
  EXPECT_EQ(*seen.begin(), 90);
  EXPECT_EQ(*seen.rbegin(), 110);
  EXPECT_EQ(seen.size(), 21u);  // every integer in between
  double mean = 0;
  for (const int64_t n : lengths) mean += static_cast<double>(n);
  EXPECT_NEAR(mean / 5000, 100.0, 0.5);
}

TEST(RandomDatasetTest, ExactPromptLengthsWithATokenizer) {
  WordTokenizer tokenizer;
  DatasetOptions options{.n_requests = 40, .input_len = 50, .output_len = 20, .range_ratio = 0.5, .seed = 3};
  const auto requests = MakeRandomDataset(options, &tokenizer);
  ASSERT_EQ(requests.size(), 40u);
  std::set<std::string> prompts;
  for (size_t i = 0; i < requests.size(); ++i) {
    const BenchRequest& r = requests[i];
    EXPECT_EQ(r.index, static_cast<int64_t>(i));
    EXPECT_TRUE(r.prompt_tokens_exact);
    EXPECT_GE(r.n_prompt_tokens, 25);
    EXPECT_LE(r.n_prompt_tokens, 75);
    EXPECT_EQ(static_cast<int64_t>(tokenizer.Encode(r.prompt).size()), r.n_prompt_tokens);
    EXPECT_GE(r.n_output_tokens, 10);
    EXPECT_LE(r.n_output_tokens, 30);
    prompts.insert(r.prompt);
  }
  EXPECT_EQ(prompts.size(), 40u);  // no two alike
}

TEST(RandomDatasetTest, CountIsTheTokenizersCountAfterTheCut) {
  HalfWordTokenizer tokenizer;
  DatasetOptions options{.n_requests = 5, .input_len = 11, .output_len = 4, .range_ratio = 0, .seed = 1};
  for (const BenchRequest& r : MakeRandomDataset(options, &tokenizer)) {
    // 11 tokens = 5 words and a half word, which re-encodes as 12; one
    // shrink round drops a token: 10 tokens = 5 words.
    EXPECT_EQ(r.n_prompt_tokens, static_cast<int64_t>(tokenizer.Encode(r.prompt).size()));
    EXPECT_LE(std::abs(r.n_prompt_tokens - 11), 1);
  }
}

TEST(RandomDatasetTest, SameSeedSameDatasetOtherSeedOther) {
  DatasetOptions options{.n_requests = 10, .input_len = 30, .output_len = 8, .range_ratio = 0.3, .seed = 9};
  const auto a = MakeRandomDataset(options, nullptr);
  const auto b = MakeRandomDataset(options, nullptr);
  options.seed = 10;
  const auto c = MakeRandomDataset(options, nullptr);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].prompt, b[i].prompt);
    EXPECT_EQ(a[i].n_output_tokens, b[i].n_output_tokens);
  }
  EXPECT_NE(a[0].prompt, c[0].prompt);
}

TEST(RandomDatasetTest, WithoutATokenizerOneWordPerToken) {
  DatasetOptions options{.n_requests = 20, .input_len = 64, .output_len = 16, .range_ratio = 0.25, .seed = 2};
  for (const BenchRequest& r : MakeRandomDataset(options, nullptr)) {
    EXPECT_FALSE(r.prompt_tokens_exact);
    std::istringstream in(r.prompt);
    int64_t words = 0;
    for (std::string w; in >> w;) ++words;
    EXPECT_EQ(words, r.n_prompt_tokens);
    EXPECT_GE(r.n_prompt_tokens, 48);
    EXPECT_LE(r.n_prompt_tokens, 80);
    for (const char c : r.prompt) EXPECT_TRUE(c == ' ' || (c >= 'a' && c <= 'z'));
  }
}

TEST(RandomDatasetTest, BadOptionsNameTheFlag) {
  DatasetOptions options{.n_requests = 0, .input_len = 8, .output_len = 8, .range_ratio = 0, .seed = 0};
  try {
    MakeRandomDataset(options, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--num-prompts"), std::string::npos);
  }
  options.n_requests = 1;
  options.output_len = 0;
  try {
    MakeRandomDataset(options, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--random-output-len"), std::string::npos);
  }
}

TEST(RandomDatasetTest, DerivedSeedsDiffer) {
  EXPECT_NE(DeriveSeed(0, 1), DeriveSeed(0, 2));
  EXPECT_NE(DeriveSeed(0, 1), DeriveSeed(1, 1));
  EXPECT_EQ(DeriveSeed(5, 1), DeriveSeed(5, 1));
}

}  // namespace
}  // namespace ridge::bench
