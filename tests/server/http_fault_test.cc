// Server-side faults are 5xx, client mistakes 4xx. An exception that no
// handler translated is a 500; an engine fault ends only the requests it
// concerns (a 500 error body when not streaming, an SSE error event when
// streaming) while the others finish and every KV block comes back; after a
// fault that stopped the engine, new requests get 503.
#include <gtest/gtest.h>

#include <map>
#include <new>
#include <thread>

#include "ridge/server/api_error.h"
#include "server_test_util.h"

namespace ridge::server {
namespace {

using nlohmann::json;
using namespace testing;

TEST(HttpFaults, UntranslatedExceptionsAreServerErrors) {
  ApiError internal = ToApiError(Error("a tensor is missing"));
  EXPECT_EQ(internal.status(), 500);
  EXPECT_EQ(internal.type(), "server_error");
  EXPECT_NE(std::string(internal.what()).find("a tensor is missing"), std::string::npos);
  EXPECT_EQ(ToApiError(std::runtime_error("boom")).status(), 500);
  // A client's mistake, translated where it was found, keeps its 4xx.
  try {
    ThrowInvalid("temperature", "'temperature' must be in [0, 2]");
    FAIL() << "ThrowInvalid returned";
  } catch (const std::exception& e) {
    ApiError client = ToApiError(e);
    EXPECT_EQ(client.status(), 400);
    EXPECT_EQ(client.type(), "invalid_request_error");
    EXPECT_EQ(client.param(), "temperature");
  }
  EXPECT_EQ(ToApiError(ApiError(404, "invalid_request_error", "no such model", "model", "model_not_found")).status(),
            404);
}

json Completion(int max_tokens, bool stream) {
  return json{{"prompt", "Once upon a time"}, {"max_tokens", max_tokens}, {"ignore_eos", true},
              {"temperature", 0},             {"stream", stream}};
}

double FinishedTotal(int port, const std::string& reason) {
  return ScrapeMetric(port, "ridge_request_finished_total", "finished_reason=\"" + reason + "\"");
}

TEST(HttpFaults, EngineFaultEndsOnlyItsRequest) {
  // Engine request ids count from 1 in submission order: 1 and 2 are the
  // bystanders, 3 fails at its 30th sampling (non-streaming: long after any
  // status could have gone out early, it must still be a 500), 4 at its
  // fifth (streaming).
  EngineOptions engine = LongEngineOptions();
  std::map<RequestId, int> samples;  // touched by the engine thread alone
  engine.fault_injector = [&samples](const FaultPoint& p) {
    if (p.site != FaultPoint::Site::kSample) return;
    const RequestId id = p.requests[0];
    const int n = ++samples[id];
    if ((id == 3 && n == 30) || (id == 4 && n == 5)) throw Error("injected sampling fault");
  };
  TestServer server(LongContextModel(), LongContextTokenizer(), engine, TestServerOptions());
  const int port = server.port();

  constexpr int kBystanderTokens = 1000;
  std::vector<std::string> bystanders(2);  // bodies; empty if the request failed
  std::vector<std::thread> threads;
  for (size_t i = 0; i < 2; ++i)
    threads.emplace_back(
        [&, i] {
          auto res = Post(port, "/v1/completions", Completion(kBystanderTokens, true).dump());
          if (res) bystanders[i] = res->body;
        });
  // Not ASSERT: the reader threads must be joined whatever happens.
  EXPECT_TRUE(WaitFor([&] {
    const EngineStats s = server.server().engine().Stats();
    return s.running + s.waiting + s.finished >= 2;
  }, 300000));

  auto failed = Post(port, "/v1/completions", Completion(50, false).dump());
  auto failed_stream = Post(port, "/v1/completions", Completion(50, true).dump());
  for (auto& t : threads) t.join();

  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->status, 500) << failed->body;
  const json error = json::parse(failed->body);
  EXPECT_EQ(error["error"]["type"], "server_error");
  EXPECT_NE(error["error"]["message"].get<std::string>().find("injected sampling fault"), std::string::npos);

  ASSERT_TRUE(failed_stream);
  EXPECT_EQ(failed_stream->status, 200);  // the stream had started
  StreamResult s = ParseStream(failed_stream->body, /*chat=*/false);
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.finish_reason, "");  // no normal finish
  ASSERT_FALSE(s.chunks.empty());
  EXPECT_EQ(s.chunks.back()["error"]["type"], "server_error") << s.chunks.back().dump();

  for (size_t i = 0; i < 2; ++i) {
    StreamResult b = ParseStream(bystanders[i], /*chat=*/false);
    EXPECT_TRUE(b.done) << "bystander " << i;
    EXPECT_EQ(b.finish_reason, "length") << "bystander " << i;
  }
  EXPECT_EQ(FinishedTotal(port, "error"), 2.0);
  EXPECT_EQ(FinishedTotal(port, "length"), 2.0);
  EXPECT_EQ(ScrapeMetric(port, "ridge_kv_cache_blocks_used"), 0.0);

  // The engine keeps serving.
  auto after = Post(port, "/v1/completions", Completion(20, false).dump());
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200) << after->body;
  EXPECT_EQ(json::parse(after->body)["usage"]["completion_tokens"], 20);
}

TEST(HttpFaults, AfterAFatalEngineFaultRequestsGet503) {
  EngineOptions engine = TestEngineOptions();
  engine.fault_injector = [](const FaultPoint& p) {
    if (p.site == FaultPoint::Site::kForward) throw std::bad_alloc();
  };
  TestServer server(engine, TestServerOptions());
  auto first = Post(server.port(), "/v1/completions", Completion(10, false).dump());
  ASSERT_TRUE(first);
  EXPECT_EQ(first->status, 500) << first->body;
  EXPECT_NE(json::parse(first->body)["error"]["message"].get<std::string>().find("cannot recover"),
            std::string::npos);
  auto next = Post(server.port(), "/v1/completions", Completion(10, true).dump());
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, 503) << next->body;
  EXPECT_EQ(json::parse(next->body)["error"]["code"], "unavailable");
  EXPECT_EQ(ScrapeMetric(server.port(), "ridge_kv_cache_blocks_used"), 0.0);
}

}  // namespace
}  // namespace ridge::server
