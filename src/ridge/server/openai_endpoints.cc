#include "ridge/server/openai_endpoints.h"

#include <fmt/format.h>

#include <ctime>

#include "ridge/server/api_error.h"
#include "ridge/server/generation_session.h"
#include "ridge/server/http_front.h"
#include "ridge/server/json_fields.h"

namespace ridge::server {

using nlohmann::json;

namespace {

constexpr int64_t kCompletionDefaultMaxTokens = 16;  // OpenAI's legacy default

void SetJson(httplib::Response& res, const json& value) { res.set_content(DumpJson(value), "application/json"); }

// Special-token texts become those tokens when `parse_special` (always for a
// rendered chat template, by default for a prompt). Text the tokenizer refuses
// (a byte the vocabulary has no token for, say) is the client's text that this
// model cannot take: a 400 naming `param`, not a server fault.
std::vector<TokenId> EncodeRequestText(const Tokenizer& tokenizer, const std::string& text, bool add_bos,
                                       bool parse_special, const std::string& param) {
  try {
    return tokenizer.Encode(text, add_bos, parse_special);
  } catch (const Error& e) {
    ThrowInvalid(param, fmt::format("the model's tokenizer cannot encode '{}': {}", param, e.what()));
  }
}

}  // namespace

// One generation whose response is being written: held by the handler while
// it waits for a whole answer, or by the content provider's closures of a
// stream, so it lives exactly as long as the response.
struct OpenAiEndpoints::Generation {
  Generation(OpenAiEndpoints& owner, GenerationSpec spec)
      : owner(owner), session(owner.engine_, owner.tokenizer_, std::move(spec)) {}

  OpenAiEndpoints& owner;
  GenerationSession session;
  ApiKind kind = ApiKind::kCompletion;
  ResponseHeader header;
  bool stream = false;
  bool include_usage = false;
  bool want_logprobs = false;
  std::string grammar_param;  // the request field that set its grammar (GenerationFields::grammar_param)
  std::string echo_text;
  bool started = false;   // the first event (role / echo) went out
  std::chrono::steady_clock::time_point last_write = std::chrono::steady_clock::now();  // streams: for pings
  int64_t text_offset = 0;
  // Non-streaming: everything so far.
  std::string text;
  std::vector<sampling::SampledToken> tokens;
  // Chat requests with tools (tool_choice not none): the reply's text is
  // parsed for calls as it comes; with parallel_tool_calls false, the first
  // call ends the reply (the parser drops what follows it).
  std::optional<ToolCallParser> tool_parser;
  // tool_choice names a function: the whole reply is that call's arguments
  // (the grammar holds them to its parameters), streamed as they come.
  std::optional<ToolCall> named_call;
  bool named_call_announced = false;  // streams: the chunk with its id and name went out

  json Logprobs(std::span<const sampling::SampledToken> ts) {
    if (!want_logprobs) return nullptr;
    return LogprobsJson(kind, owner.tokenizer_, ts, &text_offset);
  }

  json Usage() const {
    if (!owner.engine_.options().speculation.enabled())
      return UsageJson(session.n_prompt_tokens(), session.n_completion_tokens());
    const SpecDecodeCounts speculation = session.speculation();
    return UsageJson(session.n_prompt_tokens(), session.n_completion_tokens(), &speculation);
  }

  static bool Failed(const GenerationDelta& d) {
    return d.finished && d.finish_kind != FinishKind::kStop && d.finish_kind != FinishKind::kLength;
  }

  ApiError FailureOf(const GenerationDelta& d) const {
    if (d.finish_kind == FinishKind::kAbort)
      return ApiError(503, "server_error", "the request was cancelled: the server is shutting down", "", "cancelled");
    if (d.request_fault)  // its grammar could not be followed: the client's to change
      return ApiError(400, "invalid_request_error", "generation failed: " + d.error, grammar_param);
    return ApiError(500, "server_error", "generation failed: " + (d.error.empty() ? std::string("unknown") : d.error));
  }

