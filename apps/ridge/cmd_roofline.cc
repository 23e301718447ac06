// ridge roofline: where a model's prefill and decode sit against a machine's
// bandwidth slope and compute roof (reference model §4), per operation and per
// phase, with a batch sweep, the effect of weight-only quantization, an SVG
// chart, and optionally a measured figure as a percentage of the bound.
// `ridge roofline --probe` measures this machine (the "host" profile).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>

#include "ridge/base/error.h"
#include "ridge/base/thread_pool.h"
#include "ridge/command.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/roofline/cost_model.h"
#include "ridge/roofline/hardware.h"
#include "ridge/roofline/kv_calc.h"
#include "ridge/roofline/model_shape.h"
#include "ridge/roofline/probe.h"
#include "ridge/roofline/roofline_chart.h"
#include "ridge/roofline/tensor_parallel_cost.h"
#include "ridge/roofline/units.h"

namespace ridge::app {
namespace {

// The mean tokens/s of the pp test (prefill) or tg test (decode) of a
// `ridge bench -o json` report.
double MeasuredFromBenchJson(const std::string& path, const std::string& phase) {
  std::ifstream in(path);
  if (!in) Fail("--bench-json {}: cannot open", path);
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.contains("tests") || !j["tests"].is_array())
    Fail("--bench-json {}: not a `ridge bench -o json` report (no \"tests\" array)", path);
  const std::string prefix = phase == "prefill" ? "pp" : "tg";
  for (const auto& t : j["tests"])
    if (t.contains("test") && t["test"].is_string() && t["test"].get<std::string>().rfind(prefix, 0) == 0 &&
        t.contains("mean") && t["mean"].is_number())
      return t["mean"].get<double>();
  Fail("--bench-json {}: no {} test in the report", path, prefix);
}

struct RooflineArgs {
  std::string preset, model_path, hw, phase = "both", weight_type, kv_type = "f16", act_type;
  std::string svg_path, probe_file, save_path, measured_phase = "decode";
  int64_t prompt = 512, batch = 1, context = 1024, max_batch = 1024;
  double measured_tps = 0;
  std::string bench_json;
  bool probe = false, list = false;
  int threads = 0;
  int tp = 0;                // --tp: the tensor-parallel degree to mark (0: no TP section)
  double link_gbit_s = 0;    // --link: each rank's link, Gbit/s
  double link_latency_us = 0;
};

GgmlType ParseType(const std::string& name, const char* flag) {
  const auto type = ParseGgmlType(name);
  if (!type) Fail("{} {}: unknown type", flag, name);
  return *type;
}

void PrintList() {
  std::printf("hardware (--hw):\n");
  for (const HardwareProfile& h : BuiltinHardware())
    std::printf("  %-8s %-40s %12s %12s  ridge %5.1f FLOP/B  (%s)\n", h.name.c_str(), h.description.c_str(),
                FormatSi(h.peak_flops, "FLOP/s").c_str(), FormatSi(h.bandwidth_bytes_per_s, "B/s").c_str(),
                h.RidgePoint(), h.peak_note.c_str());
  std::printf("  %-8s this machine, from `ridge roofline --probe` (saved in %s)\n", "host", DefaultProbePath().c_str());
  std::printf("model presets (--preset):\n");
  for (const ModelPreset& p : ModelPresets()) {
    const ModelConfig& c = p.config;
    std::printf("  %-15s dim %-5lld ffn %-6lld layers %-3lld heads %-3lld kv heads %-3lld vocab %-7lld %s\n",
                p.name.c_str(), static_cast<long long>(c.n_embd), static_cast<long long>(c.n_ff),
                static_cast<long long>(c.n_layers), static_cast<long long>(c.n_heads),
                static_cast<long long>(c.n_kv_heads), static_cast<long long>(c.n_vocab), p.description.c_str());
  }
}

void PrintPhase(const PhaseCost& p, const HardwareProfile& hw) {
  const Workload& w = p.workload;
  if (w.phase == Phase::kPrefill)
    std::printf("\nprefill of %s tokens (one prompt)\n", FormatCount(static_cast<double>(w.n_prompt_tokens)).c_str());
  else
    std::printf("\ndecode step: batch %lld, context %s tokens per sequence\n", static_cast<long long>(w.batch),
                FormatCount(static_cast<double>(w.context)).c_str());
  std::printf("  %-18s %12s %12s %10s %8s %11s %6s\n", "operation", "FLOPs", "bytes", "FLOP/B", "bound", "time",
              "share");
  for (const OpCost& op : p.ops)
    std::printf("  %-18s %12s %12s %10.2f %8s %11s %5.1f%%\n", op.name.c_str(), FormatSi(op.flops, "").c_str(),
                FormatBytes(op.bytes).c_str(), op.intensity, op.compute_bound ? "compute" : "memory",
                FormatSeconds(op.time_s).c_str(), 100.0 * op.time_s / p.time_s);
  std::printf("  %-18s %12s %12s %10.2f %8s %11s\n", "total", FormatSi(p.flops, "").c_str(),
              FormatBytes(p.bytes).c_str(), p.intensity, p.compute_bound ? "compute" : "memory",
              FormatSeconds(p.time_s).c_str());
  std::printf("  bytes: weights %s, KV cache %s, activations %s\n", FormatBytes(p.weight_bytes).c_str(),
              FormatBytes(p.kv_bytes).c_str(), FormatBytes(p.bytes - p.weight_bytes - p.kv_bytes).c_str());
  std::printf("  intensity %.2f FLOP/B vs ridge %.1f → %s-bound; predicted %s (sum of per-op bounds; "
              "max(FLOPs/peak, bytes/BW) of the totals: %s)\n",
              p.intensity, hw.RidgePoint(), p.compute_bound ? "compute" : "memory", FormatSeconds(p.time_s).c_str(),
              FormatSeconds(p.roofline_time_s).c_str());
  if (w.phase == Phase::kPrefill)
    std::printf("  → at most %.1f prompt tokens/s (TTFT ≥ %s)\n", p.TokensPerSecond(), FormatSeconds(p.time_s).c_str());
  else
    std::printf("  → at most %.1f tokens/s in all, %.1f per sequence (TPOT ≥ %s); %.1f%% of peak compute used\n",
                p.TokensPerSecond(), 1.0 / p.time_s, FormatSeconds(p.time_s).c_str(),
                100.0 * p.flops / p.time_s / hw.peak_flops);
}

// The network as a third roof: the step at N = 1, 2, 4, ... ranks (tensor_parallel_cost.h).
void PrintTensorParallel(const RooflineArgs& a, const ModelShape& shape, const PhaseCost& phase,
                         double activation_bytes) {
  const LinkProfile link{a.link_gbit_s * 1e9 / 8, a.link_latency_us * 1e-6};
  const TensorParallelSweep sweep = SweepTensorParallel(shape, phase, link, activation_bytes);
  const ModelConfig& c = shape.config;
  std::printf("\ntensor parallel, %s step, over a %.4g Gbit/s link (%s/s), %.3g us latency: each rank does 1/N of the "
              "step, then 2 all-reduces a layer of 2(N-1)/N x %lld x %g bytes per token\n",
              PhaseName(phase.workload.phase), a.link_gbit_s, FormatBytes(link.bytes_per_s).c_str(),
              a.link_latency_us, static_cast<long long>(c.n_embd), activation_bytes);
  std::printf("  %5s %12s %12s %12s %12s %12s %8s %6s\n", "N", "rank step", "link bytes", "link time", "step",
              "tokens/s", "speedup", "bound");
  for (const TensorParallelPoint& p : sweep.points)
    std::printf("  %5d %12s %12s %12s %12s %12.1f %7.2fx %6s%s\n", p.n_ranks, FormatSeconds(p.rank_time_s).c_str(),
                FormatBytes(p.link_bytes).c_str(), FormatSeconds(p.link_time_s).c_str(),
                FormatSeconds(p.step_time_s).c_str(), p.tokens_per_s, p.speedup, p.link_bound ? "link" : "rank",
                p.n_ranks == a.tp ? "  <- --tp" : "");
  std::printf("  TP pays up to N = %d here; beyond it the link's time grows faster than each rank's share shrinks%s\n",
              sweep.best_n_ranks,
              sweep.points.back().n_ranks == sweep.best_n_ranks ? " (or the KV heads allow no more ranks)" : "");
  if (a.tp > 1 && (c.n_kv_heads % a.tp != 0 || a.tp > sweep.points.back().n_ranks))
    std::printf("  --tp %d: not in the sweep (ridge splits whole KV heads: %lld of them, N a power of two)\n", a.tp,
                static_cast<long long>(c.n_kv_heads));
}

void PrintSweep(const BatchSweep& sweep, const HardwareProfile& hw, int64_t context) {
  std::printf("\ndecode batch sweep (context %s): where decode crosses the ridge (%.1f FLOP/B)\n",
              FormatCount(static_cast<double>(context)).c_str(), hw.RidgePoint());
  std::printf("  %7s %10s %14s %8s %11s %14s %14s\n", "batch", "FLOP/B", "matmul FLOP/B", "bound", "step",
              "tokens/s", "per sequence");
  for (const SweepPoint& s : sweep.points)
    std::printf("  %7lld %10.2f %14.2f %8s %11s %14.1f %14.2f\n", static_cast<long long>(s.batch), s.intensity,
                s.matmul_intensity, s.compute_bound ? "compute" : "memory", FormatSeconds(s.time_s).c_str(),
                s.tokens_per_s, s.tokens_per_s / static_cast<double>(s.batch));
  if (sweep.matmul_crossing_batch)
    std::printf("  the weight matrix products reach the ridge at batch %lld\n",
                static_cast<long long>(*sweep.matmul_crossing_batch));
  else
    std::printf("  the weight matrix products stay below the ridge up to batch %lld\n",
                static_cast<long long>(sweep.points.back().batch));
  if (sweep.crossing_batch)
    std::printf("  the whole decode step becomes compute-bound at batch %lld\n",
                static_cast<long long>(*sweep.crossing_batch));
  else
    std::printf("  the whole decode step stays memory-bound up to batch %lld%s\n", static_cast<long long>(sweep.points.back().batch),
                sweep.intensity_limit < hw.RidgePoint() ? " and beyond" : "");
  std::printf("  as the batch grows, intensity tends to %.2f FLOP/B (each extra sequence brings its own KV cache)\n",
              sweep.intensity_limit);
}

void PrintQuant(const std::vector<QuantRow>& rows) {
  std::printf("\nweight-only quantization (same workloads)\n");
  std::printf("  %-6s %14s %12s %12s %9s %12s %9s\n", "type", "weights/step", "decode step", "tokens/s", "speedup",
              "prefill", "speedup");
  for (const QuantRow& r : rows)
    std::printf("  %-6s %14s %12s %12.1f %8.2fx %12s %8.2fx\n", GgmlTypeName(r.type), FormatBytes(r.weight_bytes).c_str(),
                FormatSeconds(r.decode.time_s).c_str(), r.decode.TokensPerSecond(), r.decode_speedup,
                FormatSeconds(r.prefill.time_s).c_str(), r.prefill_speedup);
}

void AddPoints(RooflineChart& chart, const PhaseCost& p, ChartPointKind op_kind, ChartPointKind total_kind) {
  const char* phase = PhaseName(p.workload.phase);
  for (const OpCost& op : p.ops)
    chart.points.push_back({fmt::format("{} {}", phase, op.name), op.intensity, op.flops / op.time_s, op_kind});
  chart.points.push_back({fmt::format("{} total ({})", phase,
                                      p.workload.phase == Phase::kPrefill
                                          ? fmt::format("{} tokens", p.workload.n_prompt_tokens)
                                          : fmt::format("batch {}, ctx {}", p.workload.batch, p.workload.context)),
                          p.intensity, p.flops / p.time_s, total_kind});
}

int RunRoofline(const RooflineArgs& a) {
  if (a.list) {
    PrintList();
    return 0;
  }
  std::optional<ProbeResult> probe;
  if (a.probe) {
    ProbeOptions options;
    options.n_threads = a.threads;
    std::fprintf(stderr, "probing this machine (1 GiB read bandwidth, FP32/BF16/int8 peaks)...\n");
    probe = RunProbe(options);
    std::printf("%s", FormatProbe(*probe).c_str());
    const std::string path = a.save_path.empty() ? DefaultProbePath() : a.save_path;
    SaveProbe(*probe, path);
    std::printf("saved to %s\n", path.c_str());
    if (a.preset.empty() && a.model_path.empty() && a.hw.empty()) return 0;
  }

  // The model.
  if (!a.preset.empty() && !a.model_path.empty()) Fail("roofline: give --preset or --model, not both");
  ModelShape shape;
  if (!a.model_path.empty()) {
    const GgufFile file = GgufFile::Open(a.model_path);
    shape = ShapeFromGguf(file);
    if (!a.weight_type.empty()) shape = WithWeightType(shape, ParseType(a.weight_type, "--weight-type"));
  } else {
    shape = ShapeFromPreset(FindModelPreset(a.preset.empty() ? "llama-2-7b" : a.preset),
                            ParseType(a.weight_type.empty() ? "f16" : a.weight_type, "--weight-type"));
  }

  // The hardware: a built-in profile, or this host from a probe.
  const std::string hw_name = !a.hw.empty() ? a.hw : probe ? "host" : "h100";
  if (hw_name == "host" && !probe) probe = LoadProbe(a.probe_file.empty() ? DefaultProbePath() : a.probe_file);
  const GgmlType kv_type = ParseType(a.kv_type, "--kv-type");
  auto hardware_for = [&](GgmlType type) {
    return hw_name == "host" ? HostProfile(*probe, type, kv_type) : FindHardware(hw_name);
  };
  const HardwareProfile hw = hardware_for(shape.main_weight_type);

  CostOptions options;
  options.kv_bytes_per_element = KvElementBytes(kv_type);
  const std::string act = !a.act_type.empty() ? a.act_type : hw_name == "host" ? "f32" : "bf16";
  options.activation_bytes = BytesPerWeight(ParseType(act, "--act-type"));

  const ModelConfig& c = shape.config;
  std::printf("model    %s: %s weights (%s), dim %lld, ffn %lld, %lld layers, %lld heads / %lld KV heads, vocab %lld%s\n",
              shape.name.c_str(), shape.weight_types.c_str(), FormatBytes(shape.total_weight_bytes).c_str(),
              static_cast<long long>(c.n_embd), static_cast<long long>(c.n_ff), static_cast<long long>(c.n_layers),
              static_cast<long long>(c.n_heads), static_cast<long long>(c.n_kv_heads),
              static_cast<long long>(c.n_vocab), shape.tied_embeddings ? ", tied embeddings" : "");
  std::printf("hardware %s: %s\n         peak %s (%s), bandwidth %s → ridge point %.1f FLOP/byte\n", hw.name.c_str(),
              hw.description.c_str(), FormatSi(hw.peak_flops, "FLOP/s").c_str(), hw.peak_note.c_str(),
              FormatSi(hw.bandwidth_bytes_per_s, "B/s").c_str(), hw.RidgePoint());
  std::printf("cache    %s KV, %s activations (fused attention; see cost_model.h for the assumptions)\n",
              a.kv_type.c_str(), act.c_str());

  if (a.phase != "both" && a.phase != "prefill" && a.phase != "decode")
    Fail("--phase {}: expected prefill, decode or both", a.phase);
  Workload prefill_w{Phase::kPrefill, a.prompt, 1, a.context};
  Workload decode_w{Phase::kDecode, a.prompt, a.batch, a.context};
  std::optional<PhaseCost> prefill, decode;
  if (a.phase != "decode") {
    prefill = AnalyzePhase(shape, prefill_w, hw, options);
    PrintPhase(*prefill, hw);
  }
  if (a.phase != "prefill") {
    decode = AnalyzePhase(shape, decode_w, hw, options);
    PrintPhase(*decode, hw);
  }
  if (a.tp > 0 || a.link_gbit_s > 0) {
    if (!(a.link_gbit_s > 0)) Fail("--tp {}: give the link's bandwidth with --link GBIT_S", a.tp);
    if (prefill) PrintTensorParallel(a, shape, *prefill, options.activation_bytes);
    if (decode) PrintTensorParallel(a, shape, *decode, options.activation_bytes);
  }
  const BatchSweep sweep = SweepDecodeBatch(shape, a.context, hw, options, a.max_batch);
  PrintSweep(sweep, hw, a.context);
  const std::vector<GgmlType> types = {GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ4_0};
  PrintQuant(CompareWeightTypes(shape, types, decode_w, prefill_w, hardware_for, options));

  std::optional<ChartPoint> measured;
  // A `ridge bench -o json` report gives its pp (prefill) or tg (decode) mean.
  const double measured_tps = a.bench_json.empty() ? a.measured_tps : MeasuredFromBenchJson(a.bench_json, a.measured_phase);
  if (measured_tps > 0) {
    if (a.measured_phase != "decode" && a.measured_phase != "prefill")
      Fail("--measured-phase {}: expected decode or prefill", a.measured_phase);
    const bool is_decode = a.measured_phase == "decode";
    const PhaseCost p = AnalyzePhase(shape, is_decode ? decode_w : prefill_w, hw, options);
    const double predicted = p.TokensPerSecond();
    std::printf("\nmeasured %s %.2f tokens/s = %.1f%% of the predicted bound %.2f tokens/s\n", a.measured_phase.c_str(),
                measured_tps, 100.0 * measured_tps / predicted, predicted);
    // The achieved FLOP/s: the step's FLOPs at the measured rate.
    measured = ChartPoint{fmt::format("measured {} {:.1f} tok/s ({:.0f}% of bound)", a.measured_phase, measured_tps,
                                      100.0 * measured_tps / predicted),
                          p.intensity, p.flops * measured_tps / static_cast<double>(p.tokens),
                          ChartPointKind::kMeasured};
  }

  if (!a.svg_path.empty()) {
    RooflineChart chart;
    chart.title = fmt::format("Roofline: {} ({}) on {}", shape.name, shape.weight_types, hw.name);
    chart.hardware = hw;
    if (hw_name == "host") {
      auto roof = [&](const char* label, double peak) {
        if (peak > 0 && peak != hw.peak_flops) chart.extra_roofs.push_back({label, peak});
      };
      roof("FP32 FMA", probe->fp32_flops_per_s);
      roof("BF16 dot", probe->bf16_flops_per_s);
      roof("int8 dot", probe->int8_ops_per_s);
    }
    if (prefill) AddPoints(chart, *prefill, ChartPointKind::kPrefillOp, ChartPointKind::kPrefillTotal);
    if (decode) AddPoints(chart, *decode, ChartPointKind::kDecodeOp, ChartPointKind::kDecodeTotal);
    // The sweep at batch 1, 4, 16, 64, ...: the walk of decode towards the ridge.
    for (const SweepPoint& s : sweep.points)
      if ((s.batch == 1 || s.batch % 4 == 0) && __builtin_popcountll(static_cast<unsigned long long>(s.batch)) == 1 &&
          (s.batch & 0x5555555555555555ll) && s.batch != a.batch)
        chart.points.push_back(
            {fmt::format("decode total, batch {}", s.batch), s.intensity, s.flops_per_s, ChartPointKind::kSweep});
    if (measured) chart.points.push_back(*measured);
    std::ofstream out(a.svg_path, std::ios::binary | std::ios::trunc);
    if (!out) Fail("cannot open {} for writing", a.svg_path);
    out << RenderRooflineSvg(chart);
    out.close();
    if (!out) Fail("cannot write {}", a.svg_path);
    std::printf("\nchart written to %s\n", a.svg_path.c_str());
  }
  return 0;
}

CommandRegistration kRoofline{{"roofline",
  "Roofline analysis of prefill and decode for a model on a GPU profile or this host (--probe measures it)",
  [](CLI::App& sub) -> std::function<int()> {
    auto args = std::make_shared<RooflineArgs>();
    sub.add_option("--preset", args->preset, "a known shape: " + ModelPresetNames() + " (default llama-2-7b)");
    sub.add_option("-m,--model", args->model_path, "a llama GGUF file (its shape and tensor types)");
    sub.add_option("--hw", args->hw, "hardware: " + HardwareNames() + ", or host (default h100; host after --probe)");
    sub.add_option("--phase", args->phase, "prefill, decode or both (default)");
    sub.add_option("-p,--prompt", args->prompt, "prefill: prompt tokens (default 512)")->check(CLI::PositiveNumber);
    sub.add_option("-b,--batch", args->batch, "decode: sequences per step (default 1)")->check(CLI::PositiveNumber);
    sub.add_option("-c,--context", args->context, "decode: tokens each sequence attends over (default 1024)")
        ->check(CLI::PositiveNumber);
    sub.add_option("--max-batch", args->max_batch, "the batch sweep's largest batch (default 1024)")
        ->check(CLI::PositiveNumber);
    sub.add_option("--weight-type", args->weight_type, "weights: f32, f16 (default), bf16, q8_0, q4_0, q4_k, ...");
    sub.add_option("--kv-type", args->kv_type, "KV cache: f16 (default), bf16, f32, q8_0");
    sub.add_option("--act-type", args->act_type, "activations: f32 (host default), bf16 (GPU default), f16");
    sub.add_option("--svg", args->svg_path, "write a log-log roofline chart to this SVG file");
    sub.add_option("--measured-tps", args->measured_tps, "a measured tokens/s to set against the predicted bound")
        ->check(CLI::PositiveNumber);
    sub.add_option("--measured-phase", args->measured_phase, "the phase of --measured-tps: decode (default) or prefill");
    sub.add_option("--bench-json", args->bench_json,
                   "take the measured tokens/s from a `ridge bench -o json` report (tg for decode, pp for prefill)");
    sub.add_flag("--probe", args->probe, "measure this machine: memory read bandwidth, FP32/BF16/int8 peaks");
    sub.add_option("-t,--threads", args->threads, "probe threads (default: all hardware threads)")
        ->check(CLI::PositiveNumber);
    sub.add_option("--save", args->save_path, "where --probe saves its figures (default " + DefaultProbePath() + ")");
    sub.add_option("--probe-file", args->probe_file, "the probe file --hw host reads (default: the --save default)");
    sub.add_flag("--list", args->list, "list the hardware profiles and model presets");
    sub.add_option("--tp", args->tp, "tensor parallel: add the network as a third roof and mark N ranks (needs --link)")
        ->check(CLI::PositiveNumber);
    sub.add_option("--link", args->link_gbit_s, "with --tp: each rank's link bandwidth in Gbit/s (100 = 100 GbE)")
        ->check(CLI::PositiveNumber);
    sub.add_option("--link-latency-us", args->link_latency_us,
                   "with --tp: one message's latency in microseconds (default 0: bandwidth only)")
        ->check(CLI::NonNegativeNumber);
    return [args] { return RunRoofline(*args); };
  }}};

}  // namespace
}  // namespace ridge::app
