#include "ridge/server/dashboard_events.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "ridge/kv/kv_formula.h"
#include "ridge/roofline/step_cost.h"

namespace ridge::server {
namespace {

using nlohmann::json;

const char* Owner(int64_t owner) {
  switch (owner) {
    case KvBlockRun::kFree: return "free";
    case KvBlockRun::kCached: return "cached";
    case KvBlockRun::kShared: return "shared";
    default: return "request";
  }
}

}  // namespace

std::string NamedSseEvent(const char* name, const json& data) {
  return fmt::format("event: {}\ndata: {}\n\n", name, data.dump(-1, ' ', false, json::error_handler_t::replace));
}

DashboardEvents::DashboardEvents(DashboardHub& hub, const ServerMetrics& metrics, DashboardContext context)
    : hub_(hub), metrics_(metrics), context_(std::move(context)) {}

double DashboardEvents::Ms(Clock::time_point t) const { return MillisBetween(hub_.start(), t); }

json DashboardEvents::Hello() const {
  const KvCacheShape& k = context_.kv_shape;
  const double element_bytes = KvBytesPerElement(k.type);
  const double per_token = KvBytesPerToken(k.n_layers, k.n_kv_heads, k.head_dim, element_bytes);
  const HardwareProfile& hw = context_.roofline.hardware;
  json recent = json::array();
  for (const auto& e : hub_.RecentFinished()) recent.push_back(Finished(std::get<FinishedEvent>(*e)));
  return {
      {"version", 1},
      {"model", context_.model_name},
      {"now_ms", Ms(Clock::now())},
      {"snapshot_interval_ms", hub_.options().snapshot_interval.count()},
      {"kv",
       {{"n_layers", k.n_layers},
        {"n_kv_heads", k.n_kv_heads},
        {"head_dim", k.head_dim},
        {"type", GgmlTypeName(k.type)},
        {"bytes_per_element", element_bytes},
        {"bytes_per_token", per_token},
        {"formula", fmt::format("2 x {} layers x {} KV heads x {} head dim x {} bytes = {} bytes/token", k.n_layers,
                                k.n_kv_heads, k.head_dim, element_bytes, per_token)},
        {"block_tokens", k.block_tokens},
        {"block_bytes", PagedKvCache::BlockBytes(k)},
        {"blocks_total", context_.kv_blocks}}},
      {"roofline",
       {{"name", hw.name},
        {"description", hw.description},
        {"source", context_.roofline.source},
        {"peak_flops", hw.peak_flops},
        {"peak_note", hw.peak_note},
        {"attention_peak_flops", hw.AttentionPeak()},
        {"bandwidth_bytes_per_s", hw.bandwidth_bytes_per_s},
        {"ridge_point", hw.RidgePoint()}}},
      {"recent", std::move(recent)},
  };
}

json DashboardEvents::Snapshot(const EngineSnapshot& s, uint64_t dropped) const {
  auto request = [&](const RequestSnapshot& r) {
    return json{{"id", r.id},
                {"n_prompt", r.n_prompt},
                {"n_computed", r.n_computed},
                {"n_generated", r.n_generated},
                {"kv_blocks", r.kv_blocks},
                {"t_arrival_ms", Ms(r.arrival)}};
  };
  json running = json::array(), waiting = json::array(), map = json::array();
  for (const auto& r : s.running) running.push_back(request(r));
  for (const auto& r : s.waiting) waiting.push_back(request(r));
  for (const KvBlockRun& run : s.kv_map)
    map.push_back(run.owner >= 0 ? json{Owner(run.owner), run.count, run.owner} : json{Owner(run.owner), run.count});
  const KvAccounting& kv = s.kv;
  json finished = json::object();
  for (FinishKind kind : {FinishKind::kStop, FinishKind::kLength, FinishKind::kAbort, FinishKind::kError})
    finished[FinishKindName(kind)] = metrics_.finished(kind).Value();
  return {
      {"t_ms", Ms(s.at)},
      {"steps", s.steps},
      {"preemptions", s.preemptions},
      {"dropped_events", dropped},
      {"running", std::move(running)},
      {"waiting", std::move(waiting)},
      {"kv",
       {{"blocks_total", kv.blocks_total},
        {"blocks_used", kv.blocks_used},
        {"blocks_free", kv.blocks_free},
        {"blocks_cached", kv.blocks_cached},
        {"tokens_stored", kv.tokens_stored},
        {"bytes_used", kv.bytes_used},
        {"bytes_total", kv.bytes_total},
        {"bytes_per_token", kv.bytes_per_token},
        {"formula_bytes_stored", kv.bytes_per_token * static_cast<double>(kv.tokens_stored)},
        {"utilization", kv.utilization},
        {"prefix_hit_blocks", kv.prefix_hit_blocks},
        {"map", std::move(map)}}},
      {"metrics",
       {{"requests_finished", std::move(finished)},
        {"prompt_tokens", metrics_.prompt_tokens().Value()},
        {"generation_tokens", metrics_.generation_tokens().Value()},
        {"running", metrics_.running().Value()},
        {"waiting", metrics_.waiting().Value()},
        {"kv_usage_ratio", metrics_.kv_usage().Value()}}},
  };
}

json DashboardEvents::Queued(const QueuedEvent& e) const {
  return {{"id", e.id}, {"n_prompt", e.n_prompt}, {"t_ms", Ms(e.arrival)}};
}

json DashboardEvents::Step(const StepRecord& step) const {
  std::vector<StepChunk> chunks;
  json segments = json::array();
  int64_t prefill = 0, decode = 0;
  for (const StepSegment& s : step.segments) {
    chunks.push_back({s.prefill, s.tokens, s.context_before});
    (s.prefill ? prefill : decode) += s.tokens;
    segments.push_back({s.id, s.prefill ? "prefill" : "decode", s.tokens, s.context_before});
  }
  const StepCost cost = AnalyzeStep(context_.shape, chunks, context_.roofline.hardware, context_.cost);
  const double forward_s = std::chrono::duration<double>(step.forward_end - step.forward_start).count();
  return {{"step", step.step},
          {"t_start_ms", Ms(step.start)},
          {"t_end_ms", Ms(step.end)},
          {"forward_ms", forward_s * 1000.0},
          {"prefill_tokens", prefill},
          {"decode_tokens", decode},
          {"flops", cost.flops},
          {"bytes", cost.bytes},
          {"weight_bytes", cost.weight_bytes},
          {"kv_bytes", cost.kv_bytes},
          {"intensity", cost.intensity},
          {"achieved_flops_per_s", forward_s > 0 ? cost.flops / forward_s : 0.0},
          {"segments", std::move(segments)}};
}

json DashboardEvents::Finished(const FinishedEvent& e) const {
  const RequestTrace& t = e.trace;
  const RequestMetrics m = Summarize(t);
  auto at = [&](const std::optional<Clock::time_point>& p) { return p ? json(Ms(*p)) : json(nullptr); };
  return {{"id", e.id},
          {"finish_reason", FinishKindName(m.finish_kind)},
          {"n_prompt", m.n_prompt_tokens},
          {"n_output", m.n_output_tokens},
          {"kv_blocks", e.kv_blocks},
          {"t_arrival_ms", at(t.arrival())},
          {"t_scheduled_ms", at(t.scheduled())},
          {"t_first_token_ms", t.token_times().empty() ? json(nullptr) : json(Ms(t.token_times().front()))},
          {"t_finish_ms", at(t.finish())},
          {"ttft_ms", m.n_output_tokens > 0 ? json(m.ttft_ms) : json(nullptr)},
          {"tpot_ms", m.n_output_tokens > 1 ? json(m.tpot_ms) : json(nullptr)},
          {"e2e_ms", m.e2e_ms},
          {"queue_ms", m.queue_ms ? json(*m.queue_ms) : json(nullptr)},
          {"itl_ms", m.itl_ms}};
}

// One open stream: its subscription, and what it writes per call of the
// content provider.
struct DashboardEvents::Stream {
  DashboardEvents& owner;
  std::shared_ptr<DashboardHub::Subscription> sub;
  bool hello_sent = false;
  Clock::time_point last_write = Clock::now();

