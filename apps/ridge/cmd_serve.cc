// ridge serve: the OpenAI-compatible HTTP server (see
// src/ridge/server/http_server.h) in front of the continuous-batching engine.
// SIGINT/SIGTERM stop it gracefully: new work is refused, running requests
// get --shutdown-grace seconds to finish, the rest are cancelled, exit 0.
// Under `mpirun -np N ... --tp N` (or --pp N) rank 0 serves and the other
// ranks follow (ServeSplit): signal rank 0 to stop the job gracefully.
// Every flag can also come from RIDGE_* or a --config file (see
// setting_sources.h); the effective settings are printed first.
#include <CLI/CLI.hpp>
#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <functional>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <fstream>
#include <memory>
#include <sstream>

#include "ridge/base/error.h"
#include "ridge/kv/paged_kv_cache.h"
#include "ridge/command.h"
#include "ridge/speculation_flags.h"
#include "ridge/split_flags.h"
#include "ridge/roofline/cost_model.h"
#include "ridge/roofline/hardware.h"
#include "ridge/roofline/model_shape.h"
#include "ridge/roofline/probe.h"
#include "ridge/roofline/units.h"
#include "ridge/setting_sources.h"
#include "ridge/server/http_server.h"
#include "ridge/tokenizer/tokenizer.h"

