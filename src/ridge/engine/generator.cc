#include "ridge/engine/generator.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "ridge/base/error.h"
#include "ridge/engine/draft_model.h"
#include "ridge/grammar/grammar_vocabulary.h"
#include "ridge/grammar/matcher.h"
#include "ridge/grammar/token_masker.h"
#include "ridge/sampling/sampler.h"
#include "ridge/tokenizer/streaming_detokenizer.h"

namespace ridge {

const char* FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kEndOfGeneration: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kStopString: return "stop";
    case FinishReason::kContextFull: return "length";
  }
  return "?";
}

double GenerationResult::TpotMs() const {
  if (output_tokens.size() < 2) return 0.0;
  return (e2e_ms - ttft_ms) / static_cast<double>(output_tokens.size() - 1);
}

double GenerationResult::PrefillTokensPerSecond() const {
  return prefill_ms > 0 ? static_cast<double>(prompt_tokens.size()) / (prefill_ms / 1000.0) : 0.0;
}

double GenerationResult::DecodeTokensPerSecond() const {
  if (output_tokens.size() < 2 || decode_ms <= 0) return 0.0;
  return static_cast<double>(output_tokens.size() - 1) / (decode_ms / 1000.0);
}

GenerationResult Generator::Generate(std::string_view prompt, const GenerateOptions& options,
                                     const TextCallback& on_text) {
  Clock::time_point start = Clock::now();
  return GenerateFromTokens(tokenizer_.Encode(prompt, tokenizer_.add_bos(), /*parse_special=*/true), options, on_text,
                            start);
}

namespace {

// Watches the generated text for stop strings. Text that could still become
// the start of a stop string is held back so it is never streamed and then retracted.
class StopStringFilter {
 public:
  explicit StopStringFilter(const std::vector<std::string>& stops) : stops_(stops) {}

  // Appends text; returns what is now safe to emit. Sets `stopped` when a stop string appeared.
  std::string Push(std::string_view text, bool& stopped) {
    held_ += text;
    size_t cut = std::string::npos;
    for (const std::string& s : stops_)
      if (!s.empty()) cut = std::min(cut, held_.find(s));
    if (cut != std::string::npos) {
      stopped = true;
      std::string out = held_.substr(0, cut);
      held_.clear();
      return out;
    }
    size_t keep = 0;  // longest suffix of held_ that is a proper prefix of a stop string
    for (const std::string& s : stops_)
      for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; --n)
        if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
          keep = n;
          break;
        }
    std::string out = held_.substr(0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
  }
  std::string Flush() { return std::exchange(held_, std::string()); }

 private:
  const std::vector<std::string>& stops_;
  std::string held_;
};

}  // namespace

