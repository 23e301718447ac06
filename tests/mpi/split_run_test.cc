// `mpirun -np N ridge run --tp N / --pp N` as a user runs it: greedy tokens
// identical to the single-process run, each rank holding its share of the KV
// bytes per token, every KV block back at the end, and a rank that dies or
// hangs ending the job with a clear error and a non-zero exit in bounded time.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <regex>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "random_model.h"
#include "stories_model.h"
#include "test_paths.h"

namespace ridge {
namespace {

using testing::CliResult;

// CI runs as root, which mpirun refuses unless told; CMA (single-copy shared
// memory) is not allowed in every container.
CliResult RunMpi(int n_ranks, const std::string& env, const std::string& args) {
  return testing::RunCommand(env +
                             " OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " RIDGE_MPIEXEC
                             " --oversubscribe --mca btl_vader_single_copy_mechanism none -np " +
                             std::to_string(n_ranks) + " " + testing::RidgeBinary() + " " + args);
}

std::string GreedyArgs(const std::string& model, int n_tokens, const std::string& prompt = "Once upon a time") {
  return "run -m '" + model + "' -p '" + prompt + "' -n " + std::to_string(n_tokens) +
         " --temp 0 -t 1 --no-echo --verbose";
}

std::string TokenIds(const CliResult& r) {
  std::smatch m;
  const std::string err = r.err;
  if (!std::regex_search(err, m, std::regex("output token ids   ([0-9 ]+)\n"))) return "(no token ids)";
  return m[1];
}

struct RankLine {
  int rank = -1;
  double kv_bytes_per_token = 0;
  double whole_kv_bytes_per_token = 0;
  std::string text;
};

// One "ridge: rank R of N" line per rank, in rank order.
std::vector<RankLine> RankLines(const CliResult& r, int n_ranks) {
  std::vector<RankLine> lines(static_cast<size_t>(n_ranks));
  const std::regex line_re(
      "ridge: rank ([0-9]+) of [0-9]+ [^\n]*KV ([0-9]+) bytes/token of the whole model's ([0-9]+)[^\n]*");
  const std::string err = r.err;
  for (auto it = std::sregex_iterator(err.begin(), err.end(), line_re); it != std::sregex_iterator(); ++it) {
    const int rank = std::stoi((*it)[1]);
    if (rank < 0 || rank >= n_ranks) continue;
    lines[static_cast<size_t>(rank)] = {rank, std::stod((*it)[2]), std::stod((*it)[3]), (*it)[0]};
  }
  return lines;
}

// Greedy tokens of the split run equal the single-process run's (a different
// order of float sums may change last bits of the logits; tokens must not
// change), and its text too.
void ExpectSameGreedyTokens(const std::string& model, int n_tokens, const std::string& flag, int n_ranks,
                            const std::string& more_flags = "", const std::string& prompt = "Once upon a time") {
  const CliResult single = testing::RunRidge(GreedyArgs(model, n_tokens, prompt));
  ASSERT_EQ(single.exit_code, 0) << single.output();
  const CliResult split = RunMpi(
      n_ranks, "", GreedyArgs(model, n_tokens, prompt) + " " + flag + " " + std::to_string(n_ranks) + " " + more_flags);
  ASSERT_EQ(split.exit_code, 0) << split.output();
  const std::string ids = TokenIds(single);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), ' ') + 1, n_tokens) << single.err;
  EXPECT_EQ(TokenIds(split), ids) << split.err;
  EXPECT_EQ(split.out, single.out);
}

TEST(SplitRun, TensorParallelGreedyEqualsOneProcessOnStories) {
  ExpectSameGreedyTokens(testing::Stories260kGguf(), 48, "--tp", 2);
}

TEST(SplitRun, TensorParallelGreedyEqualsOneProcessOnRandomWeights) {
  ExpectSameGreedyTokens(testing::RandomModelGguf(GgmlType::kF32), 32, "--tp", 2);
}

