// The PCRE2 pre-tokenizers split text into the words the original regexes give.
#include <gtest/gtest.h>

#include <chrono>

#include "ridge/base/error.h"
#include "ridge/tokenizer/pretokenizer.h"
#include "ridge/tokenizer/pretokenizer_families.h"

namespace ridge::tokenizer_detail {
namespace {

using Words = std::vector<std::string>;

Words Split(const std::string& pre, std::string_view text) {
  const auto p = Pretokenizer::Create(pre);
  std::vector<std::string_view> views;
  p->Split(text, &views);
  Words words(views.begin(), views.end());
  std::string joined;
  for (const auto& w : words) {
    EXPECT_FALSE(w.empty());
    joined += w;
  }
  EXPECT_EQ(joined, text) << "every byte lands in exactly one word, in order";
  return words;
}

TEST(Pretokenizer, Gpt2) {
  EXPECT_EQ(Split("gpt-2", "Hello world's  test!!"), (Words{"Hello", " world", "'s", " ", " test", "!!"}));
  EXPECT_EQ(Split("gpt-2", "I'M 12345 x"), (Words{"I", "'", "M", " 12345", " x"}));  // GPT-2 is case-sensitive
  EXPECT_EQ(Split("gpt-2", "a\n\n b"), (Words{"a", "\n\n", " b"}));
  EXPECT_EQ(Split("gpt-2", "end   "), (Words{"end", "   "}));
  EXPECT_EQ(Split("gpt-2", "\tx"), (Words{"\t", "x"}));
  EXPECT_EQ(Split("", "a b"), (Words{"a", " b"}));  // absent pre = llama.cpp's default
  EXPECT_EQ(Split("gpt-2", ""), Words{});
}

TEST(Pretokenizer, Llama3) {
  EXPECT_EQ(Split("llama-bpe", "12345678"), (Words{"123", "456", "78"}));
  EXPECT_EQ(Split("llama-bpe", "I'M you'Re WE'LL"), (Words{"I", "'M", " you", "'Re", " WE", "'LL"}));
  EXPECT_EQ(Split("llama-bpe", "x.\n\n  y"), (Words{"x", ".\n\n", " ", " y"}));
  EXPECT_EQ(Split("llama-bpe", "hi  \n\nthere"), (Words{"hi", "  \n\n", "there"}));
  EXPECT_EQ(Split("llama-bpe", "$hello"), (Words{"$hello"}));  // one non-letter may lead a word
  EXPECT_EQ(Split("llama-bpe", "\xC3\xA9t\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC"),
            (Words{"\xC3\xA9t\xC3\xA9", " \xE6\x97\xA5\xE6\x9C\xAC"}));  // \p{L} is Unicode
  // The contraction group is caseless with Unicode folding, as tiktoken's
  // (?i:'s|...): the long s (U+017F) folds to s, so "'ſ" is the contraction.
  EXPECT_EQ(Split("llama-bpe", "'\xC5\xBF\xC5\xBF"), (Words{"'\xC5\xBF", "\xC5\xBF"}));
  EXPECT_EQ(Split("llama-bpe", "'ss"), (Words{"'s", "s"}));
  EXPECT_EQ(Split("llama3", "12345"), (Words{"123", "45"}));
}

TEST(Pretokenizer, Qwen2SplitsDigitsOneByOne) {
  EXPECT_EQ(Split("qwen2", "x 123"), (Words{"x", " ", "1", "2", "3"}));
}

TEST(Pretokenizer, InvalidUtf8BecomesItsOwnWords) {
  EXPECT_EQ(Split("gpt-2", "ab\xFF cd"), (Words{"ab", "\xFF", " cd"}));
  EXPECT_EQ(Split("llama-bpe", "\xE2\x82 x\xC0\xAFy"), (Words{"\xE2\x82", " x", "\xC0\xAF", "y"}));
}

TEST(Pretokenizer, HugeRunsDoNotFail) {
  // Long runs of one class stress the JIT stack (the matcher then falls back
  // to the interpreter) and backtracking in \s+(?!\S).
  const std::string spaces(1 << 20, ' ');
  const std::string digits(1 << 20, '7');
  const std::string letters(1 << 20, 'a');
  for (const char* pre : {"gpt-2", "llama-bpe"}) {
    Words w = Split(pre, spaces + "x");
    ASSERT_EQ(w.size(), 2u);
    EXPECT_EQ(w[0].size(), spaces.size() - 1);  // \s+(?!\S) leaves the last space to " x"
    EXPECT_EQ(w[1], " x");
    w = Split(pre, letters + digits);
    EXPECT_EQ(w[0], letters);
  }
}

TEST(Pretokenizer, UnknownNameIsAnErrorListingTheKnownOnes) {
  try {
    Pretokenizer::Create("no-such-family");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("'no-such-family'"), std::string::npos) << message;
    for (const char* known : {"llama-bpe", "deepseek-coder", "falcon", "qwen2", "tekken", "gpt-4o", "superbpe"}) {
      EXPECT_NE(message.find(known), std::string::npos) << known << " missing from: " << message;
    }
  }
}

TEST(PretokenizerFamilies, EveryKnownNameCompilesAndKeepsEveryByte) {
  const std::string names = KnownPretokenizerNames();
  const std::string text = "Hello WORLD's 12345 x.y(z)\n\n  \xE4\xBD\xA0\xE5\xA5\xBD caf\xC3\xA9 \xFF\xC0 end";
  size_t n_names = 0;
  for (size_t pos = 0; pos < names.size();) {
    size_t end = names.find(", ", pos);
    if (end == std::string::npos) end = names.size();
    const std::string name = names.substr(pos, end - pos);
    pos = end + 2;
    ++n_names;
    const auto p = Pretokenizer::Create(name);
    std::vector<std::string_view> words;
    p->Split(text, &words);
    std::string joined;
    for (const std::string_view w : words) {
      EXPECT_FALSE(w.empty()) << name;
      joined += w;
    }
    EXPECT_EQ(joined, text) << name;
  }
  EXPECT_GE(n_names, 40u);
}

TEST(PretokenizerFamilies, HugeRunsStayFastInEveryFamily) {
  // A run of one class ending in another is where a backtracking regex can go
  // quadratic (\s+$ before a digit, say): every family must split 256 KiB of
  // each in well under a second.
  const std::string names = KnownPretokenizerNames();
  const size_t n = size_t{1} << 18;
  const std::vector<std::string> texts = {std::string(n, ' ') + "1", std::string(n, '7') + "x",
                                          std::string(n, '.') + " ", std::string(n, 'a') + "1"};
  for (size_t pos = 0; pos < names.size();) {
    size_t end = names.find(", ", pos);
    if (end == std::string::npos) end = names.size();
    const std::string name = names.substr(pos, end - pos);
    pos = end + 2;
    const auto p = Pretokenizer::Create(name);
    for (const std::string& text : texts) {
      const auto start = std::chrono::steady_clock::now();
      std::vector<std::string_view> words;
      p->Split(text, &words);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EXPECT_LT(seconds, 2.0) << name << " on a run of '" << text[0] << "'";
      size_t n_bytes = 0;
      for (const std::string_view w : words) n_bytes += w.size();
      EXPECT_EQ(n_bytes, text.size()) << name;
    }
  }
}

TEST(PretokenizerFamilies, SplitsAsTheirTokenizers) {
  // Several regexes in sequence: line breaks, letters, punctuation, CJK, each digit.
  EXPECT_EQ(Split("deepseek-coder", "foo.bar(12)\n"), (Words{"foo", ".", "bar", "(", "1", "2", ")", "\n"}));
  // Falcon: punctuation runs first, then GPT-2's words, then numbers in threes.
  EXPECT_EQ(Split("falcon", "a,b 1234567"), (Words{"a", ",", "b", " ", "123", "456", "7"}));
  // Starcoder & co.: each digit, then GPT-2.
  EXPECT_EQ(Split("starcoder", "x 123"), (Words{"x", " ", "1", "2", "3"}));
  // o200k: case-aware words carry their contraction; numbers in threes.
  EXPECT_EQ(Split("gpt-4o", "I'm HelloWorld 12345"), (Words{"I'm", " Hello", "World", " ", "123", "45"}));
  // tekken: case-aware words, single digits.
  EXPECT_EQ(Split("tekken", "HelloWorld 123"), (Words{"Hello", "World", " ", "1", "2", "3"}));
  // SuperBPE: words may span spaces; digit runs are cut into threes from the
  // right by a zero-width match.
  EXPECT_EQ(Split("superbpe", "x 1234567"), (Words{"x ", "1", "234", "567"}));
  // BLOOM: anything up to whitespace or sentence punctuation.
  EXPECT_EQ(Split("bloom", "Hi there, you!"), (Words{"Hi", " there", ",", " you", "!"}));
  EXPECT_EQ(Split("viking", "a12"), (Words{"a", "1", "2"}));
  // Qwen3.5 keeps combining marks on their letters (e + U+0301).
  EXPECT_EQ(Split("qwen35", "cafe\xCC\x81!"), (Words{"cafe\xCC\x81", "!"}));
}

}  // namespace
}  // namespace ridge::tokenizer_detail