  bool Pump(httplib::DataSink& sink) {
    std::string out;
    const Clock::time_point now = Clock::now();
    if (!hello_sent) {
      hello_sent = true;
      out = NamedSseEvent("hello", owner.Hello());
    } else {
      DashboardHub::Delivery d;
      const auto interval = owner.hub_.options().snapshot_interval;
      if (!owner.hub_.Poll(*sub, last_write + interval, now + owner.context_.ping_interval, d)) {
        sink.done();  // the server is stopping
        return true;
      }
      json steps = json::array();
      for (const auto& event : d.events) {
        if (const auto* q = std::get_if<QueuedEvent>(event.get())) {
          out += NamedSseEvent("queued", owner.Queued(*q));
        } else if (const auto* s = std::get_if<StepRecord>(event.get())) {
          steps.push_back(owner.Step(*s));
        } else {
          // Steps before a finish travel before it, so a page sees a request's last step first.
          if (!steps.empty()) out += NamedSseEvent("steps", json{{"steps", std::exchange(steps, json::array())}});
          out += NamedSseEvent("finished", owner.Finished(std::get<FinishedEvent>(*event)));
        }
      }
      if (!steps.empty()) out += NamedSseEvent("steps", json{{"steps", std::move(steps)}});
      if (d.snapshot) out += NamedSseEvent("snapshot", owner.Snapshot(*d.snapshot, sub->dropped));
      if (out.empty()) out = ": ping\n\n";
    }
    if (!sink.write(out.data(), out.size())) return false;
    last_write = Clock::now();
    return true;
  }
};

void DashboardEvents::Events(const httplib::Request&, httplib::Response& res) {
  auto stream = std::make_shared<Stream>(Stream{*this, hub_.Subscribe()});
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  res.set_chunked_content_provider(
      "text/event-stream", [stream](size_t, httplib::DataSink& sink) { return stream->Pump(sink); },
      [stream, this](bool) { hub_.Unsubscribe(stream->sub); });
}

}  // namespace ridge::server
