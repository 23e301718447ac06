#pragma once
// A tiny OpenAI-style streaming server for the benchmark's tests, on an
// ephemeral port of 127.0.0.1 (cpp-httplib), with scripted timing and
// failures so that client-side figures can be checked against it:
//   POST /v1/completions, /v1/chat/completions  SSE: text chunks of
//        tokens_per_chunk "tokens" (" tN" each), the first after
//        first_token_delay_ms, then one every chunk_interval_ms; a
//        finish_reason chunk, a usage chunk (unless send_usage is false),
//        "data: [DONE]". A chat stream starts with a role-only chunk.
//   POST /tokenize, /detokenize  whitespace "tokenizer" (one word = one id)
//   GET  /v1/models   {"data": [{"id": "fake-model"}]}
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace ridge::testing {

struct FakeServerConfig {
  int first_token_delay_ms = 30;
  int chunk_interval_ms = 10;
  int tokens_per_chunk = 1;
  bool send_usage = true;
  bool tokenizer_endpoints = true;
  // Request number k (0-based, in order of arrival) fails when
  // fail_every > 0 and k % fail_every == fail_every - 1, in the given way.
  int fail_every = 0;
  enum class Failure { kHttp500, kErrorEvent, kDropConnection } failure = Failure::kHttp500;
};

class FakeOpenAiServer {
 public:
  explicit FakeOpenAiServer(FakeServerConfig config = {}) : config_(config) {
    server_.new_task_queue = [] { return new httplib::ThreadPool(48); };
    server_.Post("/v1/completions", [this](const httplib::Request& q, httplib::Response& r) { Complete(q, r, false); });
    server_.Post("/v1/chat/completions",
                 [this](const httplib::Request& q, httplib::Response& r) { Complete(q, r, true); });
    server_.Get("/v1/models", [](const httplib::Request&, httplib::Response& r) {
      r.set_content(R"({"object":"list","data":[{"id":"fake-model","object":"model"}]})", "application/json");
    });
    if (config_.tokenizer_endpoints) {
      server_.Post("/tokenize", [this](const httplib::Request& q, httplib::Response& r) { Tokenize(q, r); });
      server_.Post("/detokenize", [this](const httplib::Request& q, httplib::Response& r) { Detokenize(q, r); });
    }
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeOpenAiServer() {
    server_.stop();
    thread_.join();
  }

  int port() const { return port_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int max_in_flight() const { return max_in_flight_.load(); }
  int64_t n_completion_requests() const { return n_requests_.load(); }
  std::vector<nlohmann::json> bodies() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return bodies_;
  }

 private:
  static int64_t WordCount(const std::string& text) {
    std::istringstream in(text);
    std::string word;
    int64_t n = 0;
    while (in >> word) ++n;
    return n;
  }

  void Complete(const httplib::Request& request, httplib::Response& response, bool chat) {
    const int64_t k = n_requests_++;
    const nlohmann::json body = nlohmann::json::parse(request.body);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      bodies_.push_back(body);
    }
    const bool fail = config_.fail_every > 0 && k % config_.fail_every == config_.fail_every - 1;
    if (fail && config_.failure == FakeServerConfig::Failure::kHttp500) {
      response.status = 500;
      response.set_content(R"({"error":{"message":"scripted failure","type":"server_error"}})", "application/json");
      return;
    }
    const std::string prompt = chat ? body["messages"][0]["content"].get<std::string>() : body["prompt"].get<std::string>();
    const int64_t n_prompt = WordCount(prompt);
    const int64_t max_tokens = body["max_tokens"].get<int64_t>();
    const int now = ++in_flight_;
    for (int seen = max_in_flight_.load(); now > seen && !max_in_flight_.compare_exchange_weak(seen, now);) {
    }
    FakeServerConfig config = config_;
    response.set_chunked_content_provider("text/event-stream", [this, config, chat, fail, n_prompt, max_tokens](
                                                                    size_t, httplib::DataSink& sink) {
      auto send = [&](const nlohmann::json& j) {
        const std::string event = "data: " + j.dump() + "\n\n";
        return sink.write(event.data(), event.size());
      };
      auto choice = [&](const std::string& text, const nlohmann::json& finish) {
        nlohmann::json c = chat ? nlohmann::json{{"index", 0}, {"delta", {{"content", text}}}, {"finish_reason", finish}}
                                : nlohmann::json{{"index", 0}, {"text", text}, {"finish_reason", finish}};
        return nlohmann::json{{"id", "x"}, {"choices", nlohmann::json::array({c})}};
      };
      bool ok = true;
      if (chat) ok = send({{"id", "x"}, {"choices", {{{"index", 0}, {"delta", {{"role", "assistant"}}}}}}});
      std::this_thread::sleep_for(std::chrono::milliseconds(config.first_token_delay_ms));
      int64_t produced = 0;
      for (int64_t chunk = 0; ok && produced < max_tokens; ++chunk) {
        if (chunk > 0) std::this_thread::sleep_for(std::chrono::milliseconds(config.chunk_interval_ms));
        std::string text;
        for (int t = 0; t < config.tokens_per_chunk && produced < max_tokens; ++t) text += " t" + std::to_string(produced++);
        ok = send(choice(text, nullptr));
        if (fail && chunk == 1) {
          --in_flight_;  // before the client can see the end
          if (config.failure == FakeServerConfig::Failure::kErrorEvent) {
            send({{"error", {{"message", "scripted mid-stream error"}, {"type", "server_error"}}}});
            sink.done();
          }
          return config.failure == FakeServerConfig::Failure::kErrorEvent;  // false drops the connection
        }
      }
      if (ok) ok = send(choice("", "length"));
      if (ok && config.send_usage)
        ok = send({{"id", "x"},
                   {"choices", nlohmann::json::array()},
                   {"usage", {{"prompt_tokens", n_prompt}, {"completion_tokens", produced},
                              {"total_tokens", n_prompt + produced}}}});
      // Leave the in-flight count before the client can see the end, so that
      // a client that starts its next request on [DONE] never finds this one
      // still counted.
      --in_flight_;
      if (ok) {
        const std::string done = "data: [DONE]\n\n";
        sink.write(done.data(), done.size());
      }
      sink.done();
      return true;
    });
  }

  void Tokenize(const httplib::Request& request, httplib::Response& response) {
    const nlohmann::json body = nlohmann::json::parse(request.body);
    std::istringstream in(body["prompt"].get<std::string>());
    std::string word;
    nlohmann::json ids = nlohmann::json::array();
    std::lock_guard<std::mutex> lock(mutex_);
    while (in >> word) {
      auto [it, inserted] = word_ids_.emplace(word, static_cast<int>(words_.size()));
      if (inserted) words_.push_back(word);
      ids.push_back(it->second);
    }
    response.set_content(nlohmann::json{{"tokens", ids}, {"count", ids.size()}}.dump(), "application/json");
  }

  void Detokenize(const httplib::Request& request, httplib::Response& response) {
    const nlohmann::json body = nlohmann::json::parse(request.body);
    std::string text;
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& id : body["tokens"]) {
      if (!text.empty()) text += ' ';
      text += words_.at(id.get<size_t>());
    }
    response.set_content(nlohmann::json{{"prompt", text}}.dump(), "application/json");
  }

  FakeServerConfig config_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<int> in_flight_{0};
  std::atomic<int> max_in_flight_{0};
  std::atomic<int64_t> n_requests_{0};
  mutable std::mutex mutex_;
  std::vector<nlohmann::json> bodies_;
  std::map<std::string, int> word_ids_;
  std::vector<std::string> words_;
};

}  // namespace ridge::testing
