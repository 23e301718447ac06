#include "ridge/metrics/request_trace.h"

#include "ridge/base/error.h"

namespace ridge {

const char* FinishKindName(FinishKind reason) {
  switch (reason) {
    case FinishKind::kNone: return "none";
    case FinishKind::kStop: return "stop";
    case FinishKind::kLength: return "length";
    case FinishKind::kAbort: return "abort";
    case FinishKind::kError: return "error";
  }
  return "?";
}

RequestTrace::RequestTrace(int64_t n_prompt_tokens) : n_prompt_tokens_(n_prompt_tokens) {
  if (n_prompt_tokens < 0) Fail("request trace: negative prompt token count {}", n_prompt_tokens);
}

void RequestTrace::CheckOpen(const char* what, Clock::time_point t) const {
  if (!arrival_) Fail("request trace: {} marked before the arrival", what);
  if (finished()) Fail("request trace: {} marked after the finish", what);
  if (t < last_mark_)
    Fail("request trace: {} at {:.3f} ms is earlier than the previous mark", what, MillisBetween(last_mark_, t));
}

void RequestTrace::MarkArrival(Clock::time_point t) {
  if (arrival_) Fail("request trace: arrival marked twice");
  arrival_ = t;
  last_mark_ = t;
}

void RequestTrace::MarkScheduled(Clock::time_point t) {
  CheckOpen("scheduling", t);
  if (scheduled_) return;
  if (!token_times_.empty()) Fail("request trace: first scheduling marked after a token");
  scheduled_ = t;
  last_mark_ = t;
}

void RequestTrace::MarkToken(Clock::time_point t, int64_t n_tokens) {
  CheckOpen("token", t);
  if (n_tokens < 1) Fail("request trace: a token mark must carry at least 1 token, got {}", n_tokens);
  token_times_.push_back(t);
  n_output_tokens_ += n_tokens;
  last_mark_ = t;
}

void RequestTrace::MarkFinish(Clock::time_point t, FinishKind reason) {
  CheckOpen("finish", t);
  if (reason == FinishKind::kNone) Fail("request trace: finish reason 'none' is not a reason");
  finish_ = t;
  finish_kind_ = reason;
  last_mark_ = t;
}

RequestMetrics Summarize(const RequestTrace& trace) {
  if (!trace.arrived()) Fail("request trace: cannot summarize a request that never arrived");
  if (!trace.finished()) Fail("request trace: cannot summarize an unfinished request");
  const Clock::time_point arrival = *trace.arrival();
  const Clock::time_point finish = *trace.finish();
  const auto& tokens = trace.token_times();

  RequestMetrics m;
  m.finish_kind = trace.finish_kind();
  m.n_prompt_tokens = trace.n_prompt_tokens();
  m.n_output_tokens = trace.n_output_tokens();
  m.succeeded = (m.finish_kind == FinishKind::kStop || m.finish_kind == FinishKind::kLength) &&
                m.n_output_tokens > 0;
  m.e2e_ms = MillisBetween(arrival, finish);
  m.speculation = trace.speculation();
  if (trace.scheduled()) m.queue_ms = MillisBetween(arrival, *trace.scheduled());
  if (!tokens.empty()) {
    m.ttft_ms = MillisBetween(arrival, tokens.front());
    m.decode_ms = MillisBetween(tokens.front(), finish);
    if (trace.scheduled()) m.prefill_ms = MillisBetween(*trace.scheduled(), tokens.front());
    if (m.n_output_tokens > 1) m.tpot_ms = (m.e2e_ms - m.ttft_ms) / static_cast<double>(m.n_output_tokens - 1);
    m.itl_ms.reserve(tokens.size() - 1);
    for (size_t i = 1; i < tokens.size(); ++i) m.itl_ms.push_back(MillisBetween(tokens[i - 1], tokens[i]));
  }
  return m;
}

}  // namespace ridge
