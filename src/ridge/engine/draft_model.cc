#include "ridge/engine/draft_model.h"

#include <algorithm>

#include "ridge/base/error.h"

namespace ridge {

void CheckDraftVocabulary(const Model& draft, const Tokenizer& target) {
  const int64_t n_draft = draft.config().n_vocab;
  if (n_draft != target.n_vocab())
    Fail("the draft model's vocabulary has {} tokens but the target's has {}: a draft model must share the target's "
         "vocabulary", n_draft, target.n_vocab());
  Tokenizer draft_tokenizer = [&] {
    try {
      return Tokenizer::FromGguf(draft.file());
    } catch (const Error& e) {
      Fail("the draft model's vocabulary: {}", e.what());
    }
  }();
  for (int32_t id = 0; id < target.n_vocab(); ++id) {
    const std::string draft_piece = draft_tokenizer.TokenPiece(id);
    const std::string target_piece = target.TokenPiece(id);
    if (draft_piece != target_piece)
      Fail("the draft model's vocabulary differs from the target's at token {} ('{}' against '{}'): a draft model "
           "must share the target's vocabulary", id, draft_piece, target_piece);
  }
}

DraftModel::DraftModel(Model& draft, int64_t n_vocab, GgmlType kv_type, int64_t block_tokens, int64_t n_blocks)
    : model_(draft), cache_(draft.KvShape(kv_type, block_tokens), n_blocks) {
  if (draft.config().n_vocab != n_vocab)
    Fail("the draft model's vocabulary has {} tokens but the target's has {}: a draft model must share the target's "
         "vocabulary", draft.config().n_vocab, n_vocab);
  cache_.set_prefix_caching(false);
}

void DraftModel::Propose(std::span<Request> requests, ThreadPool& pool) {
  const size_t n_vocab = static_cast<size_t>(model_.config().n_vocab);
  const int64_t n_ctx = model_.config().n_ctx_train;
  struct Drafting {
    Request* request;
    int64_t length;   // tokens in the sequence
    int64_t n_draft;  // tokens it will get
  };
  std::vector<Drafting> drafting;
  Batch batch;
  for (Request& r : requests) {
    r.draft.clear();
    r.probs.clear();
    const int64_t length = static_cast<int64_t>(r.tokens.size());
    RIDGE_CHECK(length >= 1 && r.n_draft >= 1 && r.sampler != nullptr);
    Rollback(r.seq, r.tokens);
    // Fed this step: positions up to length + n_draft - 2 (the last draft token is never fed).
    const int64_t n_draft = std::min(r.n_draft, n_ctx - length + 1);
    if (n_draft < 1 || !cache_.Reserve(r.seq, length + n_draft - 1)) continue;
    std::vector<TokenId>& fed = fed_[r.seq];
    // The last token is fed again if the cache already holds it: its logits give the first draft token.
    if (static_cast<int64_t>(fed.size()) == length) fed.pop_back();
    for (int64_t pos = static_cast<int64_t>(fed.size()); pos < length; ++pos)
      batch.Add(r.tokens[static_cast<size_t>(pos)], pos, r.seq, pos == length - 1);
    fed.assign(r.tokens.begin(), r.tokens.end());
    if (!r.sampler->params().greedy()) r.probs.resize(static_cast<size_t>(n_draft) * n_vocab);
    drafting.push_back({&r, length, n_draft});
  }
  std::vector<float> point_mass_q(n_vocab);  // DraftToken's q for greedy requests, left untouched
  while (batch.size() > 0) {
    // One logits row per sequence in `batch`, in `drafting` order.
    logits_.resize(static_cast<size_t>(batch.n_logits()) * n_vocab);
    model_.Forward(batch, cache_, logits_.data(), pool);
    batch.Clear();
    size_t row = 0;
    for (Drafting& d : drafting) {
      Request& r = *d.request;
      const int64_t drafted = static_cast<int64_t>(r.draft.size());
      if (drafted == d.n_draft) continue;  // done in an earlier pass
      const std::span<const float> logits(logits_.data() + row++ * n_vocab, n_vocab);
      const std::span<float> q = r.probs.empty() ? std::span<float>(point_mass_q)
                                                 : std::span<float>(r.probs).subspan(static_cast<size_t>(drafted) * n_vocab, n_vocab);
      r.draft.push_back(r.sampler->DraftToken(logits, q));
      if (drafted + 1 == d.n_draft) continue;
      // Feed it for the next position's logits.
      batch.Add(r.draft.back(), d.length + drafted, r.seq, true);
      fed_[r.seq].push_back(r.draft.back());
    }
  }
  for (const Drafting& d : drafting)
    cache_.SetStoredTokens(d.request->seq, static_cast<int64_t>(fed_[d.request->seq].size()));
}

bool DraftModel::Prefill(SeqId seq, std::span<const TokenId> tokens, ThreadPool& pool) {
  Rollback(seq, tokens);
  const int64_t length = static_cast<int64_t>(tokens.size());
  if (length > model_.config().n_ctx_train || !cache_.Reserve(seq, length)) return false;
  std::vector<TokenId>& fed = fed_[seq];
  Batch batch;
  for (int64_t pos = static_cast<int64_t>(fed.size()); pos < length; ++pos)
    batch.Add(tokens[static_cast<size_t>(pos)], pos, seq, pos == length - 1);
  if (batch.size() == 0) return true;
  logits_.resize(static_cast<size_t>(model_.config().n_vocab));
  model_.Forward(batch, cache_, logits_.data(), pool);
  fed.assign(tokens.begin(), tokens.end());
  cache_.SetStoredTokens(seq, length);
  return true;
}

void DraftModel::Rollback(SeqId seq, std::span<const TokenId> tokens) {
  auto it = fed_.find(seq);
  if (it == fed_.end()) return;
  std::vector<TokenId>& fed = it->second;
  const auto kept = std::mismatch(fed.begin(), fed.end(), tokens.begin(), tokens.end()).first - fed.begin();
  fed.resize(static_cast<size_t>(kept));
  cache_.SetStoredTokens(seq, kept);
  cache_.Truncate(seq, kept);
}

void DraftModel::Free(SeqId seq) {
  fed_.erase(seq);
  cache_.Free(seq);
}

}  // namespace ridge