GenerationResult Generator::GenerateFromTokens(std::vector<TokenId> prompt_tokens, const GenerateOptions& options,
                                               const TextCallback& on_text, Clock::time_point start) {
  const ModelConfig& config = model_.config();
  if (prompt_tokens.empty()) Fail("the prompt is empty and the vocabulary has no BOS token to start from");
  if (static_cast<int64_t>(prompt_tokens.size()) >= config.n_ctx_train)
    Fail("the prompt has {} tokens but the model's context holds {}; nothing can be generated",
         prompt_tokens.size(), config.n_ctx_train);
  if (options.max_new_tokens < 1) Fail("max new tokens must be at least 1, got {}", options.max_new_tokens);

  GenerationResult result;
  result.prompt_tokens = std::move(prompt_tokens);
  const int64_t n_prompt = static_cast<int64_t>(result.prompt_tokens.size());
  const int64_t n_total = std::min(config.n_ctx_train, n_prompt + options.max_new_tokens);

  // Allocate: exactly the blocks this request can ever fill.
  KvCacheShape shape = model_.KvShape(options.kv_type, options.kv_block_tokens);
  PagedKvCache cache(shape, (n_total + shape.block_tokens - 1) / shape.block_tokens);
  const SeqId seq = 0;
  RIDGE_CHECK(cache.Reserve(seq, n_total));

  sampling::Sampler sampler(options.sampling, static_cast<int32_t>(config.n_vocab));
  StreamingDetokenizer detokenizer(tokenizer_, /*at_sequence_start=*/false);
  detokenizer.Push(result.prompt_tokens.back());  // context for the leading-space rule (after BOS); text discarded
  StopStringFilter stop_filter(options.stop_strings);
  std::vector<float> logits(static_cast<size_t>(config.n_vocab));
  std::vector<TokenId> history = result.prompt_tokens;

  // Constrained decoding: this request's own masker (and trie of the vocabulary).
  std::optional<grammar::TokenMasker> masker;
  std::optional<grammar::GrammarMatcher> matcher;
  grammar::TokenBitmask mask;
  if (options.grammar) {
    masker.emplace(options.grammar, std::make_shared<grammar::GrammarVocabulary>(tokenizer_));
    matcher.emplace(options.grammar);
  }
  // The detokenizer drops the first token's leading space after a BOS: so must the grammar.
  const bool first_token_strips_space = result.prompt_tokens.back() == tokenizer_.bos_id();

  // Prefill: the whole prompt in one pass; logits only for its last token.
  Batch batch;
  for (int64_t i = 0; i < n_prompt; ++i) batch.Add(history[static_cast<size_t>(i)], i, seq, i == n_prompt - 1);
  Clock::time_point prefill_start = Clock::now();
  model_.Forward(batch, cache, logits.data(), pool_);
  cache.SetStoredTokens(seq, n_prompt);
  result.prefill_ms = MillisBetween(prefill_start, Clock::now());

  const SpeculationOptions& spec = options.speculation;
  if (spec.enabled()) Validate(spec);
  const bool speculate = spec.enabled() && !matcher;
  // Draft-model speculation: the draft's own cache, with room for every
  // position this request can reach; the draft's prefill belongs to the prefill.
  std::optional<DraftModel> drafter;
  if (speculate && spec.method == SpeculationOptions::Method::kDraftModel) {
    drafter.emplace(*spec.draft, config.n_vocab, options.kv_type, options.kv_block_tokens, cache.n_blocks());
    drafter->Prefill(seq, std::span<const TokenId>(history).first(static_cast<size_t>(n_prompt - 1)), pool_);
    result.prefill_ms = MillisBetween(prefill_start, Clock::now());
  }
  std::vector<TokenId> draft;  // fed after the last token in the latest decode pass
  std::vector<float> draft_probs;  // [draft, n_vocab]: a draft model's q for each draft token (sampling only)
  int64_t draft_limit = spec.num_tokens;  // adaptive K
  Clock::time_point decode_start{};
  bool stopped = false;
  for (bool done = false; !done;) {
    // The tokens this pass gives: one sampled, or a verified draft's accepted prefix and one more.
    std::vector<TokenId> next;
    if (matcher) {
      const bool first_token = result.output_tokens.empty() && first_token_strips_space;
      masker->FillMask(*matcher, first_token, &mask);
      if (mask.Count() == 0) {
        Fail("the grammar allows no token of this vocabulary after {} generated tokens", result.output_tokens.size());
      }
      grammar::ApplyTokenMask(mask, logits);
      TokenId token = sampler.Sample(logits, history);
      if (!masker->AcceptToken(&*matcher, token, first_token)) {
        Fail("internal error: the sampled token {} is not allowed by the grammar", token);
      }
      next.push_back(token);
    } else {
      for (const sampling::SampledToken& t : sampler.VerifyDraft(logits, draft, history, draft_probs))
        next.push_back(t.token);
    }
    if (!draft.empty()) {
      result.speculation.AddStep(static_cast<int64_t>(draft.size()), static_cast<int64_t>(next.size()));
      draft_limit = NextDraftLimit(draft_limit, static_cast<int64_t>(draft.size()),
                                   static_cast<int64_t>(next.size()) - 1, spec.num_tokens);
    }
    for (size_t j = 0; j < next.size() && !done; ++j) {
      const TokenId token = next[j];
      if (result.output_tokens.empty()) {
        result.ttft_ms = MillisBetween(start, Clock::now());
        decode_start = Clock::now();
      }
      // Every token but the last is an accepted draft token, its K/V computed in the latest pass.
      if (j > 0) cache.SetStoredTokens(seq, static_cast<int64_t>(history.size()));
      if (tokenizer_.IsEndOfGeneration(token) || (options.stop_at_bos && token == tokenizer_.bos_id())) {
        result.finish_reason = FinishReason::kEndOfGeneration;
        done = true;
        break;
      }
      result.output_tokens.push_back(token);
      history.push_back(token);
      std::string text = stop_filter.Push(detokenizer.Push(token), stopped);
      result.text += text;
      if (on_text && !text.empty()) on_text(text);
      if (stopped) {
        result.finish_reason = FinishReason::kStopString;
        done = true;
      } else if (static_cast<int64_t>(result.output_tokens.size()) >= options.max_new_tokens) {
        result.finish_reason = FinishReason::kLength;
        done = true;
      } else if (static_cast<int64_t>(history.size()) >= n_total) {
        result.finish_reason = FinishReason::kContextFull;
        done = true;
      }
    }
    if (done) break;
    // The draft model keeps the K/V of the accepted tokens only.
    if (drafter && !draft.empty()) drafter->Rollback(seq, history);
    // Decode: the last token, and a draft to verify, appended to the KV cache.
    const int64_t position = static_cast<int64_t>(history.size()) - 1;
    draft.clear();
    draft_probs.clear();
    if (speculate) {
      // The pass emits at most draft + 1 tokens, within max_new_tokens and the reserved positions.
      const int64_t left = options.max_new_tokens - static_cast<int64_t>(result.output_tokens.size());
      const int64_t room =
          std::min({spec.adaptive ? draft_limit : spec.num_tokens, left - 1, n_total - 1 - position});
      if (room > 0 && drafter) {
        DraftModel::Request request{
            .seq = seq, .tokens = history, .n_draft = room, .sampler = &sampler, .draft = {}, .probs = {}};
        drafter->Propose({&request, 1}, pool_);
        draft = std::move(request.draft);
        draft_probs = std::move(request.probs);
      } else if (room > 0) {
        draft = ProposeByPromptLookup(history, spec.ngram_min, spec.ngram_max, room);
      }
    }
    batch.Clear();
    batch.Add(history.back(), position, seq, true);
    for (size_t i = 0; i < draft.size(); ++i) batch.Add(draft[i], position + 1 + static_cast<int64_t>(i), seq, true);
    logits.resize((draft.size() + 1) * static_cast<size_t>(config.n_vocab));
    model_.Forward(batch, cache, logits.data(), pool_);
    ++result.decode_passes;
    cache.SetStoredTokens(seq, position + 1);
  }
  if (!stopped) {
    std::string tail = stop_filter.Push(detokenizer.Flush(), stopped) + (stopped ? "" : stop_filter.Flush());
    result.text += tail;
    if (on_text && !tail.empty()) on_text(tail);
    if (stopped) result.finish_reason = FinishReason::kStopString;
  }
  Clock::time_point end = Clock::now();
  if (!result.output_tokens.empty()) result.decode_ms = MillisBetween(decode_start, end);
  result.kv = cache.Accounting();
  if (drafter) result.draft_kv = drafter->cache().Accounting();
  cache.Free(seq);
  result.e2e_ms = MillisBetween(start, Clock::now());
  if (result.output_tokens.empty()) result.ttft_ms = result.e2e_ms;
  return result;
}

}  // namespace ridge
