#pragma once
// One request, start to finish, with the two phases explicit:
//   allocate KV → prefill (the whole prompt as one matrix-matrix pass) → first
//   token → decode loop (one token per step, appending to the KV cache) →
//   stop (EOS, token limit, stop string, context full) → free KV.
// Text is streamed through a callback as soon as it is complete UTF-8. The
// continuous-batching Engine serves many requests at once; this is the plain
// single-request path `ridge run` and `ridge bench` use.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ridge/base/clock.h"
#include "ridge/base/thread_pool.h"
#include "ridge/engine/prompt_lookup.h"
#include "ridge/grammar/grammar.h"
#include "ridge/metrics/spec_decode_counts.h"
#include "ridge/kv/paged_kv_cache.h"
#include "ridge/model/model.h"
#include "ridge/sampling/sampling_params.h"
#include "ridge/tokenizer/tokenizer.h"

namespace ridge {

enum class FinishReason { kEndOfGeneration, kLength, kStopString, kContextFull };
const char* FinishReasonName(FinishReason reason);

struct GenerateOptions {
  int64_t max_new_tokens = 256;
  std::vector<std::string> stop_strings;
  sampling::SamplingParams sampling;
  GgmlType kv_type = GgmlType::kF16;
  int64_t kv_block_tokens = 16;
  // llama2.c also ends a story when the model emits BOS; its golden outputs need this.
  bool stop_at_bos = false;
  // Constrained decoding (null: none), as RequestParams::grammar: the output
  // text stays within the grammar and ends only where it is a whole sentence.
  std::shared_ptr<const grammar::Grammar> grammar;
  // Speculative decoding (off by default; never with a grammar), as the
  // Engine does it: each decode pass also verifies up to K drafted tokens.
  SpeculationOptions speculation;
};


struct GenerationResult {
  std::vector<TokenId> prompt_tokens;
  std::vector<TokenId> output_tokens;
  std::string text;  // the generated text (not the prompt), cut before a stop string
  FinishReason finish_reason = FinishReason::kLength;
  // Wall-clock, from the call (tokenization included) to each event.
  double ttft_ms = 0;     // first token sampled
  double e2e_ms = 0;      // last token sampled, KV freed
  double prefill_ms = 0;  // the prefill forward pass alone
  double decode_ms = 0;   // all decode steps
  // KV cache as it stood at the end, before it was freed.
  KvAccounting kv;
  KvAccounting draft_kv;  // the draft model's cache likewise (all 0 without one)
  SpecDecodeCounts speculation;  // all 0 without speculation
  int64_t decode_passes = 0;  // forward passes after the prefill
  double TpotMs() const;  // (E2E − TTFT) / (output tokens − 1); 0 for one token
  double PrefillTokensPerSecond() const;
  double DecodeTokensPerSecond() const;  // output tokens after the first ÷ decode time
};

class Generator {
 public:
  Generator(Model& model, const Tokenizer& tokenizer, ThreadPool& pool)
      : model_(model), tokenizer_(tokenizer), pool_(pool) {}

  using TextCallback = std::function<void(std::string_view text)>;

  // Tokenizes `prompt` (BOS as the vocabulary asks; special-token texts such as
  // "</s>" become those tokens, as completion prompts do in llama.cpp and
  // Hugging Face tokenizers) and generates.
  GenerationResult Generate(std::string_view prompt, const GenerateOptions& options, const TextCallback& on_text);
  // Generates from ids already tokenized; `start` is when the request began.
  GenerationResult GenerateFromTokens(std::vector<TokenId> prompt_tokens, const GenerateOptions& options,
                                      const TextCallback& on_text, Clock::time_point start);

 private:
  Model& model_;
  const Tokenizer& tokenizer_;
  ThreadPool& pool_;
};

}  // namespace ridge
