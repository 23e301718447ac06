#pragma once
// The continuous-batching engine. One thread owns the model, the paged KV
// cache and the scheduler and runs Step() in a loop; other threads Submit
// requests and read their tokens through RequestStreams.
//
// Each step (iteration-level scheduling):
//   1. new requests join the waiting queue; cancelled ones leave, freeing KV;
//   2. every running sequence with one token to feed (decode) is scheduled,
//      growing its block table; when the pool is out of blocks the most
//      recently admitted sequence is preempted (its blocks freed; it waits to
//      be recomputed from its tokens so far);
//   3. the rest of the token budget (max_batch_tokens) goes to prefill chunks:
//      first of sequences mid-prefill, then of waiting ones admitted in FIFO
//      order when their blocks fit (prefix caching may supply some), a new
//      one only while the step's prefill holds fewer than join_below_tokens
//      tokens: every prompt of a step waits the whole step for its first
//      token, so prompts taken one after another get theirs sooner. While
//      sequences decode, prefill takes at most max_prefill_tokens_while_decoding
//      tokens a step if set: a step's time is what every running stream waits
//      for its next token, and on a CPU it grows with every prompt token;
//   4. one forward pass over the mixed batch; each sequence whose fed tokens
//      reached its end samples its next token, which is streamed at once;
//      finished sequences leave and free their blocks.
//
// Speculative decoding (options.speculation): in step 2 a decoding sequence
// may also carry up to K drafted tokens (prompt lookup, or a draft model's
// K batched passes over every speculating sequence, on the same thread pool
// before the target's pass), when their blocks are free without preempting
// anyone; they are more positions of that sequence in the batch, each with
// its logits. Sampler::VerifyDraft accepts a prefix of
// the draft and adds one token of the target's own, so a step emits 1..K+1
// tokens with exactly the distribution of plain decoding. The K/V written for
// rejected tokens are abandoned: the sequence's stored length stops before
// them, blocks holding only them go back to the pool, and no prefix-cache key
// is ever computed over them (keys are made from committed tokens only). A
// draft model's cache is rolled back to the accepted tokens alike, and frees
// a sequence's blocks wherever the target's cache does (finish, cancel,
// preemption).
// Requests with a grammar do not speculate: their mask depends on the
// grammar state after each token.
//
// Faults: a throw inside a step ends only the requests it concerns, with
// FinishKind::kError, and the loop goes on: a failed forward pass ends every
// request of its batch, a failed sampling the one request sampled. A fault
// that leaves the engine unusable (out of memory, a throw in the scheduler or
// the KV bookkeeping, whose state it may have left half-updated, or
// kMaxConsecutiveBatchFaults forward passes failing in a row, or a split
// model's LinkError: the other ranks are gone) ends every request with an
// error, stops the engine and calls the fatal handler.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/base/thread_pool.h"
#include "ridge/engine/draft_model.h"
#include "ridge/engine/engine_observer.h"
#include "ridge/engine/prompt_lookup.h"
#include "ridge/engine/request_stream.h"
#include "ridge/grammar/grammar.h"
#include "ridge/grammar/token_mask.h"
#include "ridge/kv/paged_kv_cache.h"
#include "ridge/metrics/spec_decode_counts.h"
#include "ridge/model/model.h"
#include "ridge/sampling/sampler.h"
#include "ridge/tokenizer/tokenizer.h"

