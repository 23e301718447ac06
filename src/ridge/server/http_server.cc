#include "ridge/server/http_server.h"

#include <sys/socket.h>

#include <csignal>

#include "ridge/server/api_error.h"

namespace ridge::server {
namespace {

EndpointConfig MakeEndpointConfig(const LlamaModel& model, const Tokenizer& tokenizer, const ServerOptions& o) {
  if (o.model_name.empty()) Fail("the server needs a model name");
  EndpointConfig c;
  c.model_name = o.model_name;
  c.poll_interval = o.poll_interval;
  c.json_probe_interval = o.json_probe_interval;
  c.sse_ping_interval = o.sse_ping_interval;
  std::string template_text;
  try {
    template_text = model.file().GetString("tokenizer.chat_template").value_or("");
  } catch (const Error&) {
    template_text.clear();  // present but not a string: use the plain fallback
  }
  c.chat_template = ChatTemplate::Detect(template_text);
  if (o.chat_family) c.chat_template.family = *o.chat_family;
  if (tokenizer.bos_id() >= 0) c.chat_template.bos_text = tokenizer.TokenPiece(tokenizer.bos_id());
  if (tokenizer.eos_id() >= 0) c.chat_template.eos_text = tokenizer.TokenPiece(tokenizer.eos_id());
  return c;
}

void WriteError(httplib::Response& res, const ApiError& e, int retry_after_s) {
  res.status = e.status();
  if (e.status() == 429) res.set_header("Retry-After", std::to_string(retry_after_s));
  if (e.status() == 401) res.set_header("WWW-Authenticate", "Bearer");
  res.set_content(DumpJson(ErrorJson(e)), "application/json");
}

// Compares without an early exit, so timing does not reveal how much of the key matched.
bool SameKey(const std::string& given, const std::string& key) {
  if (given.size() != key.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ key[i]);
  return diff == 0;
}

}  // namespace

bool HttpListener::SetBacklog(int backlog) {
  // listen() on a listening socket only updates its backlog (Linux, BSD).
  return svr_sock_ != INVALID_SOCKET && ::listen(svr_sock_, backlog) == 0;
}

OpenAiServer::OpenAiServer(LlamaModel& model, const Tokenizer& tokenizer, const EngineOptions& engine_options,
                           ServerOptions options)
    : options_(std::move(options)),
      metrics_(registry_, {{"model_name", options_.model_name}}),
      kv_blocks_used_(registry_.AddGauge("ridge_kv_cache_blocks_used", "KV-cache blocks held by running requests.",
                                         {{"model_name", options_.model_name}})),
      kv_blocks_total_(registry_.AddGauge("ridge_kv_cache_blocks_total", "KV-cache blocks in the pool.",
                                          {{"model_name", options_.model_name}})),
      engine_(model, tokenizer, engine_options),
      endpoints_(engine_, tokenizer, MakeEndpointConfig(model, tokenizer, options_)) {
  if (options_.max_body_bytes < 1) Fail("the body size limit must be positive, got {}", options_.max_body_bytes);
  if (options_.http_threads < 1) Fail("the server needs at least one HTTP thread, got {}", options_.http_threads);
  engine_.set_metrics(&metrics_);
  Route();
}

OpenAiServer::~OpenAiServer() { Shutdown(std::chrono::milliseconds(0)); }

void OpenAiServer::CheckApiKey(const httplib::Request& req) const {
  if (options_.api_key.empty()) return;
  const std::string auth = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  if (auth.size() <= prefix.size() || auth.compare(0, prefix.size(), prefix) != 0)
    throw ApiError(401, "invalid_request_error", "an API key is required: send 'Authorization: Bearer KEY'", "",
                   "invalid_api_key");
  if (!SameKey(auth.substr(prefix.size()), options_.api_key))
    throw ApiError(401, "invalid_request_error", "the API key is wrong", "", "invalid_api_key");
}

OpenAiServer::Handler OpenAiServer::Guard(bool needs_key, Handler handler) {
  return [this, needs_key, handler = std::move(handler)](const httplib::Request& req, httplib::Response& res) {
    try {
      if (needs_key) CheckApiKey(req);
      handler(req, res);
    } catch (const std::exception& e) {
      // An ApiError carries its status; anything else is the server's fault (500).
      WriteError(res, ToApiError(e), options_.retry_after_s);
    }
  };
}

void OpenAiServer::Metrics(httplib::Response& res) {
  EngineStats s = engine_.Stats();
  kv_blocks_used_.Set(static_cast<double>(s.kv.blocks_used));
  kv_blocks_total_.Set(static_cast<double>(s.kv.blocks_total));
  res.set_content(registry_.RenderText(), kPrometheusContentType);
}

void OpenAiServer::Route() {
  auto& e = endpoints_;
  http_.Post("/v1/completions", Guard(true, [&e](auto& req, auto& res) { e.Completions(req, res); }));
  http_.Post("/v1/chat/completions", Guard(true, [&e](auto& req, auto& res) { e.ChatCompletions(req, res); }));
  http_.Get("/v1/models", Guard(true, [&e](auto& req, auto& res) { e.Models(req, res); }));
  http_.Get(R"(/v1/models/(.+))", Guard(true, [&e](auto& req, auto& res) { e.Model(req, res); }));
  http_.Post("/tokenize", Guard(true, [&e](auto& req, auto& res) { e.Tokenize(req, res); }));
  http_.Post("/detokenize", Guard(true, [&e](auto& req, auto& res) { e.Detokenize(req, res); }));
  http_.Get("/health", Guard(false, [&e](auto&, auto& res) {
              if (e.draining()) throw ErrorForStatus(503);
              res.set_content(R"({"status":"ok"})", "application/json");
            }));
  http_.Get("/metrics", Guard(false, [this](auto&, auto& res) { Metrics(res); }));
  // Statuses the library sets itself (404 unknown path, 413 body too large,
  // 400 broken HTTP) get an OpenAI error body too; ours already have one.
  http_.set_error_handler([this](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) WriteError(res, ErrorForStatus(res.status), options_.retry_after_s);
  });
  http_.set_exception_handler([this](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    WriteError(res, ErrorForStatus(500), options_.retry_after_s);
  });
  http_.set_payload_max_length(static_cast<size_t>(options_.max_body_bytes));
  // SSE chunks are small: without this, Nagle's algorithm holds each one
  // back until the previous is acknowledged, adding latency to every token.
  http_.set_tcp_nodelay(true);
  const size_t n_threads = static_cast<size_t>(options_.http_threads);
  http_.new_task_queue = [n_threads] { return new httplib::ThreadPool(n_threads); };
}

