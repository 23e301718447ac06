#pragma once
// One generation request seen from an HTTP thread: submits token ids to the
// engine, then turns the engine's sampled tokens into text (streaming
// detokenizer) and applies stop strings, all outside the engine thread.
// A stop string found in the text cancels the engine request (kStop); the
// destructor cancels a request that is still running (kAbort), so a handler
// that goes away for any reason frees its KV blocks at the next engine step.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ridge/engine/engine.h"
#include "ridge/server/stop_matcher.h"
#include "ridge/tokenizer/streaming_detokenizer.h"

namespace ridge::server {

struct GenerationSpec {
  std::vector<TokenId> prompt;
  int64_t max_new_tokens = 16;
  sampling::SamplingParams sampling;
  bool ignore_eos = false;
  std::vector<std::string> stop;
  // The generated text begins a fresh text (chat answers): drop the
  // SentencePiece dummy-prefix space of its first token. Completions
  // continue the prompt and keep it.
  bool text_starts_fresh = false;
  // Constrained decoding (null: none); see RequestParams::grammar.
  std::shared_ptr<const grammar::Grammar> grammar;
};

// What arrived since the previous Next().
struct GenerationDelta {
  std::string text;                             // safe to show: valid UTF-8, no part of a stop string
  std::vector<sampling::SampledToken> tokens;   // the tokens behind it (text may lag them by held-back bytes)
  bool finished = false;
  FinishKind finish_kind = FinishKind::kNone;   // kStop (EOS or stop string), kLength, kAbort, kError
  std::string error;                            // for kError
  bool request_fault = false;                   // a kError of the request's making (StreamUpdate::request_fault)
};

class GenerationSession {
 public:
  // Submits to the engine: throws QueueFullError, or ridge::Error for a
  // request the engine refuses.
  GenerationSession(Engine& engine, const Tokenizer& tokenizer, GenerationSpec spec);
  ~GenerationSession();
  GenerationSession(const GenerationSession&) = delete;
  GenerationSession& operator=(const GenerationSession&) = delete;

  // Waits up to `timeout` for progress. Returns false when nothing new came;
  // otherwise replaces `out` with the news. After a delta with finished,
  // later calls return false.
  bool Next(GenerationDelta& out, std::chrono::milliseconds timeout);
  // Ends the request now (client gone, server stopping).
  void Abort();
  // Ends the request as complete (kStop), as a stop string would: the reply
  // has all it needs (its one tool call, say). Tokens already on their way
  // still arrive through Next before the finish.
  void Stop();

  bool finished() const { return finished_; }
  int64_t n_prompt_tokens() const { return n_prompt_tokens_; }
  // Tokens the engine produced that count for the answer (up to and
  // including the one that completed a stop string).
  int64_t n_completion_tokens() const { return n_completion_tokens_; }
  // What speculative decoding did for this request so far.
  SpecDecodeCounts speculation() const { return stream_->trace().speculation(); }

 private:
  std::shared_ptr<RequestStream> stream_;
  StreamingDetokenizer detokenizer_;
  StopMatcher stop_;
  int64_t n_prompt_tokens_ = 0;
  int64_t n_completion_tokens_ = 0;
  bool finished_ = false;
};

}  // namespace ridge::server
