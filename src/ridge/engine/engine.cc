#include "ridge/engine/engine.h"

#include <algorithm>
#include <cstdio>
#include <new>

#include "ridge/base/error.h"
#include "ridge/grammar/grammar_vocabulary.h"
#include "ridge/grammar/matcher.h"
#include "ridge/grammar/token_masker.h"
#include "ridge/metrics/server_metrics.h"

namespace ridge {

struct Engine::Sequence {
  SeqId id = 0;
  RequestParams params;
  std::shared_ptr<RequestStream> stream;
  std::optional<sampling::Sampler> sampler;
  std::vector<TokenId> tokens;  // prompt, then every generated token
  int64_t n_prompt = 0;
  int64_t n_computed = 0;       // positions whose K/V are in the cache
  int64_t n_generated = 0;
  // This step's draft (speculative decoding): tokens proposed to follow
  // tokens.back(), fed after it at positions tokens.size() on.
  std::vector<TokenId> draft;
  std::vector<float> draft_probs;  // [draft, n_vocab]: the q each draft-model token was drawn from; empty otherwise
  int64_t draft_limit = 0;  // adaptive K: this sequence's current most draft tokens
  uint64_t admitted_at = 0;     // admission order, for choosing preemption victims
  bool scheduled_once = false;
  bool finished = false;
  Clock::time_point arrival;    // as its stream's trace records it
  // Constrained decoding (params.grammar set). The matcher follows the
  // generated tokens, not the KV cache: preemption and prefix caching leave it
  // as it is.
  std::shared_ptr<grammar::TokenMasker> masker;
  std::optional<grammar::GrammarMatcher> matcher;
  bool grammar_strips_first_space = false;  // the first output token's leading space is not in the text

