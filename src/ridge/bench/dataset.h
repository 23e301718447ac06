#pragma once
// The random dataset of the serving benchmark (vLLM's "random" dataset):
// input and output lengths drawn uniformly from [L·(1−X), L·(1+X)], and for
// each request a prompt of about that many tokens made of random English
// words (no two prompts share a prefix, so a prefix cache cannot help).
//
// Prompt lengths: with a tokenizer (the model's own, or the server's
// /tokenize), the word text is encoded, cut to the drawn length, decoded and
// encoded again; the count recorded is that final count, exact for that
// tokenizer (the cut can shift it by a token or two: a word split at the cut
// may merge differently). Without one, one word is taken as one token — an
// approximation (common words are one token in 32k+ vocabularies, several in
// tiny ones); the server's usage.prompt_tokens then gives the true count.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ridge/bench/random.h"

namespace ridge::bench {

struct LengthRange {
  int64_t min = 0, max = 0;
};

// The integers in [length·(1−ratio), length·(1+ratio)] (within 1e-9, so
// 100·1.1 is 110), raised to at least min_length. ratio in [0, 1).
// Throws ridge::Error naming `what` for length < 1 or a bad ratio.
LengthRange LengthRangeFor(int64_t length, double ratio, int64_t min_length, const std::string& what);

// n draws, uniform over range.min..range.max inclusive.
std::vector<int64_t> SampleLengths(int64_t n, LengthRange range, BenchRng& rng);

// Text ⇄ token ids for sizing prompts. Encode adds no BOS or other special
// tokens. Implementations may throw ridge::Error.
class PromptTokenizer {
 public:
  virtual ~PromptTokenizer() = default;
  virtual std::string Describe() const = 0;  // "server /tokenize at http://…", "tok.gguf"
  virtual std::vector<int32_t> Encode(const std::string& text) = 0;
  virtual std::string Decode(const std::vector<int32_t>& ids) = 0;
};

struct BenchRequest {
  int64_t index = 0;
  std::string prompt;
  int64_t n_prompt_tokens = 0;     // by the tokenizer, or the word count without one
  bool prompt_tokens_exact = false;  // counted by a tokenizer
  int64_t n_output_tokens = 0;     // requested (max_tokens)
};

struct DatasetOptions {
  int64_t n_requests = 0;
  int64_t input_len = 0;
  int64_t output_len = 0;
  double range_ratio = 0;
  uint64_t seed = 0;
};

// tokenizer may be null (word-count approximation). Same options and
// tokenizer → same dataset.
std::vector<BenchRequest> MakeRandomDataset(const DatasetOptions& options, PromptTokenizer* tokenizer);

// `n_words` random words from the built-in list, space-separated.
std::string RandomWords(int64_t n_words, BenchRng& rng);

// Derives independent generator seeds from one user seed (splitmix64), so
// that drawing more words never shifts the arrival schedule.
uint64_t DeriveSeed(uint64_t seed, uint64_t stream);

}  // namespace ridge::bench