  // A named call's arguments gain the delta's text (whitespace before the
  // JSON, which the grammar allows, is left out); returns what was added.
  std::string ArgumentsPiece(const GenerationDelta& d) {
    std::string piece = d.text;
    if (named_call->arguments.empty()) piece.erase(0, std::min(piece.size(), piece.find_first_not_of(" \t\r\n")));
    named_call->arguments += piece;
    return piece;
  }

  // What the reply's text so far holds: content to show, and calls.
  ToolCallEvents SplitCalls(const GenerationDelta& d) {
    ToolCallEvents events;
    if (!tool_parser) {
      events.content = d.text;
      return events;
    }
    events = tool_parser->Feed(d.text);
    if (d.finished && !Failed(d)) {
      ToolCallEvents rest = tool_parser->Finish();
      events.content += rest.content;
      for (auto& c : rest.calls) events.calls.push_back(std::move(c));
    }
    if (tool_parser->full()) session.Stop();  // parallel_tool_calls false: the reply has its call
    return events;
  }

  // The reply's calls so far.
  std::vector<ToolCall> Calls() const {
    if (named_call) return {*named_call};
    if (tool_parser) return tool_parser->calls();
    return {};
  }

  // Non-streaming: adds a delta to the answer so far.
  void Absorb(GenerationDelta& d) {
    if (named_call)
      ArgumentsPiece(d);
    else
      text += SplitCalls(d).content;
    for (auto& t : d.tokens) tokens.push_back(std::move(t));
  }

  // The SSE text for one delta.
  // A named call's chunks: its id and name first, then each piece of its arguments.
  std::string NamedCallEvents(const GenerationDelta& d) {
    std::string out;
    const std::string piece = ArgumentsPiece(d);
    if (!named_call_announced) {
      named_call_announced = true;
      ToolCall head{named_call->id, named_call->name, ""};
      out += SseEvent(ChatChunk(header, ToolCallDeltas(0, head)[0], nullptr, FinishKind::kNone, include_usage));
    }
    if (!piece.empty() || (want_logprobs && !d.tokens.empty())) {
      json delta = piece.empty() ? json::object()
                                 : json{{"tool_calls", json::array({{{"index", 0}, {"function", {{"arguments", piece}}}}})}};
      json lp = d.tokens.empty() ? json(nullptr) : Logprobs(d.tokens);
      out += SseEvent(ChatChunk(header, std::move(delta), std::move(lp), FinishKind::kNone, include_usage));
    }
    if (d.finished && !Failed(d))
      out += SseEvent(ChatChunk(header, json::object(), nullptr, d.finish_kind, include_usage, /*called_tools=*/true));
    return out;
  }

  std::string StreamEvents(const GenerationDelta& d) {
    std::string out;
    const bool failed = Failed(d);
    if (named_call) {
      out = NamedCallEvents(d);
    } else {
      out = ContentAndCallEvents(d);
    }
    if (d.finished) {
      if (failed) out += SseEvent(ErrorJson(FailureOf(d)));
      if (include_usage) out += SseEvent(UsageChunk(kind, header, Usage()));
      out += kSseDone;
    }
    return out;
  }

  // Content (and, with tools, the calls parsed out of it) for one delta.
  std::string ContentAndCallEvents(const GenerationDelta& d) {
    std::string out;
    const bool failed = Failed(d);
    ToolCallEvents events = SplitCalls(d);
    // Each call streams as its own chunks, before the piece's other text.
    for (const auto& [index, call] : events.calls)
      for (json& delta : ToolCallDeltas(index, call))
        out += SseEvent(ChatChunk(header, std::move(delta), nullptr, FinishKind::kNone, include_usage));
    const std::string& content = events.content;
    if (!content.empty() || (want_logprobs && !d.tokens.empty()) || (d.finished && !failed)) {
      const FinishKind finish = failed ? FinishKind::kNone : d.finish_kind;
      json lp = d.tokens.empty() ? json(nullptr) : Logprobs(d.tokens);  // null unless asked for
      if (kind == ApiKind::kChat) {
        json delta = content.empty() && (d.finished || tool_parser) ? json::object() : json{{"content", content}};
        out += SseEvent(ChatChunk(header, std::move(delta), std::move(lp), finish, include_usage, !Calls().empty()));
      } else {
        out += SseEvent(CompletionChunk(header, d.text, std::move(lp), finish, include_usage));
      }
    }
    return out;
  }