  int64_t pending() const { return static_cast<int64_t>(tokens.size()) - n_computed; }
  int64_t max_length() const { return n_prompt + params.max_new_tokens; }
};

namespace {

int64_t PoolBlocks(const Model& model, const EngineOptions& o) {
  KvCacheShape shape = model.KvShape(o.kv_type, o.kv_block_tokens);
  if (o.kv_tokens > 0) return (o.kv_tokens + o.kv_block_tokens - 1) / o.kv_block_tokens;
  int64_t blocks = PagedKvCache::BlocksForBudget(shape, o.kv_memory_bytes);
  if (blocks < 1)
    Fail("a KV budget of {} bytes holds no block of {} tokens ({} bytes each)", o.kv_memory_bytes, o.kv_block_tokens,
         PagedKvCache::BlockBytes(shape));
  return blocks;
}

}  // namespace

Engine::Engine(Model& model, const Tokenizer& tokenizer, const EngineOptions& options)
    : model_(model),
      options_(options),
      pool_(options.n_threads > 0 ? options.n_threads : HardwareThreads()),
      cache_(model.KvShape(options.kv_type, options.kv_block_tokens), PoolBlocks(model, options)),
      tokenizer_(tokenizer) {
  if (options_.max_batch_tokens < 1) Fail("max batch tokens must be at least 1, got {}", options_.max_batch_tokens);
  if (options_.join_below_tokens < 0)
    Fail("join-below tokens must be 0 (join while the budget has room) or more, got {}", options_.join_below_tokens);
  if (options_.max_prefill_tokens_while_decoding < 0)
    Fail("max prefill tokens while decoding must be 0 (no cap) or more, got {}",
         options_.max_prefill_tokens_while_decoding);
  if (options_.max_running < 1) Fail("max running sequences must be at least 1, got {}", options_.max_running);
  cache_.set_prefix_caching(options_.prefix_caching);
  if (options_.speculation.enabled()) Validate(options_.speculation);
  const int64_t n_vocab = model.config().n_vocab;
  if (tokenizer.n_vocab() != n_vocab)
    Fail("the tokenizer has {} tokens but the model's vocabulary has {}", tokenizer.n_vocab(), n_vocab);
  if (options_.speculation.method == SpeculationOptions::Method::kDraftModel) {
    CheckDraftVocabulary(*options_.speculation.draft, tokenizer);
    // As many blocks as the target's pool: the draft holds at most a
    // sequence's positions plus its draft, as the target does.
    drafter_.emplace(*options_.speculation.draft, n_vocab, options_.kv_type, options_.kv_block_tokens,
                     cache_.n_blocks());
  }
  end_of_generation_.resize(static_cast<size_t>(n_vocab));
  for (int32_t t = 0; t < n_vocab; ++t) end_of_generation_[static_cast<size_t>(t)] = tokenizer.IsEndOfGeneration(t);
  bos_id_ = tokenizer.bos_id();
  PublishStats();
}

Engine::~Engine() { Stop(/*cancel_running=*/true); }

std::shared_ptr<RequestStream> Engine::Submit(RequestParams params) {
  const ModelConfig& c = model_.config();
  const int64_t n_prompt = static_cast<int64_t>(params.prompt.size());
  if (n_prompt == 0) Fail("the prompt has no tokens");
  for (TokenId t : params.prompt)
    if (t < 0 || t >= c.n_vocab) Fail("prompt token {} is outside the vocabulary [0, {})", t, c.n_vocab);
  if (n_prompt >= c.n_ctx_train)
    Fail("the prompt has {} tokens but the model's context holds {}, leaving no room to generate", n_prompt,
         c.n_ctx_train);
  if (cache_.BlocksFor(n_prompt + 1) > cache_.n_blocks())
    Fail("the prompt needs {} KV blocks of {} tokens but the whole KV pool has {}: it can never run; raise --kv-memory",
         cache_.BlocksFor(n_prompt + 1), options_.kv_block_tokens, cache_.n_blocks());
  if (params.max_new_tokens < 1) Fail("max_tokens must be at least 1, got {}", params.max_new_tokens);
  params.max_new_tokens = std::min(params.max_new_tokens, c.n_ctx_train - n_prompt);

  auto seq = std::make_unique<Sequence>();
  seq->sampler.emplace(params.sampling, static_cast<int32_t>(c.n_vocab));  // validates the sampling fields
  if (params.grammar) {
    seq->masker = MaskerFor(params.grammar);
    try {
      seq->matcher.emplace(params.grammar);
    } catch (const Error& e) {  // its first parses already past the bounds (grammar::kMaxStacks)
      throw GrammarRefusedError(e.what());
    }
    seq->grammar_strips_first_space = params.text_starts_fresh;
  }
  seq->tokens = params.prompt;
  seq->n_prompt = n_prompt;
  seq->draft_limit = options_.speculation.num_tokens;
  seq->params = std::move(params);
  std::shared_ptr<RequestStream> stream;
  {
    std::lock_guard<std::mutex> lock(inbox_mutex_);
    if (!fatal_error_.empty()) throw EngineStoppedError(fatal_error_);
    if (!accepting_) throw EngineStoppedError("the engine is shutting down");
    if (queued_.load() >= options_.max_waiting)
      throw QueueFullError(fmt::format("{} requests are already waiting; retry later", queued_.load()));
    seq->id = next_id_++;
    stream = std::make_shared<RequestStream>(seq->id);
    seq->arrival = Clock::now();
    stream->MarkArrival(seq->arrival, n_prompt);
    seq->stream = stream;
    inbox_.push_back(std::move(seq));
    ++queued_;
  }
  inbox_changed_.notify_all();
  return stream;
}

void Engine::TakeInbox() {
  const size_t first_new = waiting_.size();
  {
    std::lock_guard<std::mutex> lock(inbox_mutex_);
    for (auto& seq : inbox_) waiting_.push_back(std::move(seq));
    inbox_.clear();
  }
  if (!observer_) return;
  for (size_t i = first_new; i < waiting_.size(); ++i) {
    const Sequence& seq = *waiting_[i];
    observer_->OnQueued(seq.id, seq.n_prompt, seq.arrival);
  }
}

void Engine::Finish(Sequence& seq, FinishKind kind, const std::string& error, bool request_fault) {
  // Everything a client could look at next (KV blocks, gauges, histograms) is
  // settled before the stream tells it the request is over.
  const int64_t kv_blocks = observer_ ? cache_.SequenceBlocks(seq.id) : 0;
  cache_.Free(seq.id);
  if (drafter_) drafter_->Free(seq.id);
  seq.finished = true;
  ++counters_.finished;
  // The stats before the finish is counted: a scrape of /metrics that sees
  // the request finished must see its blocks back too.
  PublishStats();
  const Clock::time_point now = Clock::now();
  if (metrics_ || observer_) {
    RequestTrace trace = seq.stream->trace();
    trace.MarkFinish(now, kind);
    if (metrics_) metrics_->ObserveFinished(Summarize(trace));
    if (observer_) observer_->OnFinished(seq.id, trace, kv_blocks);
  }
  seq.stream->Finish(kind, now, error, request_fault);
}

void Engine::DropCancelled() {
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if ((*it)->stream->cancel_requested()) {
      --queued_;
      Finish(**it, (*it)->stream->cancel_kind());
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  // Take the cancelled ones out of running_ first, then finish them: Finish
  // publishes stats, which walks running_, so it must not run while running_
  // is being erased from (std::erase_if leaves moved-from holes mid-way).
  std::vector<std::unique_ptr<Sequence>> cancelled;
  for (auto& seq : running_)
    if (seq->stream->cancel_requested()) cancelled.push_back(std::move(seq));
  std::erase(running_, nullptr);
  for (auto& seq : cancelled) Finish(*seq, seq->stream->cancel_kind());
}

void Engine::Preempt(Sequence& seq) {
  // Recompute: give every block back; the tokens so far become the prompt of
  // a later prefill (prefix caching may still hold some of its blocks).
  cache_.Free(seq.id);
  if (drafter_) drafter_->Free(seq.id);
  seq.n_computed = 0;
  ++counters_.preemptions;
  auto it = std::find_if(running_.begin(), running_.end(), [&](auto& p) { return p.get() == &seq; });
  RIDGE_CHECK(it != running_.end());
  waiting_.push_front(std::move(*it));
  running_.erase(it);
  ++queued_;
}

void Engine::UnscheduleFromBatch(Sequence& seq, Batch& batch, std::vector<Sequence*>& fed) {
  auto it = std::find(fed.begin(), fed.end(), &seq);
  if (it == fed.end()) return;
  fed.erase(it);
  Batch kept;
  for (int64_t t = 0; t < batch.size(); ++t) {
    size_t i = static_cast<size_t>(t);
    if (batch.seq_ids[i] != seq.id) kept.Add(batch.tokens[i], batch.positions[i], batch.seq_ids[i], batch.want_logits[i]);
  }
  batch = std::move(kept);
}

bool Engine::Speculates(const Sequence& seq) const {
  return options_.speculation.enabled() && !seq.matcher;
}

void Engine::AddDrafts(Batch& batch, const std::vector<Sequence*>& fed) {
  const SpeculationOptions& spec = options_.speculation;
  // batch.size() decode tokens, one per sequence, are already in. Drafts
  // take what the step's token budget leaves, and none once the batch
  // alone is large enough to make decode compute bound.
  int64_t budget = options_.max_batch_tokens - batch.size();
  if (spec.max_decode_tokens > 0) budget = std::min(budget, spec.max_decode_tokens - batch.size());
  batch.Clear();
  std::vector<DraftModel::Request> model_requests;
  std::vector<Sequence*> model_drafting;
  for (Sequence* seq : fed) {
    const int64_t length = static_cast<int64_t>(seq->tokens.size());
    seq->draft.clear();
    seq->draft_probs.clear();
    // Room: the step emits at most draft + 1 tokens, within max_new_tokens.
    const int64_t limit = spec.adaptive ? seq->draft_limit : spec.num_tokens;
    const int64_t room = std::min({limit, seq->params.max_new_tokens - seq->n_generated - 1, budget});
    if (!Speculates(*seq) || room <= 0) continue;
    // A draft never preempts anyone: without free blocks it is dropped.
    if (drafter_) {
      // The target's blocks for the whole draft first (a draft model always fills its room).
      if (!cache_.Reserve(seq->id, length + room)) continue;
      model_requests.push_back(
          {.seq = seq->id, .tokens = seq->tokens, .n_draft = room, .sampler = &*seq->sampler, .draft = {}, .probs = {}});
      model_drafting.push_back(seq);
      budget -= room;
      continue;
    }
    seq->draft = ProposeByPromptLookup(seq->tokens, spec.ngram_min, spec.ngram_max, room);
    const int64_t n_draft = static_cast<int64_t>(seq->draft.size());
    if (n_draft > 0 && !cache_.Reserve(seq->id, length + n_draft)) seq->draft.clear();
    budget -= static_cast<int64_t>(seq->draft.size());
  }
  if (!model_requests.empty()) ProposeByDraftModel(model_requests, model_drafting);
  for (Sequence* seq : fed) {
    const int64_t length = static_cast<int64_t>(seq->tokens.size());
    batch.Add(seq->tokens.back(), length - 1, seq->id, true);
    for (size_t i = 0; i < seq->draft.size(); ++i)
      batch.Add(seq->draft[i], length + static_cast<int64_t>(i), seq->id, true);
  }
}

void Engine::ProposeByDraftModel(std::vector<DraftModel::Request>& requests, const std::vector<Sequence*>& drafting) {
  try {
    drafter_->Propose(requests, pool_);
  } catch (const std::bad_alloc&) {
    throw;  // out of memory: Step dies
  } catch (const LinkError&) {
    throw;  // the other ranks of a split model are gone: so is every later step
  } catch (const std::exception& e) {
    // Speculation is an optimisation: the step goes on without drafts, and
    // the draft's cache forgets these sequences (their K/V may be half-written).
    std::fprintf(stderr, "ridge engine: the draft model's pass failed: %s; decoding this step without drafts\n",
                 e.what());
    for (DraftModel::Request& r : requests) {
      drafter_->Free(r.seq);
      r.draft.clear();
      r.probs.clear();
    }
  }
  for (size_t i = 0; i < drafting.size(); ++i) {
    Sequence& seq = *drafting[i];
    seq.draft = std::move(requests[i].draft);
    seq.draft_probs = std::move(requests[i].probs);
    // Give back the target blocks reserved for draft positions that got no token.
    cache_.Truncate(seq.id, static_cast<int64_t>(seq.tokens.size() + seq.draft.size()));
  }
}

void Engine::ScheduleDecode(Batch& batch, std::vector<Sequence*>& fed) {
  // Sequences with exactly one token to feed, oldest admission first. A
  // sequence that needs a new block when none is left preempts the most
  // recently admitted sequence (possibly itself) until one is.
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence* seq = running_[i].get();
    if (seq->pending() != 1) continue;
    const int64_t length = static_cast<int64_t>(seq->tokens.size());
    bool preempted_itself = false;
    while (!cache_.Reserve(seq->id, length)) {
      Sequence* victim = running_.back().get();
      if (victim == seq && running_.size() == 1) {
        // Alone and still out of blocks: the pool cannot hold this sequence any longer.
        Finish(*seq, FinishKind::kLength);
        running_.clear();
        return;
      }
      UnscheduleFromBatch(*victim, batch, fed);
      Preempt(*victim);
      if (victim == seq) {
        preempted_itself = true;
        break;
      }
    }
    if (preempted_itself) return;  // it was the last in admission order: nobody after it
    batch.Add(seq->tokens.back(), length - 1, seq->id, true);
    fed.push_back(seq);
  }
}

bool Engine::Admit(Sequence& seq) {
  // Prefix caching first: blocks already holding this prompt's prefix are shared.
  if (!cache_.HasSequence(seq.id)) seq.n_computed = cache_.AttachPrefix(seq.id, seq.tokens);
  if (!cache_.Reserve(seq.id, static_cast<int64_t>(seq.tokens.size()))) {
    cache_.Free(seq.id);  // give back any shared prefix blocks; try again later
    seq.n_computed = 0;
    return false;
  }
  seq.admitted_at = ++admission_counter_;
  if (!seq.scheduled_once) {
    seq.stream->MarkScheduled(Clock::now());
    seq.scheduled_once = true;
  }
  return true;
}

void Engine::SchedulePrefill(Batch& batch, std::vector<Sequence*>& fed, int64_t budget) {
  const int64_t initial_budget = budget;  // initial_budget - budget: this step's prefill tokens so far
  auto add_chunk = [&](Sequence& seq) {
    int64_t chunk = std::min(seq.pending(), budget);
    for (int64_t i = 0; i < chunk; ++i) {
      int64_t pos = seq.n_computed + i;
      bool last = pos == static_cast<int64_t>(seq.tokens.size()) - 1;
      batch.Add(seq.tokens[static_cast<size_t>(pos)], pos, seq.id, last);
    }
    budget -= chunk;
    fed.push_back(&seq);
  };
  for (auto& seq : running_) {
    if (budget == 0) return;
    if (seq->pending() > 1) add_chunk(*seq);
  }
  const int64_t join_below = options_.join_below_tokens;  // 0: no limit
  while (budget > 0 && !waiting_.empty() && static_cast<int64_t>(running_.size()) < options_.max_running &&
         (join_below == 0 || initial_budget - budget < join_below)) {
    Sequence& seq = *waiting_.front();
    if (!Admit(seq)) {
      if (running_.empty()) {
        // Even an empty pool cannot hold it (a preempted sequence that had grown to the whole pool).
        --queued_;
        Finish(seq, FinishKind::kLength);
        waiting_.pop_front();
        continue;
      }
      break;  // FIFO: the head waits for blocks, so nobody overtakes it
    }
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
    --queued_;
    add_chunk(*running_.back());
  }
}

void Engine::SampleAndStream(const std::vector<Sequence*>& fed, const std::vector<int64_t>& logit_rows) {
  const size_t n_vocab = static_cast<size_t>(model_.config().n_vocab);
  for (size_t i = 0; i < fed.size(); ++i) {
    Sequence& seq = *fed[i];
    if (logit_rows[i] < 0) continue;  // a prefill chunk that did not reach the end
    // [draft + 1, n_vocab]: the rows of tokens.back() and of each draft token.
    std::span<float> rows(logits_.data() + static_cast<size_t>(logit_rows[i]) * n_vocab,
                          (seq.draft.size() + 1) * n_vocab);
    std::vector<sampling::SampledToken> emitted;
    try {
      if (options_.fault_injector) options_.fault_injector({FaultPoint::Site::kSample, counters_.steps, {&seq.id, 1}});
      if (seq.matcher) {
        if (!ConstrainLogits(seq, rows)) continue;
        emitted.push_back(seq.sampler->SampleToken(rows, seq.tokens));
      } else {
        emitted = seq.sampler->VerifyDraft(rows, seq.draft, seq.tokens, seq.draft_probs);
      }
    } catch (const std::bad_alloc&) {
      throw;  // out of memory: not this request's fault, and nothing can be trusted to go on (Step dies)
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ridge engine: sampling request %lld failed: %s; ending it with an error\n",
                   static_cast<long long>(seq.id), e.what());
      Finish(seq, FinishKind::kError, fmt::format("internal error: sampling failed: {}", e.what()));
      continue;
    }
    if (seq.matcher && !AdvanceGrammar(seq, emitted.front().token)) continue;
    EmitTokens(seq, emitted);
  }
}

