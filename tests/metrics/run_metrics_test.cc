#include "ridge/metrics/run_metrics.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ridge/base/error.h"

namespace ridge {
namespace {

Clock::time_point At(double ms) {
  return Clock::time_point{} + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
}

RequestTrace Trace(int64_t n_prompt, double arrival_ms, std::vector<double> token_ms, FinishKind reason,
                   double finish_ms = -1) {
  RequestTrace t(n_prompt);
  t.MarkArrival(At(arrival_ms));
  for (double ms : token_ms) t.MarkToken(At(ms));
  t.MarkFinish(At(finish_ms >= 0 ? finish_ms : token_ms.back()), reason);
  return t;
}

// Four hand-computed requests:
//   A: ttft 200, tokens 200/250/300 → tpot 50, e2e 300, gaps {50, 50}, 10 prompt tokens
//   B: ttft 300 (arrives at 100), a single token → tpot 0, e2e 300, 20 prompt tokens
//   C: ttft 100, tokens 100/300/500/700 → tpot 200, e2e 700, gaps {200, 200, 200}, 30 prompt
//   D: aborted after 50 ms without a token (does not count)
std::vector<RequestTrace> FourRequests() {
  std::vector<RequestTrace> traces;
  traces.push_back(Trace(10, 0, {200, 250, 300}, FinishKind::kStop));
  traces.push_back(Trace(20, 100, {400}, FinishKind::kStop));
  traces.push_back(Trace(30, 0, {100, 300, 500, 700}, FinishKind::kLength));
  traces.push_back(Trace(40, 0, {}, FinishKind::kAbort, 50));
  return traces;
}

std::vector<RequestMetrics> Summaries(const std::vector<RequestTrace>& traces) {
  std::vector<RequestMetrics> out;
  for (const auto& t : traces) out.push_back(Summarize(t));
  return out;
}

TEST(Aggregate, HandComputedRun) {
  const RunMetrics run = Aggregate(Summaries(FourRequests()), 2.0);
  EXPECT_EQ(run.n_requests, 4);
  EXPECT_EQ(run.n_completed, 3);
  EXPECT_EQ(run.n_failed, 1);
  EXPECT_EQ(run.total_input_tokens, 60);  // the aborted request's prompt does not count
  EXPECT_EQ(run.total_output_tokens, 8);
  EXPECT_DOUBLE_EQ(run.request_throughput, 1.5);
  EXPECT_DOUBLE_EQ(run.output_throughput, 4.0);
  EXPECT_DOUBLE_EQ(run.total_token_throughput, 34.0);

  // TTFT {200, 300, 100}
  EXPECT_NEAR(run.ttft_ms.mean, 200, 1e-9);
  EXPECT_NEAR(run.ttft_ms.std, std::sqrt(20000.0 / 3.0), 1e-9);
  EXPECT_NEAR(run.ttft_ms.p50, 200, 1e-9);
  EXPECT_NEAR(run.ttft_ms.p99, 298, 1e-9);  // rank 1.98 between 200 and 300
  EXPECT_NEAR(run.ttft_ms.min, 100, 1e-9);
  // TPOT over requests with 2+ tokens only: {50, 200}
  EXPECT_EQ(run.tpot_ms.count, 2u);
  EXPECT_NEAR(run.tpot_ms.mean, 125, 1e-9);
  EXPECT_NEAR(run.tpot_ms.p90, 185, 1e-9);  // rank 0.9: 50 + 0.9 × 150
  // ITL pooled over every gap: {50, 50, 200, 200, 200}
  EXPECT_EQ(run.itl_ms.count, 5u);
  EXPECT_NEAR(run.itl_ms.mean, 140, 1e-9);
  EXPECT_NEAR(run.itl_ms.p50, 200, 1e-9);
  EXPECT_NEAR(run.itl_ms.std, 73.484692283495, 1e-9);  // sqrt(((90² × 2) + (60² × 3)) / 5)
  // E2E {300, 300, 700}
  EXPECT_NEAR(run.e2e_ms.mean, 1300.0 / 3.0, 1e-9);
  EXPECT_NEAR(run.e2e_ms.max, 700, 1e-9);
  // No SLO: no goodput.
  EXPECT_EQ(run.n_good, 0);
  EXPECT_EQ(run.goodput, 0.0);
  // Client-side traces: no queue or prefill figures.
  EXPECT_EQ(run.queue_ms.count, 0u);
  EXPECT_EQ(run.decode_ms.count, 3u);
}

TEST(Goodput, EveryGivenSloMustHold) {
  const std::vector<RequestMetrics> requests = Summaries(FourRequests());
  // A meets both; B misses TTFT; C misses TPOT.
  RunMetrics run = Aggregate(requests, 2.0, ParseSlo("ttft:250 tpot:60"));
  EXPECT_EQ(run.n_good, 1);
  EXPECT_DOUBLE_EQ(run.goodput, 0.5);
  // A single-token request's TPOT counts as 0: only B meets tpot:0.
  run = Aggregate(requests, 2.0, ParseSlo("tpot:0"));
  EXPECT_EQ(run.n_good, 1);
  // Limits are inclusive (vLLM: slo >= value): A and B end at exactly 300 ms.
  run = Aggregate(requests, 2.0, ParseSlo("e2el:300"));
  EXPECT_EQ(run.n_good, 2);
  EXPECT_DOUBLE_EQ(run.goodput, 1.0);
  // The aborted request never counts as good.
  run = Aggregate(requests, 4.0, ParseSlo("ttft:100000"));
  EXPECT_EQ(run.n_good, 3);
  EXPECT_DOUBLE_EQ(run.goodput, 0.75);
}

TEST(Aggregate, EmptyRunIsAllZero) {
  for (double duration : {0.0, 10.0}) {
    const RunMetrics run = Aggregate({}, duration, ParseSlo("ttft:500"));
    EXPECT_EQ(run.n_requests, 0);
    EXPECT_EQ(run.n_completed, 0);
    EXPECT_EQ(run.request_throughput, 0.0);
    EXPECT_EQ(run.output_throughput, 0.0);
    EXPECT_EQ(run.goodput, 0.0);
    EXPECT_EQ(run.ttft_ms.count, 0u);
    EXPECT_EQ(run.ttft_ms.p99, 0.0);
  }
  const RunMetrics from_traces = AggregateTraces({});
  EXPECT_EQ(from_traces.duration_s, 0.0);
  EXPECT_EQ(from_traces.n_requests, 0);
  EXPECT_NE(FormatRunMetrics(from_traces).find("Successful requests:"), std::string::npos);
}

TEST(Aggregate, RejectsBadDuration) {
  EXPECT_THROW(Aggregate({}, -1.0), Error);
  EXPECT_THROW(Aggregate({}, std::nan("")), Error);
}

TEST(Aggregate, TracesSpanFirstArrivalToLastFinish) {
  const RunMetrics run = AggregateTraces(FourRequests(), ParseSlo("ttft:250"));
  EXPECT_NEAR(run.duration_s, 0.7, 1e-12);  // 0 ms → 700 ms
  EXPECT_NEAR(run.request_throughput, 3 / 0.7, 1e-9);
  EXPECT_EQ(run.n_good, 2);  // A (200) and C (100)
  const std::string text = FormatRunMetrics(run);
  EXPECT_NE(text.find("Request goodput (req/s):"), std::string::npos);
  EXPECT_NE(text.find("ttft:250"), std::string::npos);
}

TEST(Aggregate, EngineTracesGiveQueueAndPrefill) {
  RequestTrace t(8);
  t.MarkArrival(At(0));
  t.MarkScheduled(At(40));
  t.MarkToken(At(100));
  t.MarkToken(At(130));
  t.MarkFinish(At(130), FinishKind::kStop);
  const RunMetrics run = AggregateTraces({t});
  EXPECT_NEAR(run.queue_ms.mean, 40, 1e-9);
  EXPECT_NEAR(run.prefill_ms.mean, 60, 1e-9);
  EXPECT_NEAR(run.decode_ms.mean, 30, 1e-9);
  EXPECT_NE(FormatRunMetrics(run).find("Queue Time"), std::string::npos);
}

TEST(ParseSlo, AcceptsVllmPairs) {
  Slo slo = ParseSlo("ttft:500 tpot:50 e2el:2000");
  EXPECT_EQ(*slo.ttft_ms, 500);
  EXPECT_EQ(*slo.tpot_ms, 50);
  EXPECT_EQ(*slo.e2el_ms, 2000);
  slo = ParseSlo(" tpot:12.5,ttft:1e3 ");
  EXPECT_EQ(*slo.tpot_ms, 12.5);
  EXPECT_EQ(*slo.ttft_ms, 1000);
  EXPECT_FALSE(slo.e2el_ms.has_value());
  EXPECT_EQ(FormatSlo(slo), "ttft:1000 tpot:12.5");
  EXPECT_TRUE(ParseSlo("").empty());
}

TEST(ParseSlo, RejectsMalformedPairs) {
  for (const char* bad : {"ttft", "ttft:", "ttft:abc", "ttft:-1", "latency:5", "ttft:5 ttft:6", "ttft:1:2",
                          "tpot:inf", "tpot:nan", ":5", "e2el:5ms"}) {
    EXPECT_THROW(ParseSlo(bad), Error) << bad;
  }
  try {
    ParseSlo("ttft:500 itl:20");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("itl"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ridge
