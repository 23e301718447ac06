// `ridge run` as a user runs it: the story streamed on stdout, then the
// figures of the reference model on stderr; bad input gives a clear error.
#include <gtest/gtest.h>

#include <fstream>

#include "cli_runner.h"
#include "stories_model.h"
#include "test_paths.h"

namespace ridge {
namespace {

using testing::RunRidge;

TEST(RunCli, GreedyStoryThenSummary) {
  testing::CliResult r =
      RunRidge("run -m '" + testing::Stories260kGguf() + "' -p 'Once upon a time' -n 30 --temp 0 --verbose");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  // The golden story's beginning (../shared/models/stories260K.greedy.json).
  EXPECT_EQ(r.out.rfind("Once upon a time, there was a little girl named Lily.", 0), 0u) << r.out;
  for (const char* line : {"prompt tokens      5", "output tokens      30", "TTFT", "TPOT", "E2E", "prefill", "decode",
                           "KV cache", "640 bytes/token", "KV lifecycle", "formula: 2 x 5 layers x 4 KV heads x 8 head dim"})
    EXPECT_TRUE(r.Has(line)) << "missing '" << line << "' in:\n" << r.err;
}

TEST(RunCli, SeededSamplingIsReproducible) {
  const std::string args = "run -m '" + testing::Stories260kGguf() + "' -p 'The cat' -n 40 --temp 1 --seed 1234";
  testing::CliResult a = RunRidge(args), b = RunRidge(args);
  ASSERT_EQ(a.exit_code, 0) << a.output();
  EXPECT_EQ(a.out, b.out);
  testing::CliResult c = RunRidge("run -m '" + testing::Stories260kGguf() + "' -p 'The cat' -n 40 --temp 1 --seed 99");
  EXPECT_NE(a.out, c.out);
}

TEST(RunCli, StopsAtTheContextWithAMessage) {
  testing::CliResult r = RunRidge("run -m '" + testing::Stories260kGguf() + "' -p 'Once upon a time' -n 600 --temp 0");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  EXPECT_TRUE(r.Has("context of 512 tokens is full")) << r.err;
}

TEST(RunCli, BadInputIsAClearError) {
  testing::CliResult missing = RunRidge("run -m /nonexistent.gguf -p hi");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(missing.Has("/nonexistent.gguf")) << missing.err;
  testing::CliResult bad_kv = RunRidge("run -m '" + testing::Stories260kGguf() + "' -p hi --kv-type q8_0");
  EXPECT_EQ(bad_kv.exit_code, 1);
  EXPECT_TRUE(bad_kv.Has("multiple of 32")) << bad_kv.err;
  testing::CliResult bad_temp = RunRidge("run -m '" + testing::Stories260kGguf() + "' -p hi --temp -1");
  EXPECT_EQ(bad_temp.exit_code, 1);
  EXPECT_TRUE(bad_temp.Has("temperature")) << bad_temp.err;
}

TEST(RunCli, GrammarConstrainsTheOutput) {
  const std::string dir = testing::ScratchDir("run-grammar");
  std::ofstream(dir + "/answer.gbnf") << "root ::= \" \" (\"yes\" | \"no\") \", \" [a-z]{2,12} \".\"\n";
  testing::CliResult r = RunRidge("run -m '" + testing::Stories260kGguf() + "' -p 'Once upon a time' -n 40 --temp 1 "
                                  "--seed 3 --no-echo --grammar '" + dir + "/answer.gbnf'");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  // " yes, " or " no, " then 2-12 letters and a period: whatever the model wanted to say.
  const bool yes = r.out.rfind(" yes, ", 0) == 0;
  const bool no = r.out.rfind(" no, ", 0) == 0;
  ASSERT_TRUE(yes || no) << r.out;
  EXPECT_EQ(r.out.back(), '.') << r.out;
  EXPECT_TRUE(r.Has("finish: stop")) << r.err;

  std::ofstream(dir + "/bad.gbnf") << "root ::= \"a\" b\n";
  testing::CliResult bad = RunRidge("run -m '" + testing::Stories260kGguf() + "' -p hi --grammar '" + dir + "/bad.gbnf'");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_TRUE(bad.Has("grammar line 1 col 14: rule 'b' is used but never defined")) << bad.err;
  testing::CliResult missing = RunRidge("run -m '" + testing::Stories260kGguf() + "' -p hi --grammar /nonexistent.gbnf");
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(missing.Has("--grammar: cannot read '/nonexistent.gbnf'")) << missing.err;
}

}  // namespace
}  // namespace ridge
