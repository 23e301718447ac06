// GET /v1/dashboard/events and the embedded web page, over real HTTP on
// stories260K: the events' shapes and numbers (docs/dashboard-events.md), the
// API key, a stalled dashboard client that must not hold up generation, and
// --no-webui. The DashboardHub's ring is tested on its own too.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <map>
#include <mutex>
#include <thread>

#include "ridge/kv/kv_formula.h"
#include "server_test_util.h"

namespace ridge::server {
namespace {

using nlohmann::json;
using testing::Get;
using testing::Post;
using testing::TestServer;

constexpr const char* kKey = "sk-dash";

ServerOptions KeyedOptions() {
  ServerOptions o = testing::TestServerOptions();
  o.api_key = kKey;
  return o;
}

httplib::Headers Auth() { return {{"Authorization", std::string("Bearer ") + kKey}}; }

struct Event {
  std::string name;
  json data;
};

// Parses "event: NAME\ndata: JSON\n\n" blocks (comments skipped).
std::vector<Event> ParseEvents(const std::string& body) {
  std::vector<Event> out;
  size_t at = 0;
  while (true) {
    const size_t end = body.find("\n\n", at);
    if (end == std::string::npos) break;
    const std::string block = body.substr(at, end - at);
    at = end + 2;
    if (block.rfind("event: ", 0) != 0) continue;
    const size_t nl = block.find('\n');
    EXPECT_EQ(block.compare(nl + 1, 6, "data: "), 0) << block;
    out.push_back({block.substr(7, nl - 7), json::parse(block.substr(nl + 7))});
  }
  return out;
}

// Reads the event stream on its own thread until `enough` says so.
class EventReader {
 public:
  EventReader(int port, std::function<bool(const std::vector<Event>&)> enough) {
    thread_ = std::thread([this, port, enough = std::move(enough)] {
      auto client = testing::MakeClient(port);
      std::string body;
      client->Get("/v1/dashboard/events", Auth(), [&](const char* data, size_t n) {
        body.append(data, n);
        std::vector<Event> events = ParseEvents(body);
        const bool done = enough(events);
        std::lock_guard<std::mutex> lock(mutex_);
        events_ = std::move(events);
        return !done;
      });
    });
  }
  ~EventReader() { thread_.join(); }
  std::vector<Event> Join() {
    thread_.join();
    thread_ = std::thread([] {});
    std::lock_guard<std::mutex> lock(mutex_);
    return events_;
  }
  size_t seen() {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_.size();
  }

