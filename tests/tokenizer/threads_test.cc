// One Tokenizer (and its copies) used from several threads at once gives the
// same ids as used from one (the engine's HTTP threads share one). Run under
// the sanitizer builds, this also checks the PCRE2 matcher state is per call.
#include <gtest/gtest.h>

#include <thread>

#include "ridge/gguf/gguf_file.h"
#include "ridge/tokenizer/tokenizer.h"
#include "test_paths.h"

namespace ridge {
namespace {

TEST(TokenizerThreads, ConcurrentEncodeAndDecodeAgree) {
  const GgufFile file = GgufFile::Open(testing::SharedDir() + "/vocab/ggml-vocab-llama-bpe.gguf");
  const Tokenizer tokenizer = Tokenizer::FromGguf(file);
  const std::vector<std::string> texts = {
      "Hello, y'all! How are you \xF0\x9F\x98\x81 ?", "3333333 3.3 3..3", "  \n\n\t leading whitespace",
      "I've been 'told he's there, 'RE you sure?", "\xD0\xBD\xD0\xB5\xD1\x89\xD0\xBE \xE6\x97\xA5\xE6\x9C\xAC"};
  std::vector<std::vector<int32_t>> expected;
  for (const auto& t : texts) expected.push_back(tokenizer.Encode(t, true));

  constexpr int kThreads = 4;
  std::vector<int> n_mismatches(kThreads, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const Tokenizer copy = tokenizer;  // copies share the tables
      for (int round = 0; round < 50; ++round) {
        for (size_t i = 0; i < texts.size(); ++i) {
          const Tokenizer& tok = (round + t) % 2 ? copy : tokenizer;
          const std::vector<int32_t> ids = tok.Encode(texts[i], true);
          n_mismatches[t] += ids != expected[i];
          n_mismatches[t] += tok.Decode(ids) != texts[i];
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(n_mismatches[t], 0) << "thread " << t;
}

}  // namespace
}  // namespace ridge
