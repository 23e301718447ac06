// The report, traces and timeline computed from hand-made records, against
// figures worked out by hand (and the report's text produced by vLLM's own
// format strings in Python).
#include "ridge/bench/report.h"

#include <gtest/gtest.h>

#include "hand_made_records.h"
#include "ridge/base/error.h"
#include "ridge/bench/request_runner.h"
#include "ridge/bench/timeline.h"

namespace ridge::bench {
namespace {

using testing::At;
using testing::FourRecords;

RunMetrics AggregateRecords(const std::vector<RequestRecord>& records, double duration_s, const Slo& slo) {
  std::vector<RequestMetrics> metrics;
  for (const RequestRecord& r : records) metrics.push_back(Summarize(ToTrace(r)));
  return Aggregate(metrics, duration_s, slo);
}

TEST(RecordTraceTest, ClientTimingsFromOneRecord) {
  const auto records = FourRecords();
  const RequestMetrics b = Summarize(ToTrace(records[1]));
  EXPECT_TRUE(b.succeeded);
  EXPECT_EQ(b.finish_kind, FinishKind::kLength);
  EXPECT_EQ(b.n_prompt_tokens, 20);
  EXPECT_EQ(b.n_output_tokens, 6);
  EXPECT_DOUBLE_EQ(b.ttft_ms, 200);
  EXPECT_DOUBLE_EQ(b.e2e_ms, 250);  // to the last chunk, not the stream's end at 310
  EXPECT_DOUBLE_EQ(b.tpot_ms, 10);
  ASSERT_EQ(b.itl_ms.size(), 3u);
  EXPECT_NEAR(b.itl_ms[0], 10, 1e-6);
  EXPECT_NEAR(b.itl_ms[1], 20, 1e-6);
  EXPECT_NEAR(b.itl_ms[2], 20, 1e-6);
  const RequestMetrics c = Summarize(ToTrace(records[2]));
  EXPECT_FALSE(c.succeeded);
  EXPECT_EQ(c.finish_kind, FinishKind::kError);
  EXPECT_EQ(c.n_output_tokens, 0);
}

TEST(RecordTraceTest, TokenCountsPerChunk) {
  auto records = FourRecords();
  EXPECT_EQ(ChunkTokenCounts(records[0]), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(ChunkTokenCounts(records[1]), (std::vector<int64_t>{1, 1, 1, 3}));
  EXPECT_TRUE(ChunkTokenCounts(records[2]).empty());
  // No usage: the chunks are counted. Usage below the chunk count: chunks too.
  RequestRecord r = records[1];
  r.usage_completion_tokens.reset();
  EXPECT_EQ(r.n_output_tokens(), 4);
  r.usage_completion_tokens = 2;
  EXPECT_EQ(r.n_output_tokens(), 4);
  EXPECT_EQ(ChunkTokenCounts(r), (std::vector<int64_t>{1, 1, 1, 1}));
  // No usage prompt count: the dataset's.
  r.usage_prompt_tokens.reset();
  r.n_prompt_tokens_client = 33;
  EXPECT_EQ(r.n_prompt_tokens(), 33);
  r.chunk_times.clear();
  EXPECT_THROW(ToTrace(r), Error);  // successful without text is a broken record
}

TEST(ServingReportTest, AggregatesMatchHandWorkedFigures) {
  Slo slo;
  slo.ttft_ms = 250;
  slo.tpot_ms = 20;
  const RunMetrics run = AggregateRecords(FourRecords(), 2.0, slo);
  EXPECT_EQ(run.n_completed, 3);
  EXPECT_EQ(run.n_failed, 1);
  EXPECT_EQ(run.total_input_tokens, 35);
  EXPECT_EQ(run.total_output_tokens, 10);
  EXPECT_DOUBLE_EQ(run.request_throughput, 1.5);
  EXPECT_DOUBLE_EQ(run.output_throughput, 5.0);
  EXPECT_DOUBLE_EQ(run.total_token_throughput, 22.5);
  // Only B meets both: A's TPOT is 25 > 20, D's TTFT is 300 > 250.
  EXPECT_EQ(run.n_good, 1);
  EXPECT_DOUBLE_EQ(run.goodput, 0.5);
  EXPECT_NEAR(run.ttft_ms.p99, 298, 1e-6);
  EXPECT_NEAR(run.tpot_ms.mean, 17.5, 1e-6);
  EXPECT_EQ(run.tpot_ms.count, 2u);  // D's single token has no TPOT
  EXPECT_EQ(run.itl_ms.count, 5u);
  EXPECT_NEAR(run.e2e_ms.mean, 700.0 / 3.0, 1e-6);
}

TEST(ServingReportTest, ExactlyVllmsLayout) {
  Slo slo;
  slo.ttft_ms = 250;
  slo.tpot_ms = 20;
  const RunMetrics run = AggregateRecords(FourRecords(), 2.0, slo);
  ReportContext context;
  context.max_concurrency = 4;
  context.request_rate = 2.0;
  context.peak_output_tokens_per_s = 7;
  context.peak_running = 3;
  const std::string expected =
      "============ Serving Benchmark Result ============\n"
      "Successful requests:                     3         \n"
      "Failed requests:                         1         \n"
      "Maximum request concurrency:             4         \n"
      "Request rate configured (RPS):           2.00      \n"
      "Benchmark duration (s):                  2.00      \n"
      "Total input tokens:                      35        \n"
      "Total generated tokens:                  10        \n"
      "Request throughput (req/s):              1.50      \n"
      "Request goodput (req/s):                 0.50      \n"
      "Output token throughput (tok/s):         5.00      \n"
      "Peak output token throughput (tok/s):    7.00      \n"
      "Peak concurrent requests:                3.00      \n"
      "Total Token throughput (tok/s):          22.50     \n"
      "---------------Time to First Token----------------\n"
      "Mean TTFT (ms):                          200.00    \n"
      "Median TTFT (ms):                        200.00    \n"
      "P99 TTFT (ms):                           298.00    \n"
      "-----Time per Output Token (excl. 1st token)------\n"
      "Mean TPOT (ms):                          17.50     \n"
      "Median TPOT (ms):                        17.50     \n"
      "P99 TPOT (ms):                           24.85     \n"
      "---------------Inter-token Latency----------------\n"
      "Mean ITL (ms):                           20.00     \n"
      "Median ITL (ms):                         20.00     \n"
      "P99 ITL (ms):                            29.60     \n"
      "----------------End-to-end Latency----------------\n"
      "Mean E2EL (ms):                          233.33    \n"
      "Median E2EL (ms):                        250.00    \n"
      "P99 E2EL (ms):                           299.00    \n"
      "==================================================\n";
  EXPECT_EQ(FormatServingReport(run, context), expected);
}

TEST(ServingReportTest, OptionalRowsLeftOut) {
  const RunMetrics run = AggregateRecords(FourRecords(), 2.0, Slo{});
  ReportContext context;
  context.request_rate = std::numeric_limits<double>::infinity();
  const std::string report = FormatServingReport(run, context);
  EXPECT_EQ(report.find("goodput"), std::string::npos);
  EXPECT_EQ(report.find("Maximum request concurrency"), std::string::npos);
  EXPECT_EQ(report.find("Request rate configured"), std::string::npos);
  EXPECT_NE(report.find("Successful requests:                     3"), std::string::npos);
}

TEST(ServingReportTest, AllFailedGivesZerosNotNaNs) {
  auto records = FourRecords();
  const RunMetrics run = AggregateRecords({records[2]}, 1.0, Slo{});
  const std::string report = FormatServingReport(run, ReportContext{});
  EXPECT_EQ(report.find("nan"), std::string::npos);
  EXPECT_NE(report.find("Mean TTFT (ms):                          0.00"), std::string::npos);
}

TEST(TimelineTest, TokensPerBucketAndRequestsInFlight) {
  const Timeline t = BuildTimeline(FourRecords(), At(0), 2.0, 0.25);
  ASSERT_EQ(t.bucket_start_s.size(), 8u);
  EXPECT_DOUBLE_EQ(t.bucket_s, 0.25);
  EXPECT_DOUBLE_EQ(t.output_tokens_per_s[0], 3 / 0.25);  // A's three chunks
  EXPECT_DOUBLE_EQ(t.output_tokens_per_s[1], 7 / 0.25);  // B's 6 tokens and D's one
  for (size_t k = 2; k < 8; ++k) EXPECT_EQ(t.output_tokens_per_s[k], 0.0);
  EXPECT_DOUBLE_EQ(t.peak_output_tokens_per_s, 10);  // every token in the first second
  EXPECT_EQ(t.peak_running, 3);
  const std::vector<double> times = {0, 0, 0.05, 0.06, 0.07, 0.1, 0.16, 0.31, 0.41};
  const std::vector<int64_t> counts = {0, 1, 2, 3, 2, 3, 2, 1, 0};
  ASSERT_EQ(t.running_time_s.size(), times.size());
  for (size_t i = 0; i < times.size(); ++i) {
    EXPECT_NEAR(t.running_time_s[i], times[i], 1e-9) << i;
    EXPECT_EQ(t.running_count[i], counts[i]) << i;
  }
}

TEST(TimelineTest, AutomaticBucketsAndBackToBackRequests) {
  // One request ends exactly when the next starts: never two in flight.
  std::vector<RequestRecord> records = {testing::Succeeded(0, 0, {10}, 100, 1, 1),
                                        testing::Succeeded(1, 100, {110}, 200, 1, 1)};
  const Timeline t = BuildTimeline(records, At(0), 3.0);
  EXPECT_DOUBLE_EQ(t.bucket_s, 0.05);  // 3 s / 60 buckets
  EXPECT_EQ(t.bucket_start_s.size(), 60u);
  EXPECT_EQ(t.peak_running, 1);
  EXPECT_THROW(BuildTimeline(records, At(0), -1.0), Error);
}

}  // namespace
}  // namespace ridge::bench