void Engine::EmitTokens(Sequence& seq, const std::vector<sampling::SampledToken>& emitted) {
  const int64_t n_draft = static_cast<int64_t>(seq.draft.size());
  if (n_draft > 0) {
    counters_.speculation.AddStep(n_draft, static_cast<int64_t>(emitted.size()));
    seq.stream->RecordSpecStep(n_draft, static_cast<int64_t>(emitted.size()));
    seq.draft_limit = NextDraftLimit(seq.draft_limit, n_draft, static_cast<int64_t>(emitted.size()) - 1,
                                     options_.speculation.num_tokens);
  }
  for (size_t j = 0; j < emitted.size(); ++j) {
    const TokenId token = emitted[j].token;
    const bool eog = (!seq.params.ignore_eos && end_of_generation_[static_cast<size_t>(token)]) ||
                     (seq.params.stop_at_bos && token == bos_id_);
    if (eog) {
      Finish(seq, FinishKind::kStop);
      return;
    }
    seq.tokens.push_back(token);
    ++seq.n_generated;
    // Every token but the last is an accepted draft token: its K/V were computed this step.
    if (j + 1 < emitted.size()) ++seq.n_computed;
    seq.stream->PushToken(emitted[j], Clock::now());
    if (seq.n_generated >= seq.params.max_new_tokens) {
      Finish(seq, FinishKind::kLength);
      return;
    }
  }
  if (n_draft > 0) {
    // Commit what was accepted (its full blocks become shareable), drop the rest.
    cache_.CommitTokens(seq.id, seq.tokens, seq.n_computed);
    cache_.Truncate(seq.id, seq.n_computed);
    // The draft model keeps the K/V of the accepted tokens it fed, not of the rejected ones.
    if (drafter_) drafter_->Rollback(seq.id, seq.tokens);
  }
  seq.draft.clear();
  seq.draft_probs.clear();
}

