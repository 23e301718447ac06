#pragma once
// Helpers for tests that run a real OpenAiServer on an ephemeral port with
// stories260K, and talk to it with cpp-httplib's client or raw sockets.
// Header-only: tests/CMakeLists.txt compiles only *_test.cc files per layer.
#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <nlohmann/json.hpp>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "ridge/gguf/model_generator.h"
#include "ridge/server/http_server.h"
#include "stories_model.h"
#include "test_paths.h"

namespace ridge::server::testing {

// stories260K (F32) loaded once per process.
inline Model& StoriesModel() {
  static Model* model = Model::Load(ridge::testing::Stories260kGguf()).release();
  return *model;
}

inline const Tokenizer& StoriesTokenizer() {
  static const Tokenizer* tokenizer = new Tokenizer(Tokenizer::FromGguf(StoriesModel().file()));
  return *tokenizer;
}

// A random-weight model with stories260K's vocabulary and a 64K-token
// context, for tests that need a request to still be running when they act
// (hang up, shut down, fill the queue): with ignore_eos and a max_tokens in
// the tens of thousands, a request runs for minutes, as attention grows with
// every token, so no machine is fast enough to finish it before the test's
// next step, and no machine is so slow that the test waits for it (it is
// cancelled). 2 layers of width 64: tiny to generate and load.
inline constexpr int64_t kLongContext = 65536;
inline const std::string& LongContextModelPath() {
  static const std::string path = [] {
    RandomModelOptions options;
    options.shape.n_embd = 64;
    options.shape.n_ff = 128;
    options.shape.n_layers = 2;
    options.shape.n_heads = 4;
    options.shape.n_kv_heads = 4;
    options.shape.n_ctx = kLongContext;
    options.seed = 7;
    options.name = "long-context-test";
    const std::string path = ridge::testing::ScratchDir("server-long") + "/long.gguf";
    GgufFile vocab = GgufFile::Open(ridge::testing::Stories260kGguf());
    BuildRandomModelGguf(vocab, options, nullptr).Write(path);
    return path;
  }();
  return path;
}
inline Model& LongContextModel() {
  static Model* model = Model::Load(LongContextModelPath()).release();
  return *model;
}
inline const Tokenizer& LongContextTokenizer() {
  static const Tokenizer* tokenizer = new Tokenizer(Tokenizer::FromGguf(LongContextModel().file()));
  return *tokenizer;
}
// Engine options for it: the pool holds a whole context of F16 KV (32 MiB).
inline EngineOptions LongEngineOptions() {
  EngineOptions o;
  o.n_threads = 2;
  o.kv_block_tokens = 16;
  o.kv_tokens = kLongContext;
  return o;
}
// A completion request that runs until cancelled.
inline nlohmann::json EndlessCompletion(bool stream) {
  return nlohmann::json{{"prompt", "Once upon a time"}, {"max_tokens", kLongContext - 64}, {"ignore_eos", true},
                        {"temperature", 0}, {"stream", stream}};
}

// Engine options the server tests use: 2 threads, F32 KV (as the engine's own
// equality tests), a pool of kv_tokens tokens.
inline EngineOptions TestEngineOptions(int64_t kv_tokens = 16384) {
  EngineOptions o;
  o.n_threads = 2;
  o.kv_type = GgmlType::kF32;
  o.kv_block_tokens = 16;
  o.kv_tokens = kv_tokens;
  o.max_batch_tokens = 256;
  return o;
}

inline ServerOptions TestServerOptions() {
  ServerOptions o;
  o.host = "127.0.0.1";
  o.port = 0;
  o.model_name = "stories260K";
  o.http_threads = 48;
  return o;
}

// A started server on 127.0.0.1 and a free port; shut down on destruction.
class TestServer {
 public:
  explicit TestServer(EngineOptions engine = TestEngineOptions(), ServerOptions options = TestServerOptions());
  TestServer(Model& model, const Tokenizer& tokenizer, EngineOptions engine,
             ServerOptions options = TestServerOptions());
  ~TestServer();
  OpenAiServer& server() { return *server_; }
  int port() const { return port_; }
  std::unique_ptr<httplib::Client> Client() const;