namespace ridge::app {
namespace {

struct ServeArgs {
  std::string model_path;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string model_name;
  std::string api_key;
  int64_t max_batch_tokens = 512;
  int64_t max_prefill_while_decoding = 0;
  int64_t join_below_tokens = EngineOptions{}.join_below_tokens;
  std::string kv_memory = "2GiB";
  int64_t kv_tokens = 0;
  std::string kv_type = "f16";
  int64_t kv_block_tokens = 16;
  int64_t max_queue = 1024;
  int64_t max_running = 256;
  int threads = 0;
  int http_threads = 128;
  int max_connections = 1024;
  double request_timeout_s = 30;
  double keep_alive_timeout_s = 15;
  bool public_metrics = false;
  std::string max_body = "4MiB";
  std::string chat_template;
  double shutdown_grace_s = 10;
  bool no_prefix_caching = false;
  bool mmap = false;
  SpeculationFlags spec;
  SplitFlags split;  // --tp / --pp under mpirun
  int64_t spec_max_decode_tokens = -1;  // -1: from the roofline, probed at start
  std::string config_path;
  bool print_config = false;
  bool no_webui = false;
  std::string hw = "host";
};

// This host's roofline: its saved probe (`ridge roofline --probe`), else a
// short probe now. The dashboard and the speculation cap share one.
server::DashboardRoofline ProbeHost(const Model& model, int threads, GgmlType kv_type) {
  const GgmlType weights = ShapeFromGguf(model.file()).main_weight_type;
  const std::string path = DefaultProbePath();
  if (std::filesystem::exists(path))
    return {HostProfile(LoadProbe(path), weights, kv_type), "probe of this host (" + path + ")"};
  ProbeOptions quick;
  quick.n_threads = threads;
  quick.buffer_bytes = int64_t{256} << 20;
  quick.passes = 3;
  quick.compute_seconds = 0.1;
  std::printf("ridge serve: no saved probe at %s: probing this host briefly "
              "(`ridge roofline --probe` saves a full one)\n", path.c_str());
  std::fflush(stdout);
  return {HostProfile(RunProbe(quick), weights, kv_type), "short probe of this host at start"};
}

// Decode tokens per step at which decode's weight products reach the host's
// ridge point (the roofline's batch sweep): past it a step is compute bound
// and draft tokens are no longer free.
int64_t ComputeBoundDecodeTokens(const Model& model, const HardwareProfile& host) {
  const ModelShape shape = ShapeFromGguf(model.file());
  CostOptions costs;
  costs.activation_bytes = 4;  // ridge's CPU kernels keep activations in f32
  const BatchSweep sweep = SweepDecodeBatch(shape, /*context=*/512, host, costs);
  return sweep.matmul_crossing_batch.value_or(0);
}

// Settings that steer the others rather than the server, left out of the
// environment and the file.
const std::vector<std::string> kMetaSettings = {"config", "print-config"};

// CLI11 checks, so that a bad value fails while the settings are read, with
// its key and source, whether it came from a flag, RIDGE_* or the file.
const CLI::Validator kByteSize(
    [](std::string& text) -> std::string {
      try {
        ParseByteSize(text);
        return "";
      } catch (const Error& e) {
        return e.what();
      }
    },
    "SIZE");
const CLI::Validator kKvType(
    [](std::string& text) -> std::string {
      return ParseGgmlType(text) ? "" : fmt::format("unknown type '{}'", text);
    },
    "TYPE");

// Serves a loaded model until SIGINT/SIGTERM (returns "") or a fatal fault
// of the engine (returns why; every request has then ended with an error).
// With a split model this is rank 0's work: `split_note` says so, and
// `interrupt_link` stops its waits for the other ranks (empty otherwise).
std::string ServeModel(const ServeArgs& a, Model& model, EngineOptions engine, server::ServerOptions options,
                       sigset_t stop_signals, const std::string& split_note,
                       const std::function<void(const std::string& why)>& interrupt_link) {
  Tokenizer tokenizer = Tokenizer::FromGguf(model.file());
  const int threads = engine.n_threads > 0 ? engine.n_threads : HardwareThreads();
  std::optional<server::DashboardRoofline> host;  // probed once, when first needed
  const auto host_roofline = [&]() -> const server::DashboardRoofline& {
    if (!host) host = ProbeHost(model, threads, engine.kv_type);
    return *host;
  };
  const std::unique_ptr<Model> draft =
      a.spec.LoadDraft(engine.speculation, tokenizer, a.mmap ? FileBacking::kMapped : FileBacking::kHugePageMemory);
  std::string spec_cap_source = "--spec-max-decode-tokens";
  if (engine.speculation.enabled()) {
    engine.speculation.max_decode_tokens = a.spec_max_decode_tokens;
    if (a.spec_max_decode_tokens < 0) {
      engine.speculation.max_decode_tokens = ComputeBoundDecodeTokens(model, host_roofline().hardware);
      spec_cap_source = "the ridge point of decode's weight products on the " + host_roofline().source;
    }
  }
  // A pool larger than max-running full contexts can never be used: do not
  // allocate (and zero) it. Tiny models would otherwise take gigabytes.
  std::string kv_note;
  if (engine.kv_tokens == 0) {
    const KvCacheShape shape = model.KvShape(engine.kv_type, engine.kv_block_tokens);
    const int64_t budget_blocks = PagedKvCache::BlocksForBudget(shape, engine.kv_memory_bytes);
    const int64_t blocks_per_sequence =
        (model.config().n_ctx_train + engine.kv_block_tokens - 1) / engine.kv_block_tokens;
    const int64_t useful_blocks = engine.max_running * blocks_per_sequence;
    if (budget_blocks > useful_blocks) {
      engine.kv_tokens = useful_blocks * engine.kv_block_tokens;
      kv_note = fmt::format("; capped at --max-running x context, --kv-memory {} would hold {} tokens", a.kv_memory,
                            budget_blocks * engine.kv_block_tokens);
    }
  }
  options.webui = !a.no_webui;
  options.roofline = a.hw == "host" ? host_roofline() : server::DashboardRoofline{FindHardware(a.hw), "built-in profile " + a.hw};
  server::OpenAiServer server(model, tokenizer, engine, options);
  // The engine has already ended every request with an error: wake the main
  // thread (a process-directed signal reaches its sigwait) to stop the rest.
  server.engine().set_fatal_handler([](const std::string&) { kill(getpid(), SIGUSR1); });
  const int port = server.Start();

  const EngineStats stats = server.engine().Stats();
  std::printf("ridge serve: model '%s' from %s, context %lld tokens, chat template: %s\n",
              options.model_name.c_str(), a.model_path.c_str(), static_cast<long long>(model.config().n_ctx_train),
              server.chat_template().Describe().c_str());
  if (!server.chat_template().jinja_error.empty())
    std::printf("ridge serve: the GGUF's tokenizer.chat_template does not parse (%s): the built-in '%s' family "
                "renders instead\n",
                server.chat_template().jinja_error.c_str(), server::ChatFamilyName(server.chat_template().family));
  std::printf("ridge serve: weights %s, %s, %s\n",
              FormatBytes(static_cast<double>(model.weights().weight_bytes)).c_str(),
              DescribeMemory(model.file().memory()).c_str(), DescribeWeightLayout(model.weights().layout).c_str());
  std::printf("ridge serve: KV pool %lld blocks x %lld tokens = %lld tokens, %s (%s%s)\n",
              static_cast<long long>(stats.kv.blocks_total), static_cast<long long>(a.kv_block_tokens),
              static_cast<long long>(stats.kv.blocks_total * a.kv_block_tokens),
              FormatBytes(static_cast<double>(stats.kv.bytes_total)).c_str(), a.kv_type.c_str(), kv_note.c_str());
  if (draft)
    std::printf("ridge serve: speculative decoding by the draft model %s (%s weights, KV pool %lld blocks, %s), "
                "up to %lld draft tokens per sequence and step, none once a step holds %lld decode tokens (%s)\n",
                a.spec.draft_path.c_str(), FormatBytes(static_cast<double>(draft->weights().weight_bytes)).c_str(),
                static_cast<long long>(stats.draft_kv.blocks_total),
                FormatBytes(static_cast<double>(stats.draft_kv.bytes_total)).c_str(),
                static_cast<long long>(engine.speculation.num_tokens),
                static_cast<long long>(engine.speculation.max_decode_tokens), spec_cap_source.c_str());
  else if (engine.speculation.enabled())
    std::printf("ridge serve: speculative decoding by prompt lookup, up to %lld draft tokens per sequence and step, "
                "n-grams %lld..%lld, none once a step holds %lld decode tokens (%s)\n",
                static_cast<long long>(engine.speculation.num_tokens),
                static_cast<long long>(engine.speculation.ngram_min), static_cast<long long>(engine.speculation.ngram_max),
                static_cast<long long>(engine.speculation.max_decode_tokens), spec_cap_source.c_str());
  std::printf("ridge serve: dashboard roofline: %s, %s\n", options.roofline->hardware.description.c_str(),
              options.roofline->source.c_str());
  if (!split_note.empty()) std::printf("ridge serve: %s\n", split_note.c_str());
  std::printf("ridge serve: listening on http://%s:%d%s%s\n", a.host.c_str(), port,
              options.api_key.empty() ? "" : " (API key required)",
              options.webui ? " (web page at /)" : " (no web page: --no-webui)");
  std::fflush(stdout);

  siginfo_t signal{};
  int signal_number = -1;
  while (signal_number < 0) signal_number = sigwaitinfo(&stop_signals, &signal);
  if (signal_number == SIGUSR1) {
    server.Shutdown(std::chrono::milliseconds(0));
    return server.engine().fatal_error();
  }
  if (interrupt_link && signal.si_code == SI_USER && signal.si_pid == getppid()) {
    // mpirun (or its daemon) ends the job, a rank having died or itself told
    // to stop, and kills every rank a moment later: no grace, and a forward
    // pass waiting for a dead rank stops waiting, so that the running
    // requests end with an error event rather than a dropped connection.
    const std::string why = fmt::format("the MPI launcher (pid {}) sent {}: another rank has died, or the job is "
                                        "being stopped", signal.si_pid, strsignal(signal_number));
    std::fprintf(stderr, "ridge serve: %s; ending every request with an error now\n", why.c_str());
    interrupt_link(why);
    server.Shutdown(std::chrono::milliseconds(0));
    return why;
  }
  std::printf("ridge serve: %s received, stopping (grace %.1f s)\n", signal_number == SIGINT ? "SIGINT" : "SIGTERM",
              a.shutdown_grace_s);
  std::fflush(stdout);
  server.Shutdown(std::chrono::milliseconds(static_cast<int64_t>(a.shutdown_grace_s * 1000)));
  const EngineStats end = server.engine().Stats();
  std::printf("ridge serve: stopped after %lld requests\n", static_cast<long long>(end.finished));
  std::fflush(stdout);
  return "";
}

// --tp N / --pp N under `mpirun -np N`: rank 0 serves, its forward passes
// shared with the other ranks, which follow until it stops. A fatal fault
// (a rank that died or hangs) ends the whole job with "ridge: error: rank 0
// ..." and exit status 1 (mpi::RunSplit).
int ServeSplit(const ServeArgs& a, EngineOptions engine, const server::ServerOptions& options,
               const sigset_t& stop_signals) {
#ifdef RIDGE_HAVE_MPI
  return RunSplitFromFlags(a.split, a.model_path, a.threads, engine.kv_type, false, [&](mpi::SplitRank& rank) {
    engine.n_threads = rank.pool.n_threads();
    const ModelPartition& p = rank.model.partition();
    const std::string note =
        fmt::format("rank 0 of {} (pid {}) runs HTTP and the scheduler, the model split by {} {} "
                    "(a step waits for the other ranks at most --mpi-timeout {} s)",
                    p.n_ranks, getpid(), mpi::SplitFlag(p.kind), p.n_ranks, a.split.mpi_timeout_s);
    const std::string fatal = ServeModel(a, rank.model, engine, options, stop_signals, note,
                                         [&](const std::string& why) { rank.link.comm().Interrupt(why); });
    if (!fatal.empty()) Fail("{}", fatal);
    return 0;
  });
#else
  (void)a, (void)engine, (void)options, (void)stop_signals;
  FailWithoutMpi();
#endif
}

// Signals go to the main thread's sigwait alone: block them before any
// thread (engine, HTTP pool, MPI's own) exists, so every thread inherits the
// mask. SIGUSR1 is the engine's own: it sends it when a fatal fault stopped
// it. A follower of a split model keeps them blocked: rank 0 ends it.
sigset_t BlockStopSignals() {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGUSR1);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  return stop_signals;
}

int Serve(const ServeArgs& a) {
  const sigset_t stop_signals = BlockStopSignals();
  EngineOptions engine;
  engine.n_threads = a.threads;
  engine.max_batch_tokens = a.max_batch_tokens;
  engine.max_prefill_tokens_while_decoding = a.max_prefill_while_decoding;
  engine.join_below_tokens = a.join_below_tokens;
  engine.max_waiting = a.max_queue;
  engine.max_running = a.max_running;
  engine.kv_type = *ParseGgmlType(a.kv_type);  // checked by kKvType
  engine.kv_block_tokens = a.kv_block_tokens;
  engine.kv_memory_bytes = static_cast<int64_t>(ParseByteSize(a.kv_memory));
  engine.kv_tokens = a.kv_tokens;
  engine.prefix_caching = !a.no_prefix_caching;
  engine.speculation = a.spec.Resolve();

  server::ServerOptions options;
  options.host = a.host;
  options.port = a.port;
  options.model_name =
      a.model_name.empty() ? std::filesystem::path(a.model_path).stem().string() : a.model_name;
  options.api_key = a.api_key;
  options.max_body_bytes = static_cast<int64_t>(ParseByteSize(a.max_body));
  options.http_threads = a.http_threads;
  options.max_connections = a.max_connections;
  options.request_timeout = std::chrono::milliseconds(static_cast<int64_t>(a.request_timeout_s * 1000));
  options.keep_alive_timeout = std::chrono::milliseconds(static_cast<int64_t>(a.keep_alive_timeout_s * 1000));
  options.metrics_need_key = !a.public_metrics;
  if (!a.chat_template.empty()) {
    options.chat_family = server::ParseChatFamily(a.chat_template);
    if (!options.chat_family) {
      std::ifstream in(a.chat_template, std::ios::binary);
      if (!in)
        Fail("--chat-template: '{}' is neither a family (llama2, llama3, chatml, plain) nor a readable file",
             a.chat_template);
      std::ostringstream text;
      text << in.rdbuf();
      options.chat_template_jinja = text.str();
    }
  }

  CheckSplitFlags(a.split);
  if (a.split.requested()) return ServeSplit(a, engine, options, stop_signals);
  auto model = Model::Load(a.model_path, a.mmap ? FileBacking::kMapped : FileBacking::kHugePageMemory);
  const std::string fatal = ServeModel(a, *model, engine, options, stop_signals, "", {});
  if (fatal.empty()) return 0;
  std::fprintf(stderr, "ridge serve: stopping with an error: %s\n", fatal.c_str());
  return 1;
}

CommandRegistration kServe{{"serve", "Serve a model over an OpenAI-compatible HTTP API (completions, chat, SSE)",
  [](CLI::App& sub) -> std::function<int()> {
    auto a = std::make_shared<ServeArgs>();
    sub.footer("Every flag can also be set by the environment variable RIDGE_ + its long name in capitals with "
               "'-' as '_' (RIDGE_PORT, RIDGE_KV_MEMORY, RIDGE_PUBLIC_METRICS=true), or by a line 'long-name = "
               "value' in the TOML file of --config (port = 8081, kv-memory = \"4GiB\"). A flag beats the "
               "environment, which beats the file, which beats the default. See deploy/README.md.");
    sub.add_option("-m,--model", a->model_path, "GGUF model file (required)");
    sub.add_option("--host", a->host, "address to listen on")->capture_default_str();
    sub.add_option("--port", a->port, "port to listen on (0: any free port)")->capture_default_str()
        ->check(CLI::Range(0, 65535));
    sub.add_option("--model-name", a->model_name, "model name clients use (default: the file name without .gguf)");
    sub.add_option("--api-key", a->api_key, "require 'Authorization: Bearer KEY' (printed redacted)");
    sub.add_option("--max-prefill-while-decoding", a->max_prefill_while_decoding,
                   "prompt tokens a step may take while requests decode (0: no cap): bounds their inter-token "
                   "pause, at the cost of TTFT")
        ->capture_default_str()->check(CLI::NonNegativeNumber);
    sub.add_option("--max-batch-tokens", a->max_batch_tokens, "tokens per engine step (decode + prefill chunks)")
        ->capture_default_str()->check(CLI::PositiveNumber);
    sub.add_option("--join-below-tokens", a->join_below_tokens,
                   "a waiting prompt joins a step only while the step's prompt chunks hold fewer tokens (0: while "
                   "--max-batch-tokens has room): prompts prefilled one after another get their first tokens "
                   "sooner, at the same throughput")
        ->capture_default_str()->check(CLI::NonNegativeNumber);
    sub.add_option("--kv-memory", a->kv_memory, "KV-cache pool size, e.g. 2GiB, 512MiB")->capture_default_str()
        ->check(kByteSize);
    sub.add_option("--kv-tokens", a->kv_tokens, "KV-cache pool size in tokens (overrides --kv-memory)")
        ->check(CLI::NonNegativeNumber);
    sub.add_option("--kv-type", a->kv_type,
                   "KV-cache element type: f16, bf16 (attention takes the BF16 dot on AVX-512 BF16 CPUs: "
                   "the fastest at depth there), f32, q8_0")->capture_default_str()
        ->check(kKvType);
    sub.add_option("--kv-block", a->kv_block_tokens, "KV-cache block size in tokens")->capture_default_str()
        ->check(CLI::PositiveNumber);
    sub.add_option("--max-queue", a->max_queue, "waiting requests before new ones get 429")->capture_default_str()
        ->check(CLI::PositiveNumber);
    sub.add_option("--max-running", a->max_running, "requests in the running batch")->capture_default_str()
        ->check(CLI::PositiveNumber);
    sub.add_option("-t,--threads", a->threads, "engine threads (default: all hardware threads)")
        ->check(CLI::NonNegativeNumber);
    sub.add_option("--http-threads", a->http_threads,
                   "HTTP worker threads (each request being answered and each open stream holds one; slow "
                   "clients hold none)")
        ->capture_default_str()->check(CLI::PositiveNumber);
    sub.add_option("--max-connections", a->max_connections, "open connections; beyond, 503 and close")
        ->capture_default_str()->check(CLI::PositiveNumber);
    sub.add_option("--request-timeout", a->request_timeout_s,
                   "seconds from a request's first byte to its last (headers and body), 408 beyond")
        ->capture_default_str()->check(CLI::PositiveNumber);
    sub.add_option("--keep-alive-timeout", a->keep_alive_timeout_s,
                   "seconds an idle connection stays open between requests")
        ->capture_default_str()->check(CLI::PositiveNumber);
    sub.add_flag("--public-metrics", a->public_metrics,
                 "serve /metrics without the API key (default: it needs the key when one is set, as its series "
                 "reveal the model, load and traffic; Prometheus can send it with 'authorization')");
    sub.add_option("--max-body", a->max_body, "largest request body accepted (413 beyond)")->capture_default_str()
        ->check(kByteSize);
    sub.add_option("--chat-template", a->chat_template,
                   "a built-in chat template family (llama2, llama3, chatml, plain) or a Jinja template file (.jinja) "
                   "(default: the GGUF's tokenizer.chat_template, or the family its markers name)");
    sub.add_option("--shutdown-grace", a->shutdown_grace_s,
                   "seconds running requests may finish after SIGINT/SIGTERM before they are cancelled")
        ->capture_default_str()->check(CLI::NonNegativeNumber);
    sub.add_flag("--no-prefix-caching", a->no_prefix_caching, "do not share KV blocks between equal prompt prefixes");
    sub.add_flag("--mmap", a->mmap, kMmapFlagHelp);
    sub.add_flag("--no-webui", a->no_webui, "do not serve the web page (chat and live dashboard) at /");
    sub.add_option("--hw", a->hw,
                   "the dashboard's roofline: host (this machine's saved probe, else a short probe at start) or "
                   "a profile: " + HardwareNames())
        ->capture_default_str();
    AddSpeculationFlags(sub, a->spec);
    AddSplitFlags(sub, a->split);
    sub.add_option("--spec-max-decode-tokens", a->spec_max_decode_tokens,
                   "decode tokens per step past which no drafts are added (0: no cap; default: where decode becomes "
                   "compute bound by this machine's roofline, probed at start)");
    sub.add_option("--config", a->config_path,
                   "TOML file of settings, 'long-flag-name = value' per line (or set RIDGE_CONFIG)");
    sub.add_flag("--print-config", a->print_config, "print the effective settings and exit");
    return [a, &sub]() {
      std::string config = a->config_path;
      if (const char* env = std::getenv("RIDGE_CONFIG"); config.empty() && env != nullptr) config = env;
      const std::vector<EffectiveSetting> settings = ResolveSettings(sub, config, kMetaSettings);
      std::printf("ridge serve: settings (flag > RIDGE_* environment > config file%s > default):\n%s",
                  config.empty() ? "" : (" " + config).c_str(), FormatSettings(settings, {"api-key"}).c_str());
      std::fflush(stdout);
      if (a->print_config) return 0;
      if (a->model_path.empty()) Fail("no model: give -m/--model, set RIDGE_MODEL, or 'model' in the --config file");
      return Serve(*a);
    };
  }}};

}  // namespace
}  // namespace ridge::app
