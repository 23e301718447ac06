#include "ridge/bench/dataset.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include "ridge/base/error.h"

namespace ridge::bench {
namespace {

// Short common English words: one token each in most 32k+ vocabularies.
constexpr std::array<std::string_view, 200> kWords = {
    "the",    "of",     "and",    "to",     "in",     "is",     "you",    "that",   "it",     "he",
    "was",    "for",    "on",     "are",    "as",     "with",   "his",    "they",   "at",     "be",
    "this",   "have",   "from",   "or",     "one",    "had",    "by",     "word",   "but",    "not",
    "what",   "all",    "were",   "we",     "when",   "your",   "can",    "said",   "there",  "use",
    "an",     "each",   "which",  "she",    "do",     "how",    "their",  "if",     "will",   "up",
    "other",  "about",  "out",    "many",   "then",   "them",   "these",  "so",     "some",   "her",
    "would",  "make",   "like",   "him",    "into",   "time",   "has",    "look",   "two",    "more",
    "write",  "go",     "see",    "number", "no",     "way",    "could",  "people", "my",     "than",
    "first",  "water",  "been",   "call",   "who",    "oil",    "its",    "now",    "find",   "long",
    "down",   "day",    "did",    "get",    "come",   "made",   "may",    "part",   "over",   "new",
    "sound",  "take",   "only",   "little", "work",   "know",   "place",  "year",   "live",   "me",
    "back",   "give",   "most",   "very",   "after",  "thing",  "our",    "just",   "name",   "good",
    "man",    "think",  "say",    "great",  "where",  "help",   "through", "much",  "before", "line",
    "right",  "too",    "mean",   "old",    "any",    "same",   "tell",   "boy",    "follow", "came",
    "want",   "show",   "also",   "around", "form",   "three",  "small",  "set",    "put",    "end",
    "does",   "another", "well",  "large",  "must",   "big",    "even",   "such",   "because", "turn",
    "here",   "why",    "ask",    "went",   "men",    "read",   "need",   "land",   "home",   "us",
    "move",   "try",    "kind",   "hand",   "picture", "again", "change", "off",    "play",   "spell",
    "air",    "away",   "animal", "house",  "point",  "page",   "letter", "mother", "answer", "found",
    "study",  "still",  "learn",  "should", "world",  "high",   "every",  "near",   "add",    "food",
};

constexpr uint64_t kWordStream = 1;
constexpr int kMaxGrowRounds = 12;
constexpr int kMaxShrinkRounds = 4;

std::string SizedPrompt(int64_t target_tokens, BenchRng& rng, PromptTokenizer& tokenizer, int64_t* n_tokens) {
  std::string text = RandomWords(target_tokens + 8, rng);
  std::vector<int32_t> ids = tokenizer.Encode(text);
  for (int round = 0; static_cast<int64_t>(ids.size()) < target_tokens; ++round) {
    if (round == kMaxGrowRounds)
      Fail("prompt sizing: {} words gave only {} tokens (wanted {}); is the tokenizer ({}) working?",
           target_tokens * 2, ids.size(), target_tokens, tokenizer.Describe());
    text += ' ';
    text += RandomWords(target_tokens + 8, rng);
    ids = tokenizer.Encode(text);
  }
  ids.resize(static_cast<size_t>(target_tokens));
  text = tokenizer.Decode(ids);
  int64_t count = static_cast<int64_t>(tokenizer.Encode(text).size());
  // Decoding a cut and encoding again can merge differently at the cut; drop
  // the excess and retry a few times, then take the count as it is.
  for (int round = 0; round < kMaxShrinkRounds && count > target_tokens && ids.size() > 1; ++round) {
    const int64_t excess = count - target_tokens;
    ids.resize(ids.size() > static_cast<size_t>(excess) ? ids.size() - static_cast<size_t>(excess) : 1);
    text = tokenizer.Decode(ids);
    count = static_cast<int64_t>(tokenizer.Encode(text).size());
  }
  *n_tokens = count;
  return text;
}

}  // namespace

LengthRange LengthRangeFor(int64_t length, double ratio, int64_t min_length, const std::string& what) {
  if (length < 1) Fail("{} must be >= 1 token, got {}", what, length);
  if (!(ratio >= 0.0 && ratio < 1.0)) Fail("--random-range-ratio must be in [0, 1), got {}", ratio);
  constexpr double kTolerance = 1e-9;
  const double lo = static_cast<double>(length) * (1.0 - ratio);
  const double hi = static_cast<double>(length) * (1.0 + ratio);
  LengthRange range;
  range.min = std::max<int64_t>(static_cast<int64_t>(std::ceil(lo - kTolerance)), min_length);
  range.max = std::max<int64_t>(static_cast<int64_t>(std::floor(hi + kTolerance)), range.min);
  return range;
}

std::vector<int64_t> SampleLengths(int64_t n, LengthRange range, BenchRng& rng) {
  if (n < 0) Fail("length sampling: negative count {}", n);
  std::vector<int64_t> lengths(static_cast<size_t>(n));
  for (int64_t& length : lengths) length = rng.UniformInt(range.min, range.max);
  return lengths;
}

std::string RandomWords(int64_t n_words, BenchRng& rng) {
  std::string text;
  for (int64_t i = 0; i < n_words; ++i) {
    if (i > 0) text += ' ';
    text += kWords[static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(kWords.size()) - 1))];
  }
  return text;
}

uint64_t DeriveSeed(uint64_t seed, uint64_t stream) {
  uint64_t z = seed + 0x9E3779B97F4A7C15ULL * (stream + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::vector<BenchRequest> MakeRandomDataset(const DatasetOptions& options, PromptTokenizer* tokenizer) {
  if (options.n_requests < 1) Fail("--num-prompts must be >= 1, got {}", options.n_requests);
  const LengthRange input_range = LengthRangeFor(options.input_len, options.range_ratio, 1, "--random-input-len");
  const LengthRange output_range = LengthRangeFor(options.output_len, options.range_ratio, 1, "--random-output-len");
  // As vLLM: all input lengths are drawn, then all output lengths.
  BenchRng length_rng(options.seed);
  const std::vector<int64_t> input_lens = SampleLengths(options.n_requests, input_range, length_rng);
  const std::vector<int64_t> output_lens = SampleLengths(options.n_requests, output_range, length_rng);
  BenchRng word_rng(DeriveSeed(options.seed, kWordStream));

  std::vector<BenchRequest> requests(static_cast<size_t>(options.n_requests));
  for (size_t i = 0; i < requests.size(); ++i) {
    BenchRequest& r = requests[i];
    r.index = static_cast<int64_t>(i);
    r.n_output_tokens = output_lens[i];
    if (tokenizer != nullptr) {
      r.prompt = SizedPrompt(input_lens[i], word_rng, *tokenizer, &r.n_prompt_tokens);
      r.prompt_tokens_exact = true;
    } else {
      r.prompt = RandomWords(input_lens[i], word_rng);
      r.n_prompt_tokens = input_lens[i];
    }
  }
  return requests;
}

}  // namespace ridge::bench