 private:
  std::thread thread_;
  std::mutex mutex_;
  std::vector<Event> events_;
};

// A request finished, and a snapshot the engine took after it came.
bool HasFinishedThenSnapshot(const std::vector<Event>& events) {
  double finished_at = -1;
  for (const Event& e : events) {
    if (e.name == "finished") finished_at = e.data["t_finish_ms"].get<double>();
    if (finished_at >= 0 && e.name == "snapshot" && e.data["t_ms"].get<double>() >= finished_at) return true;
  }
  return false;
}

TEST(DashboardEvents, ARequestsLifeArrivesAsDocumented) {
  TestServer ts(testing::TestEngineOptions(), KeyedOptions());
  EventReader reader(ts.port(), HasFinishedThenSnapshot);
  ASSERT_TRUE(testing::WaitFor([&] { return reader.seen() >= 2; }));  // hello and the first snapshot
  const int n_output = 20;
  auto res = Post(ts.port(), "/v1/completions",
                  json{{"prompt", "Once upon a time"}, {"max_tokens", n_output}, {"temperature", 0}}.dump(), Auth());
  ASSERT_TRUE(res && res->status == 200);
  const int64_t n_prompt = json::parse(res->body)["usage"]["prompt_tokens"].get<int64_t>();
  const std::vector<Event> events = reader.Join();

  ASSERT_FALSE(events.empty());
  ASSERT_EQ(events[0].name, "hello");
  const json& hello = events[0].data;
  const ModelConfig& c = testing::StoriesModel().config();
  // F32 cache in the test options: 4 bytes per element.
  EXPECT_DOUBLE_EQ(hello["kv"]["bytes_per_token"].get<double>(),
                   KvBytesPerToken(c.n_layers, c.n_kv_heads, c.head_dim, 4.0));
  EXPECT_EQ(hello["kv"]["blocks_total"].get<int64_t>(), ts.server().engine().kv_blocks());
  EXPECT_EQ(hello["kv"]["block_bytes"].get<double>(),
            hello["kv"]["bytes_per_token"].get<double>() * hello["kv"]["block_tokens"].get<double>());
  EXPECT_EQ(hello["model"], "stories260K");
  EXPECT_GT(hello["roofline"]["peak_flops"].get<double>(), 0);
  EXPECT_DOUBLE_EQ(hello["roofline"]["ridge_point"].get<double>(),
                   hello["roofline"]["peak_flops"].get<double>() / hello["roofline"]["bandwidth_bytes_per_s"].get<double>());

  int64_t id = -1;
  int64_t prefill_tokens = 0, decode_steps = 0;
  json finished, last_snapshot;
  for (const Event& e : events) {
    if (e.name == "queued") {
      id = e.data["id"].get<int64_t>();
      EXPECT_EQ(e.data["n_prompt"].get<int64_t>(), n_prompt);
    } else if (e.name == "steps") {
      for (const json& s : e.data["steps"]) {
        EXPECT_LE(s["t_start_ms"].get<double>(), s["t_end_ms"].get<double>());
        EXPECT_GT(s["flops"].get<double>(), 0);
        EXPECT_NEAR(s["intensity"].get<double>(), s["flops"].get<double>() / s["bytes"].get<double>(), 1e-9);
        EXPECT_NEAR(s["achieved_flops_per_s"].get<double>(),
                    s["flops"].get<double>() / (s["forward_ms"].get<double>() / 1000.0),
                    1e-6 * s["achieved_flops_per_s"].get<double>());
        int64_t p = 0, d = 0;
        for (const json& seg : s["segments"]) {
          ASSERT_EQ(seg[0].get<int64_t>(), id) << "a step of a request that was never queued";
          if (seg[1] == "prefill") {
            p += seg[2].get<int64_t>();
          } else {
            EXPECT_EQ(seg[1], "decode");
            EXPECT_EQ(seg[2].get<int64_t>(), 1);
            d += 1;
          }
        }
        EXPECT_EQ(s["prefill_tokens"].get<int64_t>(), p);
        EXPECT_EQ(s["decode_tokens"].get<int64_t>(), d);
        prefill_tokens += p;
        decode_steps += d;
      }
    } else if (e.name == "finished") {
      EXPECT_TRUE(last_snapshot.is_null() || id >= 0);
      finished = e.data;
    } else if (e.name == "snapshot") {
      last_snapshot = e.data;
    }
  }
  ASSERT_GE(id, 0);
  ASSERT_FALSE(finished.is_null());
  EXPECT_EQ(finished["id"].get<int64_t>(), id);
  EXPECT_EQ(finished["finish_reason"], "length");
  EXPECT_EQ(finished["n_output"].get<int64_t>(), n_output);
  // Every prompt token is fed once; every output token but the last is fed back as a decode step.
  EXPECT_EQ(prefill_tokens, n_prompt);
  EXPECT_EQ(decode_steps, n_output - 1);
  EXPECT_EQ(finished["itl_ms"].size(), static_cast<size_t>(n_output - 1));
  EXPECT_GT(finished["ttft_ms"].get<double>(), 0);
  EXPECT_LE(finished["t_arrival_ms"].get<double>(), finished["t_first_token_ms"].get<double>());
  EXPECT_EQ(finished["kv_blocks"].get<int64_t>(), (n_prompt + n_output - 1 + 15) / 16);

  // The last snapshot: idle, the blocks back in the pool (full ones cached), totals as /metrics says.
  ASSERT_FALSE(last_snapshot.is_null());
  EXPECT_TRUE(last_snapshot["running"].empty());
  int64_t mapped = 0;
  for (const json& run : last_snapshot["kv"]["map"]) {
    EXPECT_TRUE(run[0] == "free" || run[0] == "cached") << run.dump();
    mapped += run[1].get<int64_t>();
  }
  EXPECT_EQ(mapped, ts.server().engine().kv_blocks());
  const std::string metrics = Get(ts.port(), "/metrics", Auth())->body;
  EXPECT_EQ(last_snapshot["metrics"]["generation_tokens"].get<double>(),
            testing::MetricValue(metrics, "ridge_generation_tokens_total"));
  EXPECT_EQ(last_snapshot["metrics"]["prompt_tokens"].get<double>(),
            testing::MetricValue(metrics, "ridge_prompt_tokens_total"));
  EXPECT_EQ(last_snapshot["metrics"]["requests_finished"]["length"].get<double>(),
            testing::MetricValue(metrics, "ridge_request_finished_total", "length"));
  EXPECT_EQ(last_snapshot["dropped_events"].get<int64_t>(), 0);
}

TEST(DashboardEvents, NeedsTheApiKey) {
  TestServer ts(testing::TestEngineOptions(), KeyedOptions());
  auto none = Get(ts.port(), "/v1/dashboard/events");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  auto wrong = Get(ts.port(), "/v1/dashboard/events", {{"Authorization", "Bearer nope"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  EXPECT_EQ(json::parse(wrong->body)["error"]["code"], "invalid_api_key");
}

TEST(DashboardEvents, AStalledClientLosesEventsButNeverHoldsUpGeneration) {
  ServerOptions options = KeyedOptions();
  options.dashboard.max_events = 32;  // a small ring, so a stalled reader falls off it soon
  TestServer ts(testing::TestEngineOptions(), options);
  // A client that asks for the stream and never reads: the server's writes to
  // it block once the socket buffers are full.
  const int stalled = testing::ConnectLoopback(ts.port());
  ASSERT_GE(stalled, 0);
  const int small = 1024;
  ::setsockopt(stalled, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  const std::string request = std::string("GET /v1/dashboard/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ") +
                              kKey + "\r\n\r\n";
  ASSERT_EQ(::send(stalled, request.data(), request.size(), MSG_NOSIGNAL), static_cast<ssize_t>(request.size()));
  ASSERT_TRUE(testing::WaitFor([&] { return ts.server().dashboard_hub().subscribers() == 1; }));

  // Generation goes on, request after request, until the stalled reader has
  // lost events (it cannot have read them), bounded in case it never does.
  int completed = 0;
  while (ts.server().dashboard_hub().dropped_total() == 0 && completed < 400) {
    auto res = Post(ts.port(), "/v1/completions",
                    json{{"prompt", "Once upon a time"}, {"max_tokens", 64}, {"ignore_eos", true}}.dump(), Auth());
    ASSERT_TRUE(res && res->status == 200);
    ++completed;
  }
  EXPECT_GT(ts.server().dashboard_hub().dropped_total(), 0u) << completed << " requests";
  // And a healthy reader opened now still gets its events while the stalled one stays stuck.
  EventReader healthy(ts.port(), HasFinishedThenSnapshot);
  ASSERT_TRUE(testing::WaitFor([&] { return healthy.seen() >= 2; }));
  auto res = Post(ts.port(), "/v1/completions", json{{"prompt", "Once"}, {"max_tokens", 8}}.dump(), Auth());
  ASSERT_TRUE(res && res->status == 200);
  const std::vector<Event> events = healthy.Join();
  EXPECT_TRUE(HasFinishedThenSnapshot(events));
  ::close(stalled);
}

TEST(WebPage, ServedEmbeddedUnlessTurnedOff) {
  TestServer ts(testing::TestEngineOptions(), KeyedOptions());
  auto page = Get(ts.port(), "/");  // the page's code needs no key: it holds no data
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(page->body.find("<script src=\"/assets/app.js\"></script>"), std::string::npos);
  EXPECT_NE(page->get_header_value("Content-Security-Policy").find("default-src 'self'"), std::string::npos);
  auto script = Get(ts.port(), "/assets/app.js");
  ASSERT_TRUE(script);
  EXPECT_EQ(script->status, 200);
  EXPECT_GT(script->body.size(), 10000u);
  EXPECT_EQ(Get(ts.port(), "/assets/none.js")->status, 404);

  ServerOptions off = KeyedOptions();
  off.webui = false;
  TestServer no_page(testing::TestEngineOptions(), off);
  EXPECT_EQ(Get(no_page.port(), "/")->status, 404);
  EXPECT_EQ(Get(no_page.port(), "/assets/app.js")->status, 404);
  EXPECT_EQ(Get(no_page.port(), "/v1/dashboard/events")->status, 401);  // the stream stays
}

TEST(DashboardHub, ASlowReaderSkipsTheOldestAndIsToldHowMany) {
  DashboardOptions options;
  options.max_events = 4;
  DashboardHub hub(options);
  EXPECT_FALSE(hub.WantsSnapshot(Clock::now())) << "no reader: no snapshot work";
  hub.OnQueued(1, 3, Clock::now());  // before anyone subscribed: not delivered
  auto sub = hub.Subscribe();
  EXPECT_TRUE(hub.WantsSnapshot(Clock::now())) << "a new reader needs a snapshot";
  for (RequestId id = 2; id <= 11; ++id) hub.OnQueued(id, 3, Clock::now());
  EXPECT_EQ(hub.dropped_total(), 6u);
  DashboardHub::Delivery d;
  ASSERT_TRUE(hub.Poll(*sub, Clock::now(), Clock::now(), d));
  EXPECT_EQ(d.dropped, 6u);
  ASSERT_EQ(d.events.size(), 4u);
  EXPECT_EQ(std::get<QueuedEvent>(*d.events.front()).id, 8);
  EXPECT_EQ(std::get<QueuedEvent>(*d.events.back()).id, 11);
  EXPECT_FALSE(d.snapshot);
  hub.OnSnapshot(EngineSnapshot{});
  EXPECT_FALSE(hub.WantsSnapshot(Clock::now())) << "nothing happened since, and the interval has not passed";
  ASSERT_TRUE(hub.Poll(*sub, Clock::now(), Clock::now(), d));
  EXPECT_TRUE(d.events.empty());
  EXPECT_TRUE(d.snapshot);
  hub.Close();
  EXPECT_FALSE(hub.Poll(*sub, Clock::now(), Clock::now() + std::chrono::seconds(10), d));
  hub.Unsubscribe(sub);
  EXPECT_EQ(hub.subscribers(), 0);
  EXPECT_EQ(hub.dropped_total(), 6u);
}

}  // namespace
}  // namespace ridge::server