 private:
  std::unique_ptr<OpenAiServer> server_;
  int port_ = 0;
};

// Streamed text of completion or chat chunks, with the last finish_reason,
// the usage chunk if any, and whether the stream ended with [DONE].
struct StreamResult {
  std::string text;
  std::string finish_reason;
  nlohmann::json usage;  // null when no usage chunk came
  bool done = false;
  int n_chunks = 0;
  std::vector<nlohmann::json> chunks;
};

inline TestServer::TestServer(EngineOptions engine, ServerOptions options) {
  server_ = std::make_unique<OpenAiServer>(StoriesModel(), StoriesTokenizer(), engine, options);
  port_ = server_->Start();
}

inline TestServer::TestServer(Model& model, const Tokenizer& tokenizer, EngineOptions engine,
                              ServerOptions options) {
  server_ = std::make_unique<OpenAiServer>(model, tokenizer, engine, options);
  port_ = server_->Start();
}

inline TestServer::~TestServer() { server_->Shutdown(std::chrono::milliseconds(0)); }

inline std::unique_ptr<httplib::Client> TestServer::Client() const {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
  c->set_read_timeout(300, 0);
  c->set_write_timeout(300, 0);
  c->set_connection_timeout(300, 0);
  return c;
}

// Timeouts far beyond what any test needs: a loaded machine must slow a
// test down, never fail it.
inline std::unique_ptr<httplib::Client> MakeClient(int port) {
  auto c = std::make_unique<httplib::Client>("127.0.0.1", port);
  c->set_read_timeout(300, 0);
  c->set_write_timeout(300, 0);
  c->set_connection_timeout(300, 0);
  return c;
}

// POSTs a body (sent as is, as application/json).
inline httplib::Result Post(int port, const std::string& path, const std::string& body,
                            const httplib::Headers& headers = {}) {
  return MakeClient(port)->Post(path, headers, body, "application/json");
}

inline httplib::Result Get(int port, const std::string& path, const httplib::Headers& headers = {}) {
  return MakeClient(port)->Get(path, headers);
}

// The payloads of "data: ..." lines of an SSE body, in order.
inline std::vector<std::string> SseData(const std::string& body) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < body.size()) {
    size_t end = body.find("\n\n", at);
    if (end == std::string::npos) end = body.size();
    std::string event = body.substr(at, end - at);
    if (event.rfind("data: ", 0) == 0) out.push_back(event.substr(6));
    at = end + 2;
  }
  return out;
}

// Parses a streamed completion/chat body.
inline StreamResult ParseStream(const std::string& body, bool chat) {
  StreamResult r;
  for (const std::string& data : SseData(body)) {
    if (data == "[DONE]") {
      r.done = true;
      continue;
    }
    nlohmann::json chunk = nlohmann::json::parse(data);
    r.chunks.push_back(chunk);
    ++r.n_chunks;
    if (chunk.contains("usage") && !chunk["usage"].is_null()) r.usage = chunk["usage"];
    if (!chunk.contains("choices") || chunk["choices"].empty()) continue;
    const nlohmann::json& choice = chunk["choices"][0];
    if (chat) {
      if (choice["delta"].contains("content")) r.text += choice["delta"]["content"].get<std::string>();
    } else {
      r.text += choice["text"].get<std::string>();
    }
    if (!choice["finish_reason"].is_null()) r.finish_reason = choice["finish_reason"].get<std::string>();
  }
  return r;
}

// A sample's value from Prometheus text: the first series of `name` whose
// label text contains `label_fragment` ("" = any). NaN when absent.
inline double MetricValue(const std::string& text, const std::string& name,
                          const std::string& label_fragment = "") {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line.compare(0, name.size(), name) != 0) continue;
    const char next = line.size() > name.size() ? line[name.size()] : '\0';
    if (next != '{' && next != ' ') continue;
    const size_t space = line.rfind(' ');
    const std::string series = line.substr(0, space);
    if (!label_fragment.empty() && series.find(label_fragment) == std::string::npos) continue;
    return std::stod(line.substr(space + 1));
  }
  return std::nan("");
}

inline double ScrapeMetric(int port, const std::string& name, const std::string& label_fragment = "") {
  auto res = Get(port, "/metrics");
  if (!res || res->status != 200) return std::nan("");
  return MetricValue(res->body, name, label_fragment);
}

// Sends raw bytes on a fresh connection; returns what comes back until the
// end of the response headers, the server closing, or timeout_ms.
inline std::string RawExchange(int port, const std::string& bytes, int timeout_ms = 3000) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return {};
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string reply;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    size_t sent = 0;
    while (sent < bytes.size()) {
      ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    char buf[4096];
    // The status line and headers are all the callers look at.
    while (std::chrono::steady_clock::now() < deadline && reply.find("\r\n\r\n") == std::string::npos) {
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      reply.append(buf, static_cast<size_t>(n));
    }
  }
  ::close(fd);
  return reply;
}

// A connected loopback socket to the port (-1 on failure).
inline int ConnectLoopback(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Reads from fd until the server closes it (or resets it), or timeout_ms passes.
// `closed` (if given) says whether it closed.
inline std::string ReadUntilClosed(int fd, int timeout_ms, bool* closed = nullptr) {
  std::string reply;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  char buf[4096];
  if (closed) *closed = false;
  while (std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      if (closed) *closed = true;
      break;
    }
    reply.append(buf, static_cast<size_t>(n));
  }
  return reply;
}

// Sends raw bytes on a fresh connection; returns everything that comes back
// until the server closes the connection, or timeout_ms.
inline std::string RawExchangeAll(int port, const std::string& bytes, int timeout_ms = 30000) {
  int fd = ConnectLoopback(port);
  if (fd < 0) return {};
  size_t sent = 0;
  while (sent < bytes.size()) {
    ssize_t n = ::send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  std::string reply = ReadUntilClosed(fd, timeout_ms);
  ::close(fd);
  return reply;
}

// How many times `needle` occurs in `text`.
inline size_t CountOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

// Polls `condition` every 10 ms for up to timeout_ms; true once it held.
inline bool WaitFor(const std::function<bool()>& condition, int timeout_ms = 10000) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return condition();
}

}  // namespace ridge::server::testing