std::shared_ptr<grammar::TokenMasker> Engine::MaskerFor(const std::shared_ptr<const grammar::Grammar>& g) {
  std::lock_guard<std::mutex> lock(grammar_mutex_);
  if (!grammar_vocabulary_) grammar_vocabulary_ = std::make_shared<grammar::GrammarVocabulary>(tokenizer_);
  // A live masker keeps its grammar alive, so its address cannot be reused
  // by another grammar while the entry is valid.
  std::erase_if(maskers_, [](const auto& entry) { return entry.second.expired(); });
  if (auto it = maskers_.find(g.get()); it != maskers_.end()) return it->second.lock();
  auto masker = std::make_shared<grammar::TokenMasker>(g, grammar_vocabulary_);
  maskers_.emplace(g.get(), masker);
  return masker;
}

bool Engine::ConstrainLogits(Sequence& seq, std::span<float> logits) {
  const bool first = seq.n_generated == 0 && seq.grammar_strips_first_space;
  try {
    seq.masker->FillMask(*seq.matcher, first, &grammar_mask_);
  } catch (const Error& e) {  // the grammar too ambiguous to mask in bounded time or memory: this request's error
    Finish(seq, FinishKind::kError, e.what(), /*request_fault=*/true);
    return false;
  }
  if (grammar_mask_.Count() == 0) {
    const char* no_end = seq.matcher->CanEnd() ? ", and the vocabulary has no end-of-generation token" : "";
    Finish(seq, FinishKind::kError,
           fmt::format("the grammar allows no token of this vocabulary after {} generated tokens (the bytes it "
                       "needs next start no token{})",
                       seq.n_generated, no_end),
           /*request_fault=*/true);
    return false;
  }
  grammar::ApplyTokenMask(grammar_mask_, logits);
  return true;
}

