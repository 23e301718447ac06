// `mpirun -np 2 ridge serve --tp 2 / --pp 2` as a user runs it, over real
// HTTP: greedy completions identical to a single-process server's, the job
// alive after idling for longer than its communication timeout (rank 0's
// keep-alives), SIGTERM to rank 0 ending every rank with exit status 0, and a
// follower that hangs or dies ending the client's stream with an error and
// the job with a non-zero status in bounded time.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "server/serve_process.h"
#include "server/server_test_util.h"

namespace ridge::server {
namespace {

using nlohmann::json;
using namespace testing;

constexpr int kTimeoutS = 3;  // --mpi-timeout of every job here
// Every flag a job here shares: a built-in roofline profile, so that rank 0
// does not probe the host while its followers wait.
const std::vector<std::string> kServeFlags = {"--hw", "h100", "--mpi-timeout", std::to_string(kTimeoutS)};

// `mpirun -np N` as the MPI suite's other tests start it (root allowed, as in
// CI; no single-copy shared memory, not allowed in every container).
std::vector<std::string> MpiLauncher(int n_ranks) {
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
  ::setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
  return {RIDGE_MPIEXEC, "--oversubscribe", "--mca", "btl_vader_single_copy_mechanism", "none", "-np",
          std::to_string(n_ranks)};
}

std::vector<std::string> SplitFlags(const std::string& flag, std::vector<std::string> more = {}) {
  std::vector<std::string> flags = {flag, "2"};
  flags.insert(flags.end(), kServeFlags.begin(), kServeFlags.end());
  flags.insert(flags.end(), more.begin(), more.end());
  return flags;
}

// The pid a rank printed after `prefix` ("rank 0 of 2 (pid " on rank 0's
// serve line, "ridge: rank 1 of 2 (pid " on a follower's), or -1.
pid_t PidAfter(ServeProcess& serve, const std::string& prefix) {
  const std::string out = serve.ReadUntil(prefix);
  const size_t at = out.find(prefix);
  if (at == std::string::npos) return -1;
  serve.ReadUntil(")", 10000, at);
  return static_cast<pid_t>(std::atoi(serve.output().c_str() + at + prefix.size()));
}

std::string GreedyText(int port, const std::string& prompt = "Once upon a time") {
  const json request = {{"prompt", prompt}, {"max_tokens", 40}, {"temperature", 0}};
  auto res = Post(port, "/v1/completions", request.dump());
  if (!res) return "(no response)";
  if (res->status != 200) return "(status " + std::to_string(res->status) + ": " + res->body + ")";
  return json::parse(res->body)["choices"][0]["text"];
}

std::string GreedyStreamText(int port) {
  const json request = {{"prompt", "Once upon a time"}, {"max_tokens", 40}, {"temperature", 0}, {"stream", true}};
  auto res = Post(port, "/v1/completions", request.dump());
  if (!res) return "(no response)";
  const StreamResult stream = ParseStream(res->body, /*chat=*/false);
  return stream.done ? stream.text : "(no [DONE] in " + res->body + ")";
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// "R (running)", "T (stopped)", "Z (zombie)"... of /proc/PID/status, "" once it is gone.
std::string ProcessState(pid_t pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("State:", 0) == 0) return line.substr(line.find_first_not_of(" \t", 6));
  return "";
}

// Gone, or a zombie its parent (mpirun, gone) left to a pid 1 that may not reap it.
bool Ended(pid_t pid) {
  const std::string state = ProcessState(pid);
  return state.empty() || state[0] == 'Z';
}

// The follower's report at the end: "... N steps and K keep-alives ...".
int64_t FollowerKeepAlives(const std::string& output) {
  std::smatch m;
  if (!std::regex_search(output, m, std::regex("ridge: rank 1 of 2 \\([a-z]+\\):[^\n]* ([0-9]+) keep-alives")))
    return -1;
  return std::stoll(m[1]);
}

void ExpectServesLikeOneProcess(const std::string& flag) {
  std::string single_text;
  {
    ServeProcess single(kServeFlags);
    const int port = single.Port();
    ASSERT_GT(port, 0) << single.output();
    single_text = GreedyText(port);
    EXPECT_EQ(single.Stop(SIGTERM), 0) << single.output();
  }
  ASSERT_GT(single_text.size(), 20u) << single_text;

  ServeProcess split(SplitFlags(flag), ridge::testing::Stories260kGguf(), MpiLauncher(2));
  const int port = split.Port();
  ASSERT_GT(port, 0) << split.output();
  EXPECT_EQ(GreedyText(port), single_text) << split.output();
  EXPECT_EQ(GreedyStreamText(port), single_text) << split.output();
  // Idle for more than twice the timeout a follower waits for the next step:
  // only rank 0's keep-alives keep the job up.
  std::this_thread::sleep_for(std::chrono::seconds(2 * kTimeoutS + 2));
  EXPECT_EQ(GreedyText(port), single_text) << split.output();

  const pid_t rank0 = PidAfter(split, "rank 0 of 2 (pid ");
  ASSERT_GT(rank0, 0) << split.output();
  const auto start = std::chrono::steady_clock::now();
  ::kill(rank0, SIGTERM);
  EXPECT_EQ(split.WaitForExit(60000), 0) << split.output();
  EXPECT_LT(SecondsSince(start), 20);
  EXPECT_NE(split.output().find("SIGTERM received"), std::string::npos) << split.output();
  EXPECT_NE(split.output().find("stopped after 3 requests"), std::string::npos) << split.output();
  // 2 × timeout of idling is more than 2 keep-alive intervals (timeout / 4 each).
  EXPECT_GE(FollowerKeepAlives(split.output()), 4) << split.output();
  EXPECT_EQ(split.output().find("error"), std::string::npos) << split.output();
}

TEST(SplitServe, TensorParallelAnswersLikeOneProcessStaysUpIdleAndStopsOnSigterm) {
  ExpectServesLikeOneProcess("--tp");
}

TEST(SplitServe, PipelineAnswersLikeOneProcessStaysUpIdleAndStopsOnSigterm) { ExpectServesLikeOneProcess("--pp"); }

// Requests at once: the scheduler batches their prefills and their decodes
// (one token of each sequence a step), which a pipeline cuts into
// micro-batches (as many as asked, here: the default keeps every micro-batch
// of at least 32 tokens) that hold parts of a prompt or several sequences' tokens.
// Every completion equals the single-process server's for its prompt.
void ExpectConcurrentRequestsLikeOneProcess(int n_ranks, const std::vector<std::string>& micro_flags) {
  const std::vector<std::string> prompts = {
      "Once upon a time", "The little dog", "Lily and Ben went to the park to play with a big red ball", "One day"};
  std::vector<std::string> single_texts;
  {
    ServeProcess single(kServeFlags);
    const int port = single.Port();
    ASSERT_GT(port, 0) << single.output();
    for (const std::string& prompt : prompts) single_texts.push_back(GreedyText(port, prompt));
    EXPECT_EQ(single.Stop(SIGTERM), 0) << single.output();
  }
  std::vector<std::string> flags = {"--pp", std::to_string(n_ranks)};
  flags.insert(flags.end(), kServeFlags.begin(), kServeFlags.end());
  flags.insert(flags.end(), micro_flags.begin(), micro_flags.end());
  ServeProcess split(flags, ridge::testing::Stories260kGguf(), MpiLauncher(n_ranks));
  const int port = split.Port();
  ASSERT_GT(port, 0) << split.output();
  std::vector<std::string> texts(prompts.size());
  std::vector<std::thread> clients;
  for (size_t i = 0; i < prompts.size(); ++i)
    clients.emplace_back([&, i] { texts[i] = GreedyText(port, prompts[i]); });
  for (std::thread& client : clients) client.join();
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_GT(single_texts[i].size(), 10u) << single_texts[i];
    EXPECT_EQ(texts[i], single_texts[i]) << prompts[i] << "\n" << split.output();
  }
  const pid_t rank0 = PidAfter(split, "rank 0 of " + std::to_string(n_ranks) + " (pid ");
  ASSERT_GT(rank0, 0) << split.output();
  ::kill(rank0, SIGTERM);
  EXPECT_EQ(split.WaitForExit(60000), 0) << split.output();
}

TEST(SplitServe, PipelineMicroBatchesOfConcurrentRequestsAnswerLikeOneProcess) {
  ExpectConcurrentRequestsLikeOneProcess(2, {"--pp-micro-batches", "4"});
  ExpectConcurrentRequestsLikeOneProcess(4, {"--pp-micro-batches", "3"});
  ExpectConcurrentRequestsLikeOneProcess(2, {});  // the default: decode steps are not cut
}

// A streaming request runs when the follower gets `signal_number`: the
// stream ends with an error event naming the cause, rank 0 reports the
// error, and the job ends non-zero with no rank left behind, in bounded time.
void ExpectAFollowerFaultMidStreamEndsItWithAnError(int signal_number, const std::string& cause) {
  ServeProcess split(SplitFlags("--tp", {"--kv-tokens", std::to_string(kLongContext)}), LongContextModelPath(),
                     MpiLauncher(2));
  const int port = split.Port();
  ASSERT_GT(port, 0) << split.output();
  const pid_t follower = PidAfter(split, "ridge: rank 1 of 2 (pid ");
  ASSERT_GT(follower, 0) << split.output();
  std::string body;
  std::thread client([&] {
    auto res = Post(port, "/v1/completions", EndlessCompletion(/*stream=*/true).dump());
    body = res ? res->body : "(no response)";
  });
  ASSERT_TRUE(WaitFor([&] { return ScrapeMetric(port, "ridge_num_requests_running") == 1.0; }, 60000));
  const auto start = std::chrono::steady_clock::now();
  ::kill(follower, signal_number);
  client.join();
  const double client_s = SecondsSince(start);
  const int status = split.WaitForExit(60000);
  const double job_s = SecondsSince(start);
  const bool follower_left = !WaitFor([&] { return Ended(follower); }, 5000);
  if (follower_left) ::kill(follower, SIGKILL);
  EXPECT_FALSE(follower_left) << "the follower outlived the job: " << ProcessState(follower);
  EXPECT_NE(status, 0) << split.output();
  EXPECT_NE(status, -1) << split.output();
  EXPECT_LT(client_s, kTimeoutS + 10);
  EXPECT_LT(job_s, kTimeoutS + 20);
  const std::vector<std::string> events = SseData(body);
  ASSERT_GE(events.size(), 2u) << body;
  EXPECT_EQ(events.back(), "[DONE]") << body;
  EXPECT_NE(events[events.size() - 2].find("\"error\""), std::string::npos) << body;
  EXPECT_NE(events[events.size() - 2].find(cause), std::string::npos) << body;
  EXPECT_NE(split.output().find("ridge: error: rank 0 of 2: "), std::string::npos) << split.output();
}

// SIGSTOP: as hung as a process gets. Rank 0's next communication times out.
TEST(SplitServe, AFollowerThatHangsMidStreamEndsItWithAnErrorAndTheJobNonZero) {
  ExpectAFollowerFaultMidStreamEndsItWithAnError(SIGSTOP, "did not complete within 3 s: another rank has died or hangs");
}

// SIGKILL: mpirun sees the rank die and ends the job, SIGTERM to every rank
// then SIGKILL a moment later; rank 0 takes its launcher's SIGTERM as the end
// and stops waiting for the dead rank at once.
TEST(SplitServe, AFollowerKilledMidStreamEndsItWithAnErrorAndTheJobNonZero) {
  ExpectAFollowerFaultMidStreamEndsItWithAnError(SIGKILL, "another rank has died, or the job is being stopped");
}

// Killed while no request runs: the job ends all the same, rank 0 with it.
TEST(SplitServe, AFollowerKilledWhileIdleEndsTheJobNonZero) {
  ServeProcess split(SplitFlags("--pp"), ridge::testing::Stories260kGguf(), MpiLauncher(2));
  const int port = split.Port();
  ASSERT_GT(port, 0) << split.output();
  ASSERT_GT(GreedyText(port).size(), 20u) << split.output();
  const pid_t rank0 = PidAfter(split, "rank 0 of 2 (pid ");
  const pid_t follower = PidAfter(split, "ridge: rank 1 of 2 (pid ");
  ASSERT_GT(rank0, 0) << split.output();
  ASSERT_GT(follower, 0) << split.output();
  const auto start = std::chrono::steady_clock::now();
  ::kill(follower, SIGKILL);
  const int status = split.WaitForExit(60000);
  EXPECT_NE(status, 0) << split.output();
  EXPECT_NE(status, -1) << split.output();
  EXPECT_LT(SecondsSince(start), kTimeoutS + 20);
  EXPECT_TRUE(WaitFor([&] { return Ended(rank0); }, 5000)) << ProcessState(rank0);
  EXPECT_FALSE(Post(port, "/v1/completions", R"({"prompt": "Once", "max_tokens": 2})")) << "rank 0 still serves";
}

}  // namespace
}  // namespace ridge::server