  // The whole JSON response, once finished.
  std::string FinalBody(const GenerationDelta& d) {
    if (Failed(d)) return DumpJson(ErrorJson(FailureOf(d)));
    json lp = Logprobs(tokens);
    if (kind == ApiKind::kChat)
      return DumpJson(ChatResponse(header, text, std::move(lp), d.finish_kind, Usage(), Calls()));
    return DumpJson(CompletionResponse(header, echo_text + text, std::move(lp), d.finish_kind, Usage()));
  }

  // One call of a stream's content provider. A throw here (detokenizing,
  // say) is a server fault: the request ends and so does the stream, with a
  // 500 error event; the status is already sent.
  bool Pump(httplib::DataSink& sink) {
    try {
      return PumpSlice(sink);
    } catch (const std::exception& e) {
      session.Abort();
      const std::string out = SseEvent(ErrorJson(ToApiError(e))) + std::string(kSseDone);
      if (!sink.write(out.data(), out.size())) return false;
      sink.done();
      return true;
    }
  }

  // Waits a slice for the engine and writes the events that came.
  bool PumpSlice(httplib::DataSink& sink) {
    if (!started) {
      started = true;
      std::string first;
      if (kind == ApiKind::kChat)
        first = SseEvent(ChatChunk(header, json{{"role", "assistant"}, {"content", ""}}, nullptr, FinishKind::kNone,
                                   include_usage));
      else if (!echo_text.empty())
        first = SseEvent(CompletionChunk(header, echo_text, nullptr, FinishKind::kNone, include_usage));
      if (!first.empty() && !sink.write(first.data(), first.size())) return Abandon();
      last_write = std::chrono::steady_clock::now();
    }
    GenerationDelta d;
    std::string out;
    if (session.Next(d, owner.config_.poll_interval)) out = StreamEvents(d);
    const auto now = std::chrono::steady_clock::now();
    if (out.empty() && now - last_write >= owner.config_.sse_ping_interval) out = ": ping\n\n";
    if (!out.empty()) {
      if (!sink.write(out.data(), out.size())) return Abandon();
      last_write = now;
    }
    if (d.finished) sink.done();
    return true;
  }

