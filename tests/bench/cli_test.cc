// The built `ridge` binary: `ridge bench-serve` and `ridge bench serve` (main.cc
// routes the latter to the former) against the fake server, the outputs they
// write, and bad flags.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "fake_openai_server.h"
#include "stories_model.h"
#include "cli_runner.h"
#include "test_paths.h"

namespace ridge {
namespace {

using testing::CliResult;
using testing::RunRidge;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}


std::string Flags(const testing::FakeOpenAiServer& server) {
  return "--base-url " + server.base_url() +
         " --num-prompts 4 --request-rate 20 --random-input-len 12 --random-output-len 3 --seed 5";
}

TEST(BenchServeCli, ReportJsonAndPlots) {
  testing::FakeOpenAiServer server;
  const std::string dir = testing::ScratchDir("bench_cli_outputs");
  const CliResult r = RunRidge("bench-serve " + Flags(server) + " --max-concurrency 2 --goodput ttft:100000 tpot:100000" +
                            " --result-json " + dir + "/r.json --plot " + dir + "/plots");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.rfind("============ Serving Benchmark Result ============\n", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("Successful requests:                     4         \n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Maximum request concurrency:             2         \n"), std::string::npos);
  EXPECT_NE(r.out.find("Request goodput (req/s):"), std::string::npos);
  EXPECT_NE(r.out.find("P99 E2EL (ms):"), std::string::npos);
  // Progress and notes on stderr only.
  EXPECT_NE(r.err.find("Initial test run completed"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("4/4 ["), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("Initial test run"), std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(ReadFile(dir + "/r.json"));
  EXPECT_EQ(j["completed"], 4);
  EXPECT_EQ(j["max_concurrency"], 2);
  EXPECT_EQ(j["goodput_slo"], "ttft:100000 tpot:100000");
  for (const char* name : {"ttft_distribution.svg", "tpot_distribution.svg", "throughput.svg", "running_requests.svg"})
    EXPECT_TRUE(std::filesystem::is_regular_file(dir + "/plots/" + name)) << name;
}

TEST(BenchServeCli, NestedUnderBench) {
  testing::FakeOpenAiServer server;
  const CliResult r = RunRidge("bench serve " + Flags(server) + " --no-progress --endpoint /v1/chat/completions");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Successful requests:                     4"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("4/4"), std::string::npos) << "--no-progress: " << r.err;
  EXPECT_EQ(server.n_completion_requests(), 5);
}

TEST(BenchServeCli, PlainBenchKeepsItsOwnRequirements) {
  // `serve` nested under `bench` must not change what `ridge bench` alone
  // accepts (its required options are still required).
  const CliResult r = RunRidge("bench");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE((r.out + r.err).find("required"), std::string::npos) << r.out << r.err;
}

TEST(BenchServeCli, TokenizerFromAGguf) {
  testing::FakeOpenAiServer server;
  const std::string dir = testing::ScratchDir("bench_cli_tokenizer");
  const CliResult r = RunRidge("bench-serve " + Flags(server) + " --no-progress --tokenizer-from " +
                            testing::Stories260kGguf() + " --result-json " + dir + "/r.json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(ReadFile(dir + "/r.json"));
  EXPECT_NE(j["tokenizer_id"].get<std::string>().find(".gguf"), std::string::npos);
  for (const auto& q : j["requests"]) EXPECT_NEAR(q["prompt_tokens_client"].get<int64_t>(), 12, 1);
}

TEST(BenchServeCli, BadFlagsAndUnreachableServer) {
  CliResult r = RunRidge("bench-serve --request-rate fast --num-prompts 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("ridge: error: --request-rate 'fast'"), std::string::npos) << r.err;
  r = RunRidge("bench serve --goodput ttft:abc --num-prompts 2");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("ttft:abc"), std::string::npos) << r.err;
  r = RunRidge("bench-serve --base-url http://127.0.0.1:1 --num-prompts 2 --no-server-tokenizer --no-progress");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("initial test request"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("could not connect"), std::string::npos) << r.err;
  r = RunRidge("bench-serve --num-prompts");
  EXPECT_NE(r.exit_code, 0);
}

}  // namespace
}  // namespace ridge