TEST(SplitRun, PipelineGreedyEqualsOneProcessOnTwoAndFourRanks) {
  ExpectSameGreedyTokens(testing::Stories260kGguf(), 40, "--pp", 2);
  ExpectSameGreedyTokens(testing::Stories260kGguf(), 40, "--pp", 4);  // 5 layers: 1, 1, 1, 2
}

// A prompt of 40-odd tokens: its prefill is cut into micro-batches of many
// tokens each, every later position attending to K and V that an earlier
// micro-batch of the same step wrote. The default (one micro-batch: no 32
// tokens each to cut into), two, an uneven cut, one micro-batch per token and
// none at all (1) all give the single process's tokens.
const char kLongPrompt[] =
    "Once upon a time there was a little girl named Lily who liked to play in the park with her dog. One day she "
    "saw a big red ball under a tree";

TEST(SplitRun, PipelineMicroBatchesGiveTheOneProcessTokensOnStories) {
  for (const char* micro :
       {"", "--pp-micro-batches 1", "--pp-micro-batches 2", "--pp-micro-batches 3", "--pp-micro-batches 1000"}) {
    SCOPED_TRACE(micro);
    ExpectSameGreedyTokens(testing::Stories260kGguf(), 24, "--pp", 2, micro, kLongPrompt);
    ExpectSameGreedyTokens(testing::Stories260kGguf(), 24, "--pp", 4, micro, kLongPrompt);
  }
}

TEST(SplitRun, PipelineMicroBatchesGiveTheOneProcessTokensOnRandomWeights) {
  for (const char* micro : {"", "--pp-micro-batches 1", "--pp-micro-batches 5"}) {
    SCOPED_TRACE(micro);
    ExpectSameGreedyTokens(testing::RandomModelGguf(GgmlType::kF32), 16, "--pp", 2, micro, kLongPrompt);
  }
}

// stories260K: 5 layers, 4 KV heads of 8 dims, f16 cache: 640 bytes per token in all.
TEST(SplitRun, EachTensorRankHoldsItsShareOfTheKvAndFreesEveryBlock) {
  const CliResult r = RunMpi(2, "", GreedyArgs(testing::Stories260kGguf(), 20) + " --tp 2");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  const std::vector<RankLine> lines = RankLines(r, 2);
  for (const RankLine& line : lines) {
    ASSERT_GE(line.rank, 0) << "a rank's report is missing:\n" << r.err;
    EXPECT_EQ(line.whole_kv_bytes_per_token, 640) << line.text;
    EXPECT_EQ(line.kv_bytes_per_token, 640 / 2) << line.text;
    EXPECT_NE(line.text.find("heads 4 of 8, KV heads 2 of 4, vocabulary rows 256 of 512"), std::string::npos)
        << line.text;
  }
  // Rank 0's scheduler frees its sequence (its KV line is the formula / 2);
  // the follower borrowed rank 0's tables for each step and holds nothing.
  EXPECT_TRUE(r.Has("(320 bytes/token)")) << r.err;
  EXPECT_NE(lines[1].text.find("0 sequences and 0 blocks held at the end"), std::string::npos) << lines[1].text;
  EXPECT_NE(lines[1].text.find("20 steps"), std::string::npos) << lines[1].text;  // prefill + 19 decodes
}

TEST(SplitRun, EachPipelineRankHoldsItsLayersKv) {
  const CliResult r = RunMpi(4, "", GreedyArgs(testing::Stories260kGguf(), 8) + " --pp 4");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  double sum = 0;
  const int layers[] = {1, 1, 1, 2};
  for (const RankLine& line : RankLines(r, 4)) {
    ASSERT_GE(line.rank, 0) << "a rank's report is missing:\n" << r.err;
    EXPECT_EQ(line.kv_bytes_per_token, 640 / 5 * layers[line.rank]) << line.text;
    sum += line.kv_bytes_per_token;
    if (line.rank > 0) {
      EXPECT_NE(line.text.find("0 sequences and 0 blocks held at the end"), std::string::npos) << line.text;
    }
  }
  EXPECT_EQ(sum, 640);
}

