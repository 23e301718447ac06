#pragma once
// `ridge serve`'s HTTP server: OpenAI-compatible endpoints behind ridge's
// HTTP/1.1 front (http_front.h), with the continuous-batching engine behind them.
//
//   POST /v1/completions, /v1/chat/completions   (stream or not)
//   GET  /v1/models, /v1/models/{id}
//   POST /tokenize, /detokenize
//   GET  /health, /metrics (Prometheus)
//   GET  /v1/dashboard/events  (the live dashboard's SSE stream, dashboard_events.h)
//   GET  /, /assets/...        (the embedded web page, webui_assets.h; off with webui = false)
//
// Threads: one engine thread runs the batching loop; one event-loop thread
// accepts connections and reads requests under deadlines; a pool of worker
// threads tokenizes, detokenizes and writes responses (a streaming response
// holds its worker until it ends). Every error is an OpenAI error object; a
// full queue answers 429 with Retry-After; a known path with the wrong method
// answers 405 with Allow. With an API key set, /v1/*, /tokenize, /detokenize
// and (unless metrics_need_key is off) /metrics need "Authorization: Bearer
// KEY", the scheme in any case (401 without); /health stays open for probes,
// and so does the web page's code (it holds no data: it asks for the key and
// sends it with every call).
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "ridge/engine/engine.h"
#include "ridge/metrics/prometheus.h"
#include "ridge/metrics/server_metrics.h"
#include "ridge/server/dashboard_events.h"
#include "ridge/server/dashboard_hub.h"
#include "ridge/server/http_front.h"
#include "ridge/server/http_router.h"
#include "ridge/server/openai_endpoints.h"

namespace ridge::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                        // 0: any free port (see Start's result)
  std::string model_name;                 // required: what /v1/models lists and requests may name
  std::string api_key;                    // "": no key needed
  int64_t max_body_bytes = int64_t{4} << 20;  // larger bodies answer 413
  int http_threads = 128;                 // workers: each request being answered, each open stream holds one
  int max_connections = 1024;             // open connections; more are answered 503 and closed
  int64_t max_header_bytes = int64_t{32} << 10;  // request line + headers; larger answer 431
  std::chrono::milliseconds request_timeout{30000};     // first byte to last byte of a request (408 beyond)
  std::chrono::milliseconds keep_alive_timeout{15000};  // idle connection between requests (closed)
  std::chrono::milliseconds write_timeout{30000};       // a response write that cannot progress (closed)
  // With an API key set, /metrics needs it too: its series reveal the model,
  // the load and the traffic. Off for scrapers that cannot send the key.
  bool metrics_need_key = true;
  int retry_after_s = 1;                  // Retry-After of a 429
  std::optional<ChatFamily> chat_family;  // a built-in family instead of the GGUF's template
  std::optional<std::string> chat_template_jinja;  // a Jinja template instead of the GGUF's (--chat-template F.jinja)
  std::chrono::milliseconds poll_interval{20};
  std::chrono::milliseconds sse_ping_interval{1000};
  bool webui = true;  // serve the web page at / (off: 404)
  // The dashboard's roofline; unset: the built-in h100 profile, said so in its source.
  std::optional<DashboardRoofline> roofline;
  DashboardOptions dashboard;
};

class OpenAiServer {
 public:
  // Creates the engine (not started yet). The model and tokenizer must
  // outlive the server.
  OpenAiServer(Model& model, const Tokenizer& tokenizer, const EngineOptions& engine_options,
               ServerOptions options);
  ~OpenAiServer();
  OpenAiServer(const OpenAiServer&) = delete;
  OpenAiServer& operator=(const OpenAiServer&) = delete;

  // Binds the address, starts the engine thread and the HTTP threads, and
  // returns the port it listens on. Throws ridge::Error if it cannot bind.
  int Start();
  // Graceful stop, safe from any thread and idempotent: new generation
  // requests answer 503 at once, and idle connections and requests still
  // being received are closed at once; running ones may finish for up to
  // `grace`; the rest are cancelled (streams end with an error event); then
  // the listening socket closes and the threads are joined.
  void Shutdown(std::chrono::milliseconds grace);

  Engine& engine() { return engine_; }
  const DashboardHub& dashboard_hub() const { return hub_; }
  const ChatTemplate& chat_template() const { return endpoints_.config().chat_template; }
  int port() const { return port_; }
  // Open HTTP connections (refused ones excluded).
  int64_t open_connections() const { return front_->open_connections(); }
  const std::string& host() const { return options_.host; }

 private:
  void Route();
  using Handler = HttpRouter::Handler;
  // Wraps a handler: API key check, and every exception becomes an error response.
  Handler Guard(bool needs_key, Handler handler);
  void CheckApiKey(const httplib::Request& req) const;
  void Metrics(httplib::Response& res);
  void WebPage(const httplib::Request& req, httplib::Response& res) const;

  ServerOptions options_;
  MetricsRegistry registry_;
  ServerMetrics metrics_;
  Gauge& kv_blocks_used_;
  Gauge& kv_blocks_total_;
  // Draft-model speculation only: the draft's own KV cache (null otherwise).
  Gauge* draft_kv_blocks_used_ = nullptr;
  Gauge* draft_kv_blocks_total_ = nullptr;
  DashboardHub hub_;
  Engine engine_;  // after metrics_ and hub_: stops (and stops reporting) before they go
  std::unique_ptr<DashboardEvents> dashboard_;
  OpenAiEndpoints endpoints_;
  HttpRouter router_;
  std::unique_ptr<HttpFront> front_;
  int port_ = -1;
  std::mutex shutdown_mutex_;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace ridge::server
