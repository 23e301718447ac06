#include "ridge/server/generation_session.h"

namespace ridge::server {

GenerationSession::GenerationSession(Engine& engine, const Tokenizer& tokenizer, GenerationSpec spec)
    : detokenizer_(tokenizer, spec.text_starts_fresh), stop_(std::move(spec.stop)) {
  n_prompt_tokens_ = static_cast<int64_t>(spec.prompt.size());
  RequestParams params;
  params.prompt = std::move(spec.prompt);
  params.max_new_tokens = spec.max_new_tokens;
  params.sampling = spec.sampling;
  params.ignore_eos = spec.ignore_eos;
  params.grammar = std::move(spec.grammar);
  params.text_starts_fresh = spec.text_starts_fresh;
  // A model that emits BOS has started a new document: end the answer there
  // (llama2.c's stories do this), unless the client asked to ignore EOS.
  params.stop_at_bos = !spec.ignore_eos;
  stream_ = engine.Submit(std::move(params));
}

GenerationSession::~GenerationSession() {
  if (!finished_) stream_->Cancel(FinishKind::kAbort);
}

void GenerationSession::Abort() {
  if (!finished_) stream_->Cancel(FinishKind::kAbort);
}

void GenerationSession::Stop() {
  if (!finished_) stream_->Cancel(FinishKind::kStop);
}

bool GenerationSession::Next(GenerationDelta& out, std::chrono::milliseconds timeout) {
  if (finished_) return false;
  StreamUpdate update;
  if (!stream_->Wait(update, timeout)) return false;
  out = GenerationDelta{};
  for (sampling::SampledToken& token : update.tokens) {
    ++n_completion_tokens_;
    std::string piece = detokenizer_.Push(token.token);
    out.text += stop_.Push(piece);
    out.tokens.push_back(std::move(token));
    if (stop_.stopped()) {
      // Ask the engine to end it; tokens it sampled meanwhile are dropped.
      stream_->Cancel(FinishKind::kStop);
      out.finished = true;
      out.finish_kind = FinishKind::kStop;
      finished_ = true;
      return true;
    }
  }
  if (update.finished) {
    out.finished = true;
    out.finish_kind = update.finish_kind;
    out.error = update.error;
    out.request_fault = update.request_fault;
    if (update.finish_kind == FinishKind::kStop || update.finish_kind == FinishKind::kLength) {
      // The held-back tail can no longer become a stop string.
      out.text += stop_.Push(detokenizer_.Flush());
      out.text += stop_.Flush();
      if (stop_.stopped()) out.finish_kind = FinishKind::kStop;
    }
    finished_ = true;
  }
  return true;
}

}  // namespace ridge::server