  bool Abandon() {
    session.Abort();
    return false;
  }
};

OpenAiEndpoints::OpenAiEndpoints(Engine& engine, const Tokenizer& tokenizer, EndpointConfig config)
    : engine_(engine),
      tokenizer_(tokenizer),
      config_(std::move(config)),
      n_ctx_(engine.model().config().n_ctx_train),
      created_(static_cast<int64_t>(std::time(nullptr))) {}

void OpenAiEndpoints::CheckModel(const std::string& model) const {
  if (model.empty() || model == config_.model_name) return;
  throw ApiError(404, "invalid_request_error",
                 fmt::format("The model '{}' does not exist; this server serves '{}'", model, config_.model_name),
                 "model", "model_not_found");
}

std::vector<TokenId> OpenAiEndpoints::ChatPrompt(const std::vector<ChatMessage>& messages,
                                                 bool add_generation_prompt,
                                                 const nlohmann::ordered_json& tools) const {
  const std::string text = config_.chat_template.Render(messages, add_generation_prompt, tools);
  return EncodeRequestText(tokenizer_, text, tokenizer_.add_bos(), /*parse_special=*/true, "messages");
}

void OpenAiEndpoints::Generate(ApiKind kind, const GenerationFields& f, std::vector<TokenId> prompt,
                               const char* prompt_param, std::string echo_text, const ChatRequest* tools,
                               httplib::Response& res) {
  const int64_t n_prompt = static_cast<int64_t>(prompt.size());
  if (n_prompt == 0) ThrowInvalid(prompt_param, "the prompt has no tokens");
  if (n_prompt >= n_ctx_)
    ThrowInvalid(prompt_param,
                 fmt::format("This model's maximum context length is {} tokens; the prompt has {} tokens, leaving "
                             "no room to generate",
                             n_ctx_, n_prompt),
                 "context_length_exceeded");
  if (f.max_tokens && n_prompt + *f.max_tokens > n_ctx_)
    ThrowInvalid("max_tokens",
                 fmt::format("This model's maximum context length is {} tokens; you requested {} tokens ({} in the "
                             "prompt, {} to generate)",
                             n_ctx_, n_prompt + *f.max_tokens, n_prompt, *f.max_tokens),
                 "context_length_exceeded");
  GenerationSpec spec;
  spec.max_new_tokens = f.max_tokens.value_or(kind == ApiKind::kChat ? n_ctx_ - n_prompt
                                                                     : std::min(kCompletionDefaultMaxTokens,
                                                                                n_ctx_ - n_prompt));
  spec.prompt = std::move(prompt);
  spec.sampling = f.sampling;
  if (!f.seed_given) spec.sampling.seed = sampling::RandomSeed();
  try {
    sampling::Validate(spec.sampling);
  } catch (const Error& e) {
    ThrowInvalid("", e.what());
  }
  spec.ignore_eos = f.ignore_eos;
  spec.stop = f.stop;
  spec.text_starts_fresh = kind == ApiKind::kChat;
  spec.grammar = f.grammar;
  if (draining_) throw ErrorForStatus(503);

  std::shared_ptr<Generation> g;
  try {
    g = std::make_shared<Generation>(*this, std::move(spec));
  } catch (const QueueFullError& e) {
    throw ApiError(429, "rate_limit_error", e.what(), "", "queue_full");
  } catch (const EngineStoppedError& e) {
    throw ApiError(503, "server_error", e.what(), "", "unavailable");
  } catch (const GrammarRefusedError& e) {
    ThrowInvalid(f.grammar_param, e.what());
  } catch (const ApiError&) {
    throw;
  } catch (const Error& e) {
    // Submit's other refusals are requests that can never run: the client's mistake.
    ThrowInvalid(prompt_param, e.what());
  }
  g->kind = kind;
  g->header = ResponseHeader{NewResponseId(kind), static_cast<int64_t>(std::time(nullptr)), config_.model_name};
  g->stream = f.stream;
  g->include_usage = f.include_usage;
  g->want_logprobs = f.sampling.wants_logprobs();
  g->grammar_param = f.grammar_param;
  g->echo_text = std::move(echo_text);
  g->text_offset = static_cast<int64_t>(g->echo_text.size());
  if (tools && tools->tool_choice != ToolChoice::kNone) {
    // Ids unique across replies: the response id's random part, then the call's index.
    const std::string& id = g->header.id;
    const std::string id_prefix = "call_" + id.substr(id.find('-') + 1) + "_";
    if (tools->tool_choice == ToolChoice::kNamed) {
      g->named_call = ToolCall{id_prefix + "0", tools->tool_choice_name, ""};
    } else {
      // A forced reply is a JSON array of calls (tool_call_grammar.h); otherwise the template's format.
      const ToolCallFormat format =
          tools->tool_choice == ToolChoice::kRequired ? ToolCallFormat::kJson : config_.chat_template.tool_format;
      g->tool_parser.emplace(format, id_prefix,
                             tools->parallel_tool_calls ? std::numeric_limits<size_t>::max() : size_t{1});
    }
  }
  if (!f.stream) return AnswerWhole(*g, res);
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream", [g](size_t /*offset*/, httplib::DataSink& sink) { return g->Pump(sink); },
      // Runs when the response ends for any reason (done, write error,
      // server stopping): a request still running is cancelled.
      [g](bool /*success*/) { g->session.Abort(); });
}

void OpenAiEndpoints::AnswerWhole(Generation& g, httplib::Response& res) {
  // The handler waits for the whole answer, so the status is the true one:
  // 200, or the error's 5xx. Between slices it looks at its client, without
  // writing: one that has gone cancels the request (kAbort) and is answered
  // nothing.
  GenerationDelta d;
  auto next_look = std::chrono::steady_clock::now();
  try {
    for (;;) {
      const bool got = g.session.Next(d, config_.poll_interval);
      if (const auto now = std::chrono::steady_clock::now(); now >= next_look) {
        if (RequestPeerGone()) return g.session.Abort();
        next_look = now + config_.poll_interval;
      }
      if (!got) continue;
      g.Absorb(d);
      if (!d.finished) continue;
      if (Generation::Failed(d)) throw g.FailureOf(d);
      res.set_content(g.FinalBody(d), "application/json");
      return;
    }
  } catch (...) {
    g.session.Abort();  // a fault of ours while waiting (detokenizing, say): 500 from the caller
    throw;
  }
}