TEST(SplitRun, ShapesThatCannotBeSplitAreRefused) {
  // The random model has 2 KV heads: not 4 parts.
  CliResult r = RunMpi(4, "", GreedyArgs(testing::RandomModelGguf(GgmlType::kF32), 4) + " --tp 4");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.Has("--tp 4: the model's 2 KV heads do not split into 4 equal parts")) << r.output();
  // Q8_0 blocks are 32 wide; its FFN's 352 columns are 176 per rank.
  r = RunMpi(2, "", GreedyArgs(testing::RandomModelGguf(GgmlType::kQ8_0), 4) + " --tp 2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.Has("176 input columns per rank, not a multiple of Q8_0's block of 32")) << r.output();
  r = testing::RunRidge(GreedyArgs(testing::Stories260kGguf(), 4) + " --pp-micro-batches 2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.Has("--pp-micro-batches requires --pp")) << r.output();
  // Outside mpirun there is one rank.
  r = testing::RunRidge(GreedyArgs(testing::Stories260kGguf(), 4) + " --tp 2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.Has("--tp 2 needs a job of exactly 2 ranks")) << r.output();
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(SplitRun, ARankThatDiesEndsTheJobWithAnError) {
  const auto start = std::chrono::steady_clock::now();
  const CliResult r =
      RunMpi(2, "RIDGE_TEST_MPI_FAULT=exit:5", GreedyArgs(testing::Stories260kGguf(), 40) + " --tp 2 --mpi-timeout 5");
  EXPECT_NE(r.exit_code, 0) << r.output();
  EXPECT_TRUE(r.Has("this rank exits at step 5")) << r.output();
  EXPECT_TRUE(r.Has("exited")) << r.output();  // mpirun names the rank that exited
  EXPECT_LT(SecondsSince(start), 30);
}

TEST(SplitRun, ARankThatHangsEndsTheJobWithinTheTimeout) {
  const auto start = std::chrono::steady_clock::now();
  const CliResult r =
      RunMpi(2, "RIDGE_TEST_MPI_FAULT=hang:5", GreedyArgs(testing::Stories260kGguf(), 40) + " --tp 2 --mpi-timeout 3");
  EXPECT_NE(r.exit_code, 0) << r.output();
  EXPECT_TRUE(
      r.Has("ridge: error: rank 0 of 2: an all-reduce did not complete within 3 s: another rank has died or "
            "hangs"))
      << r.output();
  EXPECT_LT(SecondsSince(start), 30);  // 3 s of timeout, the job's start and MPI_Abort
}

}  // namespace
}  // namespace ridge

namespace ridge {
namespace {

// ridge bench under mpirun: rank 0's communication per forward pass beside the
// measured link's prediction, and the roofline's ring all-reduce bytes:
// stories260K, 1 token × 5 layers × 2 all-reduces × 2·(1/2)·64 dims·4 bytes = 2560.
TEST(SplitBench, ReportsCommunicationPerStepBesideThePrediction) {
  const CliResult r = RunMpi(2, "", "bench -m '" + testing::Stories260kGguf() + "' -p 16 -n 8 -r 1 -t 1 --tp 2");
  ASSERT_EQ(r.exit_code, 0) << r.output();
  EXPECT_TRUE(r.Has("link rank 0 <-> 1 measured in this run")) << r.out;
  EXPECT_TRUE(std::regex_search(
      r.out, std::regex(R"(\| tg8 \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| [0-9]+% \| [0-9]+ \| 2560 \|)")))
      << r.out;
  EXPECT_TRUE(r.Has("| 40960 |")) << r.out;  // pp16: 16 tokens
}

}  // namespace
}  // namespace ridge