int OpenAiServer::Start() {
  std::lock_guard<std::mutex> lock(shutdown_mutex_);
  if (started_) Fail("the server is already started");
  // A client that hangs up must not kill the process when we write to it.
  std::signal(SIGPIPE, SIG_IGN);
  port_ = options_.port == 0 ? http_.bind_to_any_port(options_.host) : (http_.bind_to_port(options_.host, options_.port)
                                                                           ? options_.port
                                                                           : -1);
  if (port_ < 0) Fail("cannot listen on {}:{} (address in use, or not an address of this machine?)", options_.host,
                      options_.port);
  if (!http_.SetBacklog(SOMAXCONN)) Fail("cannot set the listen backlog on {}:{}", options_.host, port_);
  engine_.Start();
  listen_thread_ = std::thread([this] { http_.listen_after_bind(); });
  started_ = true;
  return port_;
}

void OpenAiServer::Shutdown(std::chrono::milliseconds grace) {
  std::lock_guard<std::mutex> lock(shutdown_mutex_);
  if (!started_ || stopped_) return;
  stopped_ = true;
  endpoints_.set_draining(true);
  auto wait_idle = [&](std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (endpoints_.active_requests() > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  wait_idle(grace);
  // Cancel whatever still runs: its streams see an abort and end their responses.
  engine_.Stop(/*cancel_running=*/true);
  wait_idle(std::chrono::seconds(10));
  http_.stop();
  if (listen_thread_.joinable()) listen_thread_.join();
}

}  // namespace ridge::server
