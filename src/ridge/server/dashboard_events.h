#pragma once
// GET /v1/dashboard/events: the live dashboard's server-sent-events stream
// (every event and field is documented in docs/dashboard-events.md).
//
//   hello      once, first: the model, the KV cache shape and its formula, the
//              roofline (this host's probe or a chosen profile), recent requests
//   snapshot   running/waiting requests, the KV block map, totals from /metrics
//   queued     a request entered the waiting queue
//   steps      the engine steps since the last write: batch composition,
//              time, FLOPs, bytes, arithmetic intensity, achieved FLOP/s
//   finished   a request ended: its timeline, TTFT, TPOT, ITL, finish reason
//
// A stream writes at most every snapshot_interval (what happened in between
// travels together), and a ": ping" comment when idle for sse_ping_interval.
// It reads from the DashboardHub, never from the engine: a slow client only
// loses events (each snapshot says how many it lost in total).
#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>

#include "ridge/kv/paged_kv_cache.h"
#include "ridge/metrics/server_metrics.h"
#include "ridge/roofline/cost_model.h"
#include "ridge/roofline/hardware.h"
#include "ridge/roofline/model_shape.h"
#include "ridge/server/dashboard_hub.h"

namespace ridge::server {

// Where the roofline's roof and slope come from.
struct DashboardRoofline {
  HardwareProfile hardware;
  std::string source;  // e.g. "probe of this host (~/.cache/ridge/probe.json)", "built-in profile h100"
};

struct DashboardContext {
  std::string model_name;
  ModelShape shape;
  KvCacheShape kv_shape;
  int64_t kv_blocks = 0;
  DashboardRoofline roofline;
  CostOptions cost;  // the engine's KV element size and activation size
  std::chrono::milliseconds ping_interval{1000};
};

class DashboardEvents {
 public:
  // `metrics` gives the snapshot's totals (the same counters /metrics renders).
  DashboardEvents(DashboardHub& hub, const ServerMetrics& metrics, DashboardContext context);

  void Events(const httplib::Request& req, httplib::Response& res);

  // The payloads (public for tests and other writers of the same format).
  nlohmann::json Hello() const;
  nlohmann::json Snapshot(const EngineSnapshot& s, uint64_t dropped) const;
  nlohmann::json Queued(const QueuedEvent& e) const;
  nlohmann::json Step(const StepRecord& step) const;
  nlohmann::json Finished(const FinishedEvent& e) const;

 private:
  struct Stream;
  double Ms(Clock::time_point t) const;  // milliseconds since the hub's start

  DashboardHub& hub_;
  const ServerMetrics& metrics_;
  DashboardContext context_;
};

// "event: NAME\ndata: JSON\n\n".
std::string NamedSseEvent(const char* name, const nlohmann::json& data);

}  // namespace ridge::server