void OpenAiEndpoints::Completions(const httplib::Request& req, httplib::Response& res) {
  CompletionRequest r = ParseCompletionRequest(ParseJsonObject(req.body), req.body);
  CheckModel(r.model);
  std::vector<TokenId> prompt;
  std::string echo_text;
  if (r.prompt_text) {
    prompt = EncodeRequestText(tokenizer_, *r.prompt_text, tokenizer_.add_bos(), r.parse_special, "prompt");
    if (r.echo) echo_text = *r.prompt_text;
  } else {
    for (size_t i = 0; i < r.prompt_tokens.size(); ++i) {
      if (r.prompt_tokens[i] >= tokenizer_.n_vocab())
        ThrowInvalid(fmt::format("prompt[{}]", i), fmt::format("token id {} is outside the vocabulary [0, {})",
                                                               r.prompt_tokens[i], tokenizer_.n_vocab()));
      prompt.push_back(static_cast<TokenId>(r.prompt_tokens[i]));
    }
    if (r.echo) echo_text = tokenizer_.Decode(prompt);
  }
  Generate(ApiKind::kCompletion, r, std::move(prompt), "prompt", std::move(echo_text), nullptr, res);
}

void OpenAiEndpoints::ChatCompletions(const httplib::Request& req, httplib::Response& res) {
  ChatRequest r = ParseChatRequest(ParseJsonObject(req.body), req.body);
  CheckModel(r.model);
  Generate(ApiKind::kChat, r, ChatPrompt(r.messages, r.add_generation_prompt, r.tools), "messages", {}, &r, res);
}

void OpenAiEndpoints::Models(const httplib::Request&, httplib::Response& res) {
  json model{{"id", config_.model_name}, {"object", "model"},     {"created", created_},
             {"owned_by", "ridge"},      {"max_model_len", n_ctx_}};
  SetJson(res, json{{"object", "list"}, {"data", json::array({model})}});
}

void OpenAiEndpoints::Model(const std::string& id, httplib::Response& res) {
  if (id != config_.model_name) CheckModel(id.empty() ? "(none)" : id);
  SetJson(res, json{{"id", config_.model_name}, {"object", "model"}, {"created", created_}, {"owned_by", "ridge"},
                    {"max_model_len", n_ctx_}});
}

void OpenAiEndpoints::Tokenize(const httplib::Request& req, httplib::Response& res) {
  TokenizeRequest r = ParseTokenizeRequest(ParseJsonObject(req.body), req.body);
  CheckModel(r.model);
  std::vector<TokenId> tokens =
      r.prompt ? EncodeRequestText(tokenizer_, *r.prompt, r.add_special_tokens && tokenizer_.add_bos(),
                                   r.parse_special, "prompt")
               : ChatPrompt(r.messages, r.add_generation_prompt, r.tools);
  SetJson(res, json{{"tokens", tokens}, {"count", tokens.size()}, {"max_model_len", n_ctx_}});
}

void OpenAiEndpoints::Detokenize(const httplib::Request& req, httplib::Response& res) {
  DetokenizeRequest r = ParseDetokenizeRequest(ParseJsonObject(req.body));
  CheckModel(r.model);
  std::vector<TokenId> ids;
  for (size_t i = 0; i < r.tokens.size(); ++i) {
    if (r.tokens[i] >= tokenizer_.n_vocab())
      ThrowInvalid(fmt::format("tokens[{}]", i), fmt::format("token id {} is outside the vocabulary [0, {})",
                                                             r.tokens[i], tokenizer_.n_vocab()));
    ids.push_back(static_cast<TokenId>(r.tokens[i]));
  }
  SetJson(res, json{{"prompt", tokenizer_.Decode(ids)}});
}

}  // namespace ridge::server