bool Engine::AdvanceGrammar(Sequence& seq, TokenId token) {
  const bool first = seq.n_generated == 0 && seq.grammar_strips_first_space;
  bool accepted = false;
  try {
    accepted = seq.masker->AcceptToken(&*seq.matcher, token, first);
  } catch (const Error& e) {  // too many parses alive after the token (grammar::kMaxStacks)
    Finish(seq, FinishKind::kError, e.what(), /*request_fault=*/true);
    return false;
  }
  if (!accepted) {
    // The mask made this impossible: a bug, reported as this request's error.
    Finish(seq, FinishKind::kError, fmt::format("internal error: the sampled token {} is not allowed by the grammar", token));
    return false;
  }
  if (end_of_generation_[static_cast<size_t>(token)]) {
    Finish(seq, FinishKind::kStop);  // the sentence is complete: nothing more may follow, ignore_eos or not
    return false;
  }
  return true;
}

bool Engine::RunForward(const Batch& batch, const std::vector<Sequence*>& fed, int64_t n_logit_rows) {
  try {
    if (options_.fault_injector) {
      std::vector<RequestId> ids;
      for (const Sequence* seq : fed) ids.push_back(seq->id);
      options_.fault_injector({FaultPoint::Site::kForward, counters_.steps, ids});
    }
    logits_.resize(static_cast<size_t>(n_logit_rows * model_.config().n_vocab));
    model_.Forward(batch, cache_, logits_.data(), pool_);
    consecutive_batch_faults_ = 0;
    return true;
  } catch (const std::bad_alloc&) {
    throw;  // out of memory: Step dies
  } catch (const LinkError&) {
    throw;  // the other ranks of a split model are gone: so is every later step
  } catch (const std::exception& e) {
    // The positions this pass wrote are not committed (no block of theirs
    // became shareable), and Finish frees them: the cache stays consistent.
    std::fprintf(stderr, "ridge engine: the forward pass of step %lld failed: %s; "
                 "ending its %zu requests with an error\n",
                 static_cast<long long>(counters_.steps), e.what(), fed.size());
    const std::string error = fmt::format("internal error: the forward pass failed: {}", e.what());
    for (Sequence* seq : fed) Finish(*seq, FinishKind::kError, error);
    if (++consecutive_batch_faults_ >= kMaxConsecutiveBatchFaults)
      Fail("{} forward passes failed in a row; the last: {}", consecutive_batch_faults_, e.what());
    return false;
  }
}

