#pragma once
// What each OpenAI endpoint does with a parsed request: tokenize (on the
// HTTP thread; control-token texts such as "<|eot_id|>" in a prompt become
// those tokens, as in Hugging Face tokenizers, vLLM and llama.cpp), check
// the request against the model (context length,
// vocabulary, model name), submit to the engine, and answer — as SSE chunks
// when streaming, as one JSON object otherwise.
// A stream is written by a chunked content provider that waits for the
// engine in short slices and writes at least every sse_ping_interval, so a
// client that goes away is noticed at the next write that fails and its
// request cancelled (kAbort), to be dropped at the next engine step. A
// non-streaming answer is waited for by the handler, which looks at its
// client between slices (RequestPeerGone) and answers with the true status:
// 200, or 500 for an engine error, 503 when a shutdown cancelled it.
// Errors are thrown as ApiError for the HTTP layer to report.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <string>

#include "ridge/engine/engine.h"
#include "ridge/server/chat_template.h"
#include "ridge/server/openai_request.h"
#include "ridge/server/response_format.h"
#include "ridge/tokenizer/tokenizer.h"

namespace ridge::server {

struct EndpointConfig {
  std::string model_name;
  ChatTemplate chat_template;
  // How long a handler waits for tokens before looking at its client again.
  std::chrono::milliseconds poll_interval{20};
  // A stream that has written nothing for this long (queued, long prefill)
  // writes an SSE comment line (": ping", which SSE clients skip), so that a
  // client gone is noticed; a stream producing tokens notices at its next token.
  std::chrono::milliseconds sse_ping_interval{1000};
};

class OpenAiEndpoints {
 public:
  OpenAiEndpoints(Engine& engine, const Tokenizer& tokenizer, EndpointConfig config);

  void Completions(const httplib::Request& req, httplib::Response& res);
  void ChatCompletions(const httplib::Request& req, httplib::Response& res);
  void Models(const httplib::Request& req, httplib::Response& res);
  void Model(const std::string& id, httplib::Response& res);  // /v1/models/{id}
  void Tokenize(const httplib::Request& req, httplib::Response& res);
  void Detokenize(const httplib::Request& req, httplib::Response& res);

  // While draining, new generation requests get 503.
  void set_draining(bool draining) { draining_ = draining; }
  bool draining() const { return draining_.load(); }
  const EndpointConfig& config() const { return config_; }

 private:
  struct Generation;
  // 404 model_not_found unless `model` is empty or the served model's name.
  void CheckModel(const std::string& model) const;
  std::vector<TokenId> ChatPrompt(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                  const nlohmann::ordered_json& tools) const;
  // Non-streaming: waits for the whole answer and sets it (or throws its error).
  void AnswerWhole(Generation& g, httplib::Response& res);
  // tools: a chat request whose reply is parsed for tool calls (null: none).
  void Generate(ApiKind kind, const GenerationFields& fields, std::vector<TokenId> prompt, const char* prompt_param,
                std::string echo_text, const ChatRequest* tools, httplib::Response& res);

  Engine& engine_;
  Tokenizer tokenizer_;
  EndpointConfig config_;
  int64_t n_ctx_;
  int64_t created_;
  std::atomic<bool> draining_{false};
};

}  // namespace ridge::server