namespace ridge {

class ServerMetrics;
namespace grammar {
class GrammarVocabulary;
class TokenMasker;
}  // namespace grammar

// Where a test may inject a fault (EngineOptions::fault_injector).
struct FaultPoint {
  enum class Site { kForward, kSample };
  Site site;
  int64_t step;                          // steps completed before this one (EngineStats::steps)
  std::span<const RequestId> requests;   // kForward: every request in the batch; kSample: the one sampled
};

struct EngineOptions {
  int n_threads = 0;                 // 0: all hardware threads
  int64_t max_batch_tokens = 512;    // tokens per forward pass (decode + prefill chunks)
  // Prompt tokens a step may take while sequences decode (0: no cap beyond
  // max_batch_tokens): bounds the inter-token pause prefill causes, at the
  // cost of TTFT.
  int64_t max_prefill_tokens_while_decoding = 0;
  // A waiting prompt joins a step only while the step's prefill chunks
  // (those of prompts mid-prefill included) hold fewer tokens than this, so
  // a step with none yet always takes one (0: whenever the budget has room).
  // On a CPU a step's time grows with each token it holds, and every prompt
  // in it gets its first token only when the step ends: filling the
  // budget with several prompts makes them all wait for all of them. A few
  // dozen tokens a step already keep its fixed costs (one read of the
  // weights, the threads' hand-offs) small beside its arithmetic.
  int64_t join_below_tokens = 64;
  int64_t max_running = 256;         // sequences in the running set
  int64_t max_waiting = 1024;        // queued requests before Submit refuses (QueueFullError)
  GgmlType kv_type = GgmlType::kF16;
  int64_t kv_block_tokens = 16;
  int64_t kv_memory_bytes = int64_t{2} << 30;  // pool budget, used when kv_tokens is 0
  int64_t kv_tokens = 0;             // pool size in tokens (rounded up to blocks), overrides the budget
  bool prefix_caching = true;
  SpeculationOptions speculation;  // off by default
  // Test seam, unset outside tests: called just before each forward pass and
  // each sampling; what it throws is handled as a fault of that forward pass
  // or sampling.
  std::function<void(const FaultPoint&)> fault_injector;
};

struct RequestParams {
  std::vector<TokenId> prompt;       // tokenized, BOS included as the model wants
  int64_t max_new_tokens = 16;
  sampling::SamplingParams sampling;
  bool ignore_eos = false;
  bool stop_at_bos = false;          // llama2.c's rule (its golden stories need it)
  // Constrained decoding (null: unconstrained). Each step, tokens whose bytes
  // would take the output text out of the grammar's language get logit -inf
  // before penalties and sampling (greedy included), so log-probabilities are
  // those of the constrained distribution; end-of-generation tokens are
  // allowed only where the text is a whole sentence, and end the request
  // there even with ignore_eos. Control tokens other than those are never
  // allowed. max_new_tokens may still cut a sentence short (kLength).
  std::shared_ptr<const grammar::Grammar> grammar;
  // The caller decodes the output as the start of a text (chat responses:
  // StreamingDetokenizer with at_sequence_start), so a SentencePiece
  // tokenizer drops the first token's leading space, and the grammar must see
  // the text without it.
  bool text_starts_fresh = false;
};

// Submit's refusal when the waiting queue is full: retry later (HTTP 429).
class QueueFullError : public Error {
 public:
  using Error::Error;
};

// Submit's refusal of a request whose grammar cannot be followed from its
// start within the grammar module's bounds (too many parses alive at once):
// the request's mistake, in the field that set the grammar (HTTP 400).
class GrammarRefusedError : public Error {
 public:
  using Error::Error;
};

// Submit's refusal once the engine is stopping or stopped after a fatal
// fault: the server's condition, not the request's (HTTP 503).
class EngineStoppedError : public Error {
 public:
  using Error::Error;
};

struct EngineStats {
  int64_t running = 0;
  int64_t waiting = 0;
  int64_t steps = 0;
  int64_t preemptions = 0;
  int64_t prefill_tokens = 0;   // tokens fed in prefill chunks (recomputation included)
  int64_t decode_tokens = 0;    // tokens fed one per sequence
  int64_t finished = 0;
  SpecDecodeCounts speculation;  // every request's, since the engine started
  KvAccounting kv;
  KvAccounting draft_kv;  // the draft model's own cache (all 0 without draft-model speculation)
  // Utilization if every running sequence had reserved its maximum length
  // contiguously (prompt + max_new_tokens): what paging saves.
  double contiguous_utilization = 1.0;
};

class Engine {
 public:
  // The tokenizer tells which tokens end generation (EOS, end-of-turn) and BOS.
  Engine(Model& model, const Tokenizer& tokenizer, const EngineOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Thread-safe. Validates and queues a request. Throws ridge::Error for one
  // that can never run (empty prompt, a prompt filling the whole context, a
  // prompt larger than the whole KV pool, bad sampling parameters),
  // GrammarRefusedError for a grammar that cannot be followed from its start,
  // QueueFullError when max_waiting requests are already queued, and
  // EngineStoppedError once Stop() was called or a fatal fault stopped it.
  std::shared_ptr<RequestStream> Submit(RequestParams params);

  // Runs one scheduling step on the calling thread; false if there was
  // nothing to do or the engine has stopped after a fatal fault.
  bool Step();
  // Steps until no request is waiting or running.
  void RunUntilIdle();

  // Runs the loop on an engine thread until Stop(); Stop finishes nothing
  // early: pass cancel_running to abort what is in flight first.
  void Start();
  void Stop(bool cancel_running = false);

  EngineStats Stats() const;  // thread-safe snapshot, updated after every step
  const Model& model() const { return model_; }
  const EngineOptions& options() const { return options_; }
  int64_t kv_blocks() const { return cache_.n_blocks(); }
  // Optional: receives finished requests and the running/waiting/KV gauges.
  void set_metrics(ServerMetrics* metrics) { metrics_ = metrics; }
  // Optional, set before Start(): sees every request queued and finished and
  // every step, on the engine thread (engine_observer.h). Must outlive the engine's thread.
  void set_observer(EngineObserver* observer) { observer_ = observer; }
  // Optional, set before Start(): called once, on the thread that ran the
  // step, after a fatal fault has ended every request. `ridge serve` exits
  // on it with a non-zero status.
  void set_fatal_handler(std::function<void(const std::string& reason)> handler) {
    fatal_handler_ = std::move(handler);
  }
  // Why a fatal fault stopped the engine; "" while it is usable.
  std::string fatal_error() const;

  // Forward passes that may fail in a row before the engine gives up.
  static constexpr int kMaxConsecutiveBatchFaults = 5;

 private:
  struct Sequence;
  bool StepOnce();  // Step() without the last line of defence
  void TakeInbox();
  void DropCancelled();
  void ScheduleDecode(Batch& batch, std::vector<Sequence*>& fed);
  // Gives the decoding sequences in `fed` their drafts where their blocks are
  // free, and rebuilds `batch` (decode tokens only) with them.
  void AddDrafts(Batch& batch, const std::vector<Sequence*>& fed);
  bool Speculates(const Sequence& seq) const;
  // Fills the drafts of `drafting` (requests[i] is drafting[i]'s) in the
  // draft model's batched passes; a failed pass leaves them without drafts.
  void ProposeByDraftModel(std::vector<DraftModel::Request>& requests, const std::vector<Sequence*>& drafting);
  void UnscheduleFromBatch(Sequence& seq, Batch& batch, std::vector<Sequence*>& fed);
  void SchedulePrefill(Batch& batch, std::vector<Sequence*>& fed, int64_t budget);
  bool Admit(Sequence& seq);
  void Preempt(Sequence& seq);
  // request_fault: a kError of the request's own making (StreamUpdate::request_fault).
  void Finish(Sequence& seq, FinishKind kind, const std::string& error = {}, bool request_fault = false);
  // False if the forward pass failed; its batch has then been ended with errors.
  bool RunForward(const Batch& batch, const std::vector<Sequence*>& fed, int64_t n_logit_rows);
  void SampleAndStream(const std::vector<Sequence*>& fed, const std::vector<int64_t>& logit_rows);
  // Streams `emitted` (in order) until one ends the request; commits the
  // accepted draft tokens' K/V and rolls back the rest.
  void EmitTokens(Sequence& seq, const std::vector<sampling::SampledToken>& emitted);
  // Masks the logits to the sequence's grammar; false (the request ended with
  // an error) at a dead end, where the grammar allows no token at all.
  bool ConstrainLogits(Sequence& seq, std::span<float> logits);
  // Advances the sequence's grammar by the sampled token; false (the request
  // ended) when it ends generation or is refused.
  bool AdvanceGrammar(Sequence& seq, TokenId token);
  // The masker shared by every request with this grammar (created on first use; any thread).
  std::shared_ptr<grammar::TokenMasker> MaskerFor(const std::shared_ptr<const grammar::Grammar>& grammar);
  void PublishStats();
  // Gives the observer a snapshot if it wants one now.
  void OfferSnapshot();
  void ReportStep(const Batch& batch, const std::vector<Sequence*>& fed, int64_t n_decode,
                  const std::vector<int64_t>& context_before, Clock::time_point start,
                  Clock::time_point forward_start, Clock::time_point forward_end);
  void EndEverything(FinishKind kind, const std::string& error = {});
  void Die(const std::string& reason);
  // The engine thread, every turn of its loop: a split model's rank 0 tells
  // the other ranks it is alive (Model::KeepLinkAlive); a failure is fatal.
  void KeepLinkAlive();

  Model& model_;
  EngineOptions options_;
  ThreadPool pool_;
  PagedKvCache cache_;
  std::optional<DraftModel> drafter_;  // draft-model speculation: the draft and its own KV cache
  std::vector<float> logits_;
  std::vector<bool> end_of_generation_;  // [n_vocab]
  TokenId bos_id_ = -1;
  Tokenizer tokenizer_;  // a copy shares the tables

  // Constrained decoding: the vocabulary's trie, built at the first request
  // with a grammar, and one masker (with its cache) per grammar in use.
  std::mutex grammar_mutex_;
  std::shared_ptr<const grammar::GrammarVocabulary> grammar_vocabulary_;            // guarded by grammar_mutex_
  std::map<const grammar::Grammar*, std::weak_ptr<grammar::TokenMasker>> maskers_;  // guarded by grammar_mutex_
  grammar::TokenBitmask grammar_mask_;  // the engine thread's scratch for one sequence's mask

  // Owned by the engine thread.
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // admission order
  uint64_t admission_counter_ = 0;
  EngineStats counters_;
  int consecutive_batch_faults_ = 0;

  // Shared with submitters.
  mutable std::mutex inbox_mutex_;
  std::condition_variable inbox_changed_;
  std::vector<std::unique_ptr<Sequence>> inbox_;
  std::atomic<int64_t> queued_{0};  // inbox + waiting, for max_waiting
  RequestId next_id_ = 1;
  bool accepting_ = true;
  std::string fatal_error_;  // guarded by inbox_mutex_

  mutable std::mutex stats_mutex_;
  EngineStats stats_;

  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> cancel_on_stop_{false};
  std::atomic<bool> failed_{false};  // a fatal fault stopped the engine
  ServerMetrics* metrics_ = nullptr;
  EngineObserver* observer_ = nullptr;
  std::function<void(const std::string&)> fatal_handler_;
};

}  // namespace ridge