bool Engine::Step() {
  if (failed_.load()) return false;
  // The last line of defence: a throw that RunForward and SampleAndStream did
  // not take as one batch's or one request's fault leaves the engine unusable.
  try {
    return StepOnce();
  } catch (const std::exception& e) {
    Die(e.what());
  } catch (...) {
    Die("an exception that is not a std::exception");
  }
  return false;
}

bool Engine::StepOnce() {
  const Clock::time_point start = Clock::now();
  TakeInbox();
  DropCancelled();
  Batch batch;
  std::vector<Sequence*> fed;
  ScheduleDecode(batch, fed);
  if (options_.speculation.enabled()) AddDrafts(batch, fed);
  const int64_t n_decode = batch.size();
  int64_t prefill_budget = std::max<int64_t>(0, options_.max_batch_tokens - n_decode);
  if (n_decode > 0 && options_.max_prefill_tokens_while_decoding > 0)
    prefill_budget = std::min(prefill_budget, options_.max_prefill_tokens_while_decoding);
  SchedulePrefill(batch, fed, prefill_budget);
  if (batch.size() == 0) {
    PublishStats();
    OfferSnapshot();
    return !running_.empty() || !waiting_.empty();
  }
  // Logit rows follow batch order of want_logits; map each fed sequence to
  // its first row (a speculating sequence's rows follow it, one per draft token).
  std::vector<int64_t> logit_rows(fed.size(), -1);
  int64_t row = 0;
  for (int64_t t = 0; t < batch.size(); ++t) {
    if (!batch.want_logits[static_cast<size_t>(t)]) continue;
    for (size_t i = 0; i < fed.size(); ++i)
      if (fed[i]->id == batch.seq_ids[static_cast<size_t>(t)] && logit_rows[i] < 0) logit_rows[i] = row;
    ++row;
  }
  std::vector<int64_t> context_before;
  if (observer_)
    for (const Sequence* seq : fed) context_before.push_back(seq->n_computed);
  const Clock::time_point forward_start = Clock::now();
  if (!RunForward(batch, fed, row)) {
    std::erase_if(running_, [](const std::unique_ptr<Sequence>& s) { return s->finished; });
    PublishStats();
    OfferSnapshot();
    return true;
  }
  const Clock::time_point forward_end = Clock::now();
  counters_.decode_tokens += n_decode;
  counters_.prefill_tokens += batch.size() - n_decode;
  ++counters_.steps;
  // The fed positions now hold K/V; full blocks become shareable. Draft
  // tokens are not the sequence's until verified: EmitTokens commits those accepted.
  for (Sequence* seq : fed) {
    int64_t fed_now = 0;
    for (int64_t t = 0; t < batch.size(); ++t) fed_now += batch.seq_ids[static_cast<size_t>(t)] == seq->id;
    seq->n_computed += fed_now - static_cast<int64_t>(seq->draft.size());
    cache_.CommitTokens(seq->id, seq->tokens, seq->n_computed);
  }
  SampleAndStream(fed, logit_rows);
  if (observer_) ReportStep(batch, fed, n_decode, context_before, start, forward_start, forward_end);
  std::erase_if(running_, [](const std::unique_ptr<Sequence>& s) { return s->finished; });
  PublishStats();
  OfferSnapshot();
  return true;
}

