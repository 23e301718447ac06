#include "ridge/server/http_server.h"

#include <strings.h>

#include <csignal>

#include "ridge/kv/paged_kv_cache.h"
#include "ridge/server/api_error.h"
#include "ridge/server/webui_assets.h"

namespace ridge::server {
namespace {

EndpointConfig MakeEndpointConfig(const Model& model, const Tokenizer& tokenizer, const ServerOptions& o) {
  if (o.model_name.empty()) Fail("the server needs a model name");
  EndpointConfig c;
  c.model_name = o.model_name;
  c.poll_interval = o.poll_interval;
  c.sse_ping_interval = o.sse_ping_interval;
  std::string template_text;
  try {
    template_text = model.file().GetString("tokenizer.chat_template").value_or("");
  } catch (const Error&) {
    template_text.clear();  // present but not a string: use the plain fallback
  }
  if (o.chat_template_jinja) {
    c.chat_template = ChatTemplate::FromJinja(*o.chat_template_jinja);
    if (!c.chat_template.jinja) Fail("the chat template does not parse: {}", c.chat_template.jinja_error);
  } else if (o.chat_family) {
    c.chat_template = ChatTemplate::Detect(template_text);
    c.chat_template.family = *o.chat_family;
  } else {
    c.chat_template = ChatTemplate::FromJinja(template_text);
  }
  c.chat_template.strip_leading_bos = tokenizer.add_bos();
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

DashboardContext MakeDashboardContext(const Model& model, const EngineOptions& engine, const ServerOptions& o,
                                      int64_t kv_blocks) {
  DashboardContext c;
  c.model_name = o.model_name;
  c.shape = ShapeFromGguf(model.file());
  c.kv_shape = model.KvShape(engine.kv_type, engine.kv_block_tokens);
  c.kv_blocks = kv_blocks;
  if (o.roofline) {
    c.roofline = *o.roofline;
  } else {
    c.roofline = {FindHardware("h100"), "built-in profile h100 (no roofline chosen)"};
  }
  c.cost.kv_bytes_per_element = KvBytesPerElement(engine.kv_type);
  c.cost.activation_bytes = 4;  // the CPU engine's activations are FP32
  c.ping_interval = o.sse_ping_interval;
  return c;
}

}  // namespace

OpenAiServer::OpenAiServer(Model& model, const Tokenizer& tokenizer, const EngineOptions& engine_options,
                           ServerOptions options)
    : options_(std::move(options)),
      metrics_(registry_, {{"model_name", options_.model_name}}),
      kv_blocks_used_(registry_.AddGauge("ridge_kv_cache_blocks_used", "KV-cache blocks held by running requests.",
                                         {{"model_name", options_.model_name}})),
      kv_blocks_total_(registry_.AddGauge("ridge_kv_cache_blocks_capacity", "KV-cache blocks in the pool.",
                                          {{"model_name", options_.model_name}})),
      hub_(options_.dashboard),
      engine_(model, tokenizer, engine_options),
      dashboard_(std::make_unique<DashboardEvents>(
          hub_, metrics_, MakeDashboardContext(model, engine_options, options_, engine_.kv_blocks()))),
      endpoints_(engine_, tokenizer, MakeEndpointConfig(model, tokenizer, options_)) {
  if (options_.max_body_bytes < 1) Fail("the body size limit must be positive, got {}", options_.max_body_bytes);
  if (options_.max_header_bytes < 1)
    Fail("the header size limit must be positive, got {}", options_.max_header_bytes);
  if (engine_options.speculation.method == SpeculationOptions::Method::kDraftModel) {
    const MetricLabels model_label = {{"model_name", options_.model_name}};
    draft_kv_blocks_used_ = &registry_.AddGauge("ridge_draft_kv_cache_blocks_used",
                                                "The draft model's KV-cache blocks held by running requests.", model_label);
    draft_kv_blocks_total_ = &registry_.AddGauge("ridge_draft_kv_cache_blocks_capacity",
                                                 "The draft model's KV-cache blocks in its pool.", model_label);
  }
  engine_.set_metrics(&metrics_);
  engine_.set_observer(&hub_);
  Route();
  HttpFrontOptions front;
  front.host = options_.host;
  front.port = options_.port;
  front.worker_threads = options_.http_threads;
  front.max_connections = options_.max_connections;
  front.limits.max_head_bytes = static_cast<size_t>(options_.max_header_bytes);
  front.limits.max_body_bytes = static_cast<size_t>(options_.max_body_bytes);
  front.request_timeout = options_.request_timeout;
  front.keep_alive_timeout = options_.keep_alive_timeout;
  front.write_timeout = options_.write_timeout;
  front_ = std::make_unique<HttpFront>(
      front,
      [this](httplib::Request& req, httplib::Response& res) {
        router_.Route(req, res);
        // 404 and 405 from the router get an OpenAI error body too.
        if (res.status >= 400 && res.body.empty() && !res.content_provider_)
          WriteError(res, ErrorForStatus(res.status), options_.retry_after_s);
      },
      [this](int status, const std::string& message, httplib::Response& res) {
        // The status's usual type and code, with the front's precise message.
        const ApiError usual = ErrorForStatus(status);
        WriteError(res, ApiError(status, usual.type(), message, "", usual.code()), options_.retry_after_s);
      });
}

OpenAiServer::~OpenAiServer() { Shutdown(std::chrono::milliseconds(0)); }

void OpenAiServer::CheckApiKey(const httplib::Request& req) const {
  if (options_.api_key.empty()) return;
  const std::string auth = req.get_header_value("Authorization");
  // The scheme is case-insensitive (RFC 9110 11.1): "bearer KEY" is as good.
  constexpr std::string_view kScheme = "Bearer";
  const size_t key_at = auth.find_first_not_of(' ', kScheme.size());
  if (auth.size() <= kScheme.size() || auth[kScheme.size()] != ' ' ||
      ::strncasecmp(auth.c_str(), kScheme.data(), kScheme.size()) != 0 || key_at == std::string::npos)
    throw ApiError(401, "invalid_request_error", "an API key is required: send 'Authorization: Bearer KEY'", "",
                   "invalid_api_key");
  if (!SameKey(auth.substr(key_at), options_.api_key))
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
  if (draft_kv_blocks_used_) {
    draft_kv_blocks_used_->Set(static_cast<double>(s.draft_kv.blocks_used));
    draft_kv_blocks_total_->Set(static_cast<double>(s.draft_kv.blocks_total));
  }
  res.set_content(registry_.RenderText(), kPrometheusContentType);
}

void OpenAiServer::WebPage(const httplib::Request& req, httplib::Response& res) const {
  const WebAsset* asset = FindWebAsset(req.path);
  if (!asset) throw ErrorForStatus(404);
  res.set_content(std::string(asset->body), std::string(asset->content_type));
  // The page loads nothing from elsewhere; say so to the browser.
  res.set_header("Content-Security-Policy",
                 "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; object-src 'none'; "
                 "base-uri 'none'; frame-ancestors 'none'");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Cache-Control", "no-cache");
}

void OpenAiServer::Route() {
  auto& e = endpoints_;
  auto& r = router_;
  r.Add("POST", "/v1/completions", Guard(true, [&e](auto& req, auto& res) { e.Completions(req, res); }));
  r.Add("POST", "/v1/chat/completions", Guard(true, [&e](auto& req, auto& res) { e.ChatCompletions(req, res); }));
  r.Add("GET", "/v1/models", Guard(true, [&e](auto& req, auto& res) { e.Models(req, res); }));
  constexpr std::string_view kModelPrefix = "/v1/models/";
  r.AddPrefix("GET", std::string(kModelPrefix), Guard(true, [&e, kModelPrefix](auto& req, auto& res) {
                e.Model(req.path.substr(kModelPrefix.size()), res);
              }));
  r.Add("POST", "/tokenize", Guard(true, [&e](auto& req, auto& res) { e.Tokenize(req, res); }));
  r.Add("POST", "/detokenize", Guard(true, [&e](auto& req, auto& res) { e.Detokenize(req, res); }));
  r.Add("GET", "/health", Guard(false, [&e](auto&, auto& res) {
          if (e.draining()) throw ErrorForStatus(503);
          res.set_content(R"({"status":"ok"})", "application/json");
        }));
  r.Add("GET", "/metrics", Guard(options_.metrics_need_key, [this](auto&, auto& res) { Metrics(res); }));
  r.Add("GET", "/v1/dashboard/events", Guard(true, [this](auto& req, auto& res) { dashboard_->Events(req, res); }));
  if (options_.webui) {
    r.Add("GET", "/", Guard(false, [this](auto& req, auto& res) { WebPage(req, res); }));
    r.AddPrefix("GET", "/assets/", Guard(false, [this](auto& req, auto& res) { WebPage(req, res); }));
  }
}

int OpenAiServer::Start() {
  std::lock_guard<std::mutex> lock(shutdown_mutex_);
  if (started_) Fail("the server is already started");
  // A client that hangs up must not kill the process when we write to it.
  std::signal(SIGPIPE, SIG_IGN);
  port_ = front_->Bind();
  engine_.Start();
  front_->Start();
  started_ = true;
  return port_;
}

void OpenAiServer::Shutdown(std::chrono::milliseconds grace) {
  std::lock_guard<std::mutex> lock(shutdown_mutex_);
  if (!started_ || stopped_) return;
  stopped_ = true;
  endpoints_.set_draining(true);
  hub_.Close();  // dashboard streams end now
  front_->Drain();
  // Every request the front has handed to a worker, from before its handler
  // (which checks draining after the count: set above, read below, so either
  // the request is refused or it is waited for) to its response's last byte.
  // A generation counted from its submission on could run uncounted for a
  // moment, and a whole answer was no longer counted while it was written: a
  // shutdown then cut them (CI: HttpLoad.ShutdownWithoutGraceCancelsRunningStreams).
  auto wait_idle = [&](std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (front_->responses_in_flight() > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  wait_idle(grace);
  // Cancel whatever still runs: its streams see an abort and end their responses.
  engine_.Stop(/*cancel_running=*/true);
  wait_idle(std::chrono::seconds(10));
  front_->Stop();
}

}  // namespace ridge::server
