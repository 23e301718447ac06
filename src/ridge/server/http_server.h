#pragma once
// `ridge serve`'s HTTP server: OpenAI-compatible endpoints over cpp-httplib,
// with the continuous-batching engine behind them.
//
//   POST /v1/completions, /v1/chat/completions   (stream or not)
//   GET  /v1/models, /v1/models/{id}
//   POST /tokenize, /detokenize
//   GET  /health, /metrics (Prometheus)
//
// Threads: one engine thread runs the batching loop; a pool of HTTP threads
// parses, tokenizes, detokenizes and writes responses (a streaming response
// holds its thread until it ends). Every error is an OpenAI error object;
// a full queue answers 429 with Retry-After; with an API key set, /v1/*,
// /tokenize and /detokenize need "Authorization: Bearer KEY" (401 without).
#include <httplib.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "ridge/engine/engine.h"
#include "ridge/metrics/prometheus.h"
#include "ridge/metrics/server_metrics.h"
#include "ridge/server/openai_endpoints.h"

namespace ridge::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                        // 0: any free port (see Start's result)
  std::string model_name;                 // required: what /v1/models lists and requests may name
  std::string api_key;                    // "": no key needed
  int64_t max_body_bytes = int64_t{4} << 20;  // larger bodies answer 413
  int http_threads = 128;                 // concurrent connections served (streams hold one each)
  int retry_after_s = 1;                  // Retry-After of a 429
  std::optional<ChatFamily> chat_family;  // overrides the family detected from the GGUF's template
  std::chrono::milliseconds poll_interval{20};
  std::chrono::milliseconds json_probe_interval{100};  // see EndpointConfig
  std::chrono::milliseconds sse_ping_interval{1000};
};

// cpp-httplib 0.11 listens with a backlog of 5: a burst of clients beyond
// that has its connections dropped and retried a second or more later (TCP
// SYN retransmission), which shows up as TTFT spikes under load. This
// subclass raises the backlog on the bound socket.
class HttpListener : public httplib::Server {
 public:
  // After bind_to_port / bind_to_any_port. Returns false if listen() fails.
  bool SetBacklog(int backlog);
};

class OpenAiServer {
 public:
  // Creates the engine (not started yet). The model and tokenizer must
  // outlive the server.
  OpenAiServer(LlamaModel& model, const Tokenizer& tokenizer, const EngineOptions& engine_options,
               ServerOptions options);
  ~OpenAiServer();
  OpenAiServer(const OpenAiServer&) = delete;
  OpenAiServer& operator=(const OpenAiServer&) = delete;

  // Binds the address, starts the engine thread and the HTTP threads, and
  // returns the port it listens on. Throws ridge::Error if it cannot bind.
  int Start();
  // Graceful stop, safe from any thread and idempotent: new generation
  // requests answer 503 at once; running ones may finish for up to `grace`;
  // the rest are cancelled (streams end with an error event); then the
  // listening socket closes and the threads are joined.
  void Shutdown(std::chrono::milliseconds grace);

  Engine& engine() { return engine_; }
  const ChatTemplate& chat_template() const { return endpoints_.config().chat_template; }
  int port() const { return port_; }
  const std::string& host() const { return options_.host; }

 private:
  void Route();
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  // Wraps a handler: API key check, and every exception becomes an error response.
  Handler Guard(bool needs_key, Handler handler);
  void CheckApiKey(const httplib::Request& req) const;
  void Metrics(httplib::Response& res);

  ServerOptions options_;
  MetricsRegistry registry_;
  ServerMetrics metrics_;
  Gauge& kv_blocks_used_;
  Gauge& kv_blocks_total_;
  Engine engine_;  // after metrics_: stops (and stops reporting) before they go
  OpenAiEndpoints endpoints_;
  HttpListener http_;
  std::thread listen_thread_;
  int port_ = -1;
  std::mutex shutdown_mutex_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace ridge::server