void Engine::ReportStep(const Batch& batch, const std::vector<Sequence*>& fed, int64_t n_decode,
                        const std::vector<int64_t>& context_before, Clock::time_point start,
                        Clock::time_point forward_start, Clock::time_point forward_end) {
  StepRecord r;
  r.step = counters_.steps;
  r.start = start;
  r.forward_start = forward_start;
  r.forward_end = forward_end;
  r.end = Clock::now();
  // ScheduleDecode fed the decode sequences first, one token each; the rest are prefill chunks.
  for (size_t i = 0; i < fed.size(); ++i) {
    const bool prefill = static_cast<int64_t>(i) >= n_decode;
    int64_t tokens = 1;
    if (prefill) {
      tokens = 0;
      for (int64_t t = 0; t < batch.size(); ++t) tokens += batch.seq_ids[static_cast<size_t>(t)] == fed[i]->id;
    }
    r.segments.push_back({fed[i]->id, prefill, tokens, context_before[i]});
  }
  observer_->OnStep(std::move(r));
}

void Engine::OfferSnapshot() {
  if (!observer_) return;
  const Clock::time_point now = Clock::now();
  if (!observer_->WantsSnapshot(now)) return;
  EngineSnapshot s;
  s.at = now;
  s.steps = counters_.steps;
  s.preemptions = counters_.preemptions;
  auto describe = [&](const Sequence& seq) {
    RequestSnapshot r;
    r.id = seq.id;
    r.n_prompt = seq.n_prompt;
    r.n_computed = seq.n_computed;
    r.n_generated = seq.n_generated;
    r.kv_blocks = cache_.SequenceBlocks(seq.id);
    r.arrival = seq.arrival;
    return r;
  };
  for (const auto& seq : running_)
    if (!seq->finished) s.running.push_back(describe(*seq));
  for (const auto& seq : waiting_) s.waiting.push_back(describe(*seq));
  s.kv = cache_.Accounting();
  s.kv_map = cache_.BlockMap();
  observer_->OnSnapshot(std::move(s));
}

