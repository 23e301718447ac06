// `ridge run` and `ridge bench` with --spec ngram and with --draft: the same
// greedy text as without, the acceptance figures in the summary (and the
// analytic expectation beside a draft model's speedup), clear errors for bad
// flags and a draft of another vocabulary.
#include <gtest/gtest.h>

#include "cli_runner.h"
#include "random_model.h"
#include "stories_model.h"

namespace ridge {
namespace {

using testing::RunRidge;

const std::string kCopyPrompt =
    "'Lily had a red ball. She liked to play with it every day. One day, she lost the ball in the park. "
    "Lily had a red ball. She liked to play with it every day. One day, she'";

TEST(SpeculationCli, RunGivesTheSameGreedyTextAndReportsAcceptance) {
  const std::string args = "run -m '" + testing::Stories260kGguf() + "' -p " + kCopyPrompt + " -n 80 --temp 0";
  testing::CliResult plain = RunRidge(args);
  testing::CliResult spec = RunRidge(args + " --spec ngram --spec-tokens 3 --spec-ngram-min 1 --spec-ngram-max 3");
  ASSERT_EQ(plain.exit_code, 0) << plain.output();
  ASSERT_EQ(spec.exit_code, 0) << spec.output();
  EXPECT_EQ(spec.out, plain.out);
  EXPECT_FALSE(plain.Has("acceptance rate"));
  EXPECT_TRUE(spec.Has("acceptance rate")) << spec.err;
  EXPECT_TRUE(spec.Has("mean accepted length")) << spec.err;
  EXPECT_FALSE(spec.Has(" 0 accepted")) << spec.err;  // the story repeats: some drafts are right
}

TEST(SpeculationCli, BenchComparesBothInOneRun) {
  testing::CliResult r = RunRidge("bench -m '" + testing::Stories260kGguf() + "' --spec ngram -n 40 -r 1 -t 1");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  for (const char* text : {"| plain |", "| prompt lookup K=4 |", "speedup", "outputs identical: yes"})
    EXPECT_TRUE(r.Has(text)) << "missing '" << text << "' in:\n" << r.output();
}

TEST(SpeculationCli, BadFlagsAreClearErrors) {
  const std::string base = "run -m '" + testing::Stories260kGguf() + "' -p hi -n 4";
  testing::CliResult method = RunRidge(base + " --spec eagle");
  EXPECT_EQ(method.exit_code, 1);
  EXPECT_TRUE(method.Has("unknown speculation method 'eagle'")) << method.err;
  testing::CliResult k = RunRidge(base + " --spec ngram --spec-tokens 0");
  EXPECT_EQ(k.exit_code, 1);
  EXPECT_TRUE(k.Has("speculative tokens per step")) << k.err;
  testing::CliResult ngram = RunRidge(base + " --spec ngram --spec-ngram-min 4 --spec-ngram-max 2");
  EXPECT_EQ(ngram.exit_code, 1);
  EXPECT_TRUE(ngram.Has("n-gram sizes")) << ngram.err;
}

TEST(SpeculationCli, RunWithADraftModelGivesTheSameGreedyText) {
  const std::string args = "run -m '" + testing::Stories260kGguf() + "' -p " + kCopyPrompt + " -n 60 --temp 0";
  testing::CliResult plain = RunRidge(args);
  testing::CliResult spec = RunRidge(args + " --draft '" + testing::Stories260kGguf() + "' --spec-tokens 3");
  ASSERT_EQ(plain.exit_code, 0) << plain.output();
  ASSERT_EQ(spec.exit_code, 0) << spec.output();
  EXPECT_EQ(spec.out, plain.out);
  EXPECT_TRUE(spec.Has("acceptance rate")) << spec.err;
  EXPECT_FALSE(spec.Has(" 0 accepted")) << spec.err;  // it drafts for itself
}

TEST(SpeculationCli, BenchWithADraftModelShowsTheAnalyticExpectation) {
  const std::string stories = testing::Stories260kGguf();
  testing::CliResult r =
      RunRidge("bench -m '" + stories + "' --draft '" + stories + "' --spec-tokens 3 -n 40 -r 1 -t 1");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  for (const char* text : {"| plain |", "| draft model K=3 |", "outputs identical: yes", "| tokens per verifying pass |",
                           "| speedup |", "(1 - a^(K+1)) / (1 - a)", "1 + K c"})
    EXPECT_TRUE(r.Has(text)) << "missing '" << text << "' in:\n" << r.output();
}

TEST(SpeculationCli, BadDraftsAreClearErrors) {
  const std::string base = "run -m '" + testing::Stories260kGguf() + "' -p hi -n 4";
  testing::CliResult other = RunRidge(base + " --draft '" + testing::RandomModelGguf(GgmlType::kQ8_0) + "'");
  EXPECT_EQ(other.exit_code, 1);
  EXPECT_TRUE(other.Has("the draft model's vocabulary has 32000 tokens but the target's has 512")) << other.err;
  testing::CliResult missing = RunRidge(base + " --draft /nonexistent/draft.gguf");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(missing.Has("--draft /nonexistent/draft.gguf")) << missing.err;
  testing::CliResult both = RunRidge(base + " --spec ngram --draft '" + testing::Stories260kGguf() + "'");
  EXPECT_EQ(both.exit_code, 1);
  EXPECT_TRUE(both.Has("--draft and --spec ngram")) << both.err;
}

}  // namespace
}  // namespace ridge
