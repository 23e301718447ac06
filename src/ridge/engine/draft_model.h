#pragma once
// Draft-model speculation (vLLM's `draft_model` method, llama.cpp's
// speculative example): a second, smaller model with the same vocabulary
// proposes K tokens per sequence, one forward pass per drafted position for
// every speculating sequence at once, and the target verifies them all in
// its next pass (Sampler::VerifyDraft).
//
// The draft keeps its own paged KV cache (prefix caching off: it is cheap to
// recompute and its blocks never outlive a sequence's turn in the running
// set). For each sequence it remembers the tokens whose K/V it holds; a
// pass first feeds what the sequence gained since (the target's bonus or
// correction token, the whole prompt the first time), and Rollback drops the
// positions of rejected draft tokens, so the draft's cache always holds a
// prefix of the sequence.
//
//   step:  tokens t[0..n)           draft fed: catch-up chunk ... t[n-1] -> d0
//                                              d0 -> d1, ..., d[k-2] -> d[k-1]
//   target verifies t[n-1], d0..d[k-1]: accepts d0..d[a-1], adds its own token
//   rollback: the draft keeps t[0..n) + d0..d[min(a, k-1)-1]
#include <cstdint>
#include <map>
#include <span>
#include <vector>

#include "ridge/base/thread_pool.h"
#include "ridge/kv/paged_kv_cache.h"
#include "ridge/model/model.h"
#include "ridge/sampling/sampler.h"
#include "ridge/tokenizer/tokenizer.h"

namespace ridge {

// Throws ridge::Error unless `draft` has the target's vocabulary: the same
// size and the same text for every token (a draft token id must mean what
// the target means by it).
void CheckDraftVocabulary(const Model& draft, const Tokenizer& target);

class DraftModel {
 public:
  // n_blocks blocks of block_tokens positions in a KV cache of kv_type for
  // the draft model, which must outlive this. Throws ridge::Error when its
  // vocabulary size is not n_vocab (the target's).
  DraftModel(Model& draft, int64_t n_vocab, GgmlType kv_type, int64_t block_tokens, int64_t n_blocks);

  struct Request {
    SeqId seq = 0;
    std::span<const TokenId> tokens;    // the sequence so far; the draft follows tokens.back()
    int64_t n_draft = 0;                // tokens wanted, >= 1
    sampling::Sampler* sampler = nullptr;  // draws them with the request's settings (DraftToken)
    // Results: n_draft tokens, or none when the draft's KV pool or context has no room for them.
    std::vector<TokenId> draft;
    std::vector<float> probs;  // [draft.size(), n_vocab]: q of each token; empty when greedy
  };

  // Drafts for every request: a pass over each sequence's catch-up tokens,
  // then one pass per further drafted position over every sequence still
  // drafting, all on `pool`. A throw (a failed pass) may leave the requests'
  // draft K/V half-written: Free them.
  void Propose(std::span<Request> requests, ThreadPool& pool);
  // Feeds the draft what it lacks of `tokens` (a prompt, before the first
  // Propose), so that the first draft pass is short. False, feeding
  // nothing, when the draft's KV pool has no room.
  bool Prefill(SeqId seq, std::span<const TokenId> tokens, ThreadPool& pool);
  // Keeps the draft's K/V for the longest prefix of `tokens` it holds (after
  // verification: the accepted tokens), giving back the blocks past it.
  void Rollback(SeqId seq, std::span<const TokenId> tokens);
  // Gives back every block of `seq` (finished, cancelled, preempted). No-op for an unknown one.
  void Free(SeqId seq);

  const PagedKvCache& cache() const { return cache_; }

 private:
  Model& model_;
  PagedKvCache cache_;
  // Per sequence, the tokens whose K/V the cache holds, position by position.
  std::map<SeqId, std::vector<TokenId>> fed_;
  std::vector<float> logits_;  // [requests, n_vocab] of the latest pass
};

}  // namespace ridge