void Engine::RunUntilIdle() {
  while (Step()) {
  }
}

void Engine::PublishStats() {
  EngineStats s = counters_;
  s.running = std::count_if(running_.begin(), running_.end(), [](const auto& seq) { return !seq->finished; });
  s.waiting = queued_.load();
  s.kv = cache_.Accounting();
  if (drafter_) s.draft_kv = drafter_->cache().Accounting();
  int64_t contiguous_slots = 0;
  for (const auto& seq : running_)
    if (!seq->finished) contiguous_slots += seq->max_length();
  s.contiguous_utilization =
      contiguous_slots == 0 ? 1.0 : static_cast<double>(s.kv.tokens_stored) / static_cast<double>(contiguous_slots);
  if (metrics_) {
    metrics_->SetRunning(s.running);
    metrics_->SetWaiting(s.waiting);
    metrics_->SetKvUsage(static_cast<double>(s.kv.blocks_used) / static_cast<double>(s.kv.blocks_total));
  }
  std::lock_guard<std::mutex> lock(stats_mutex_);
  stats_ = s;
}

EngineStats Engine::Stats() const {
  std::lock_guard<std::mutex> lock(stats_mutex_);
  return stats_;
}

std::string Engine::fatal_error() const {
  std::lock_guard<std::mutex> lock(inbox_mutex_);
  return fatal_error_;
}

void Engine::EndEverything(FinishKind kind, const std::string& error) {
  TakeInbox();
  for (auto& seq : waiting_) {
    --queued_;
    Finish(*seq, kind, error);
  }
  waiting_.clear();
  // A fault mid-step may leave finished sequences in running_ (not yet erased).
  for (auto& seq : running_)
    if (!seq->finished) Finish(*seq, kind, error);
  running_.clear();
  PublishStats();
}

void Engine::Die(const std::string& reason) {
  const std::string message = fmt::format("the engine stopped after a fault it cannot recover from: {}", reason);
  std::fprintf(stderr, "ridge engine: %s\n", message.c_str());
  {
    std::lock_guard<std::mutex> lock(inbox_mutex_);
    accepting_ = false;
    fatal_error_ = message;
  }
  failed_ = true;
  try {
    EndEverything(FinishKind::kError, "internal error: " + message);
  } catch (const std::exception& e) {
    // Out of memory again, most likely: the fatal handler still runs, and the
    // process exiting closes the connections of requests left unfinished.
    std::fprintf(stderr, "ridge engine: could not end every request cleanly: %s\n", e.what());
  }
  if (fatal_handler_) fatal_handler_(message);
}

void Engine::KeepLinkAlive() {
  if (failed_.load()) return;
  try {
    model_.KeepLinkAlive();
  } catch (const std::exception& e) {
    Die(e.what());
  }
}

void Engine::Start() {
  RIDGE_CHECK(!thread_.joinable());
  stop_ = false;
  thread_ = std::thread([this] {
    while (!stop_.load() && !failed_.load()) {
      const bool busy = Step();
      KeepLinkAlive();
      if (busy) continue;
      std::unique_lock<std::mutex> lock(inbox_mutex_);
      inbox_changed_.wait_for(lock, std::chrono::milliseconds(50), [&] { return !inbox_.empty() || stop_.load(); });
    }
    if (failed_.load()) return;  // Die has ended every request
    if (cancel_on_stop_.load()) {
      EndEverything(FinishKind::kAbort);
    } else {
      RunUntilIdle();
    }
  });
}

void Engine::Stop(bool cancel_running) {
  {
    std::lock_guard<std::mutex> lock(inbox_mutex_);
    accepting_ = false;
  }
  if (!thread_.joinable()) {
    if (cancel_running && !failed_.load()) EndEverything(FinishKind::kAbort);
    return;
  }
  cancel_on_stop_ = cancel_running;
  stop_ = true;
  inbox_changed_.notify_all();
  thread_.join();
}

}  // namespace ridge
