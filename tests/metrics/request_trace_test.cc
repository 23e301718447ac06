#include "ridge/metrics/request_trace.h"

#include <gtest/gtest.h>

#include "ridge/base/error.h"

namespace ridge {
namespace {

Clock::time_point At(double ms) {
  return Clock::time_point{} + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
}

// A request whose first token comes at ttft_ms and every next one tpot_ms later.
RequestTrace Uniform(double ttft_ms, double tpot_ms, int n_tokens) {
  RequestTrace t(16);
  t.MarkArrival(At(0));
  for (int i = 0; i < n_tokens; ++i) t.MarkToken(At(ttft_ms + tpot_ms * i));
  t.MarkFinish(At(ttft_ms + tpot_ms * (n_tokens - 1)), FinishKind::kLength);
  return t;
}

// The reference's worked example: E2E = TTFT + TPOT × (output tokens − 1).
TEST(RequestTrace, EndToEndDecompositionOfTheReference) {
  const RequestMetrics short_answer = Summarize(Uniform(500, 40, 20));
  EXPECT_NEAR(short_answer.e2e_ms, 1260.0, 1e-6);
  EXPECT_NEAR(short_answer.ttft_ms, 500.0, 1e-6);
  EXPECT_NEAR(short_answer.tpot_ms, 40.0, 1e-6);
  EXPECT_NEAR(short_answer.ttft_ms / short_answer.e2e_ms, 0.40, 0.005);  // TTFT is 40 %

  const RequestMetrics long_answer = Summarize(Uniform(500, 40, 800));
  EXPECT_NEAR(long_answer.e2e_ms, 32460.0, 1e-6);
  EXPECT_NEAR(long_answer.tpot_ms, 40.0, 1e-6);
  EXPECT_NEAR(long_answer.ttft_ms / long_answer.e2e_ms, 0.015, 0.0005);  // 1.5 %
  EXPECT_EQ(long_answer.n_output_tokens, 800);
  ASSERT_EQ(long_answer.itl_ms.size(), 799u);
  for (double gap : long_answer.itl_ms) EXPECT_NEAR(gap, 40.0, 1e-6);
}

TEST(RequestTrace, PhasesQueuePrefillDecode) {
  RequestTrace t(100);
  t.MarkArrival(At(0));
  t.MarkScheduled(At(20));
  t.MarkScheduled(At(70));  // rescheduled after a preemption: the first time counts
  t.MarkToken(At(120));
  t.MarkToken(At(150));
  t.MarkToken(At(210));
  t.MarkFinish(At(210), FinishKind::kStop);
  const RequestMetrics m = Summarize(t);
  ASSERT_TRUE(m.queue_ms && m.prefill_ms);
  EXPECT_NEAR(*m.queue_ms, 20, 1e-9);
  EXPECT_NEAR(*m.prefill_ms, 100, 1e-9);
  EXPECT_NEAR(m.ttft_ms, 120, 1e-9);
  EXPECT_NEAR(m.decode_ms, 90, 1e-9);
  EXPECT_NEAR(m.e2e_ms, 210, 1e-9);
  EXPECT_NEAR(m.tpot_ms, 45, 1e-9);  // (210 − 120) / 2
  ASSERT_EQ(m.itl_ms.size(), 2u);
  EXPECT_NEAR(m.itl_ms[0], 30, 1e-9);
  EXPECT_NEAR(m.itl_ms[1], 60, 1e-9);
  EXPECT_EQ(m.n_prompt_tokens, 100);
  EXPECT_TRUE(m.succeeded);
  EXPECT_EQ(m.finish_kind, FinishKind::kStop);
}

TEST(RequestTrace, SingleTokenHasZeroTpotAndNoGaps) {
  RequestTrace t(5);
  t.MarkArrival(At(10));
  t.MarkToken(At(60));
  t.MarkFinish(At(60), FinishKind::kStop);
  const RequestMetrics m = Summarize(t);
  EXPECT_EQ(m.n_output_tokens, 1);
  EXPECT_EQ(m.tpot_ms, 0.0);
  EXPECT_TRUE(m.itl_ms.empty());
  EXPECT_NEAR(m.ttft_ms, 50, 1e-9);
  EXPECT_NEAR(m.e2e_ms, 50, 1e-9);
  EXPECT_EQ(m.decode_ms, 0.0);
  EXPECT_FALSE(m.queue_ms.has_value());  // a client-side trace has no scheduling time
  EXPECT_FALSE(m.prefill_ms.has_value());
  EXPECT_TRUE(m.succeeded);
}

TEST(RequestTrace, ChunksCarrySeveralTokens) {
  // A stream that delivers 1, then 3, then 2 tokens: 6 tokens, 2 gaps.
  RequestTrace t;
  t.MarkArrival(At(0));
  t.MarkToken(At(100));
  t.MarkToken(At(160), 3);
  t.MarkToken(At(200), 2);
  t.MarkFinish(At(200), FinishKind::kLength);
  const RequestMetrics m = Summarize(t);
  EXPECT_EQ(m.n_output_tokens, 6);
  EXPECT_NEAR(m.tpot_ms, 20, 1e-9);  // (200 − 100) / 5
  ASSERT_EQ(m.itl_ms.size(), 2u);
  EXPECT_NEAR(m.itl_ms[0], 60, 1e-9);
  EXPECT_NEAR(m.itl_ms[1], 40, 1e-9);
}

TEST(RequestTrace, AbortBeforeAnyTokenIsNotASuccess) {
  RequestTrace t;
  t.MarkArrival(At(0));
  t.MarkFinish(At(30), FinishKind::kAbort);
  const RequestMetrics m = Summarize(t);
  EXPECT_FALSE(m.succeeded);
  EXPECT_EQ(m.n_output_tokens, 0);
  EXPECT_EQ(m.ttft_ms, 0.0);
  EXPECT_NEAR(m.e2e_ms, 30, 1e-9);
  EXPECT_STREQ(FinishKindName(m.finish_kind), "abort");
}

TEST(RequestTrace, RejectsMarksOutOfOrder) {
  {
    RequestTrace t;
    EXPECT_THROW(t.MarkToken(At(1)), Error);  // before arrival
    EXPECT_THROW(t.MarkScheduled(At(1)), Error);
    EXPECT_THROW(t.MarkFinish(At(1), FinishKind::kStop), Error);
    EXPECT_THROW(Summarize(t), Error);
  }
  {
    RequestTrace t;
    t.MarkArrival(At(10));
    EXPECT_THROW(t.MarkArrival(At(11)), Error);
    EXPECT_THROW(t.MarkToken(At(5)), Error);  // earlier than the arrival
    EXPECT_THROW(t.MarkToken(At(12), 0), Error);
    EXPECT_THROW(Summarize(t), Error);  // not finished
    t.MarkToken(At(20));
    EXPECT_THROW(t.MarkScheduled(At(21)), Error);  // first scheduling after a token
    EXPECT_THROW(t.MarkFinish(At(30), FinishKind::kNone), Error);
    t.MarkFinish(At(30), FinishKind::kStop);
    EXPECT_THROW(t.MarkToken(At(40)), Error);  // after the finish
    EXPECT_THROW(t.MarkFinish(At(40), FinishKind::kStop), Error);
  }
  EXPECT_THROW(RequestTrace(-1), Error);
}

}  // namespace
}  // namespace ridge
