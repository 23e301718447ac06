// ridge run: generate from a prompt, streaming the text, then the figures of
// the reference model: TTFT, TPOT, E2E, prefill and decode throughput, KV bytes.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "ridge/base/cpu_features.h"
#include "ridge/base/error.h"
#include "ridge/engine/generator.h"
#include "ridge/grammar/gbnf.h"
#include "ridge/grammar/json_schema_to_gbnf.h"
#include "ridge/grammar/regex_to_gbnf.h"
#include "ridge/command.h"
#include "ridge/speculation_flags.h"
#include "ridge/split_flags.h"
#include "ridge/tokenizer/tokenizer.h"

namespace ridge::app {
namespace {

struct RunArgs {
  std::string model_path;
  std::string prompt;
  int64_t n_predict = 128;
  // llama.cpp's command-line defaults.
  sampling::SamplingParams sampling{.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f};
  bool seed_set = false;
  int threads = 0;
  std::string kv_type = "f16";
  int64_t kv_block_tokens = 16;
  std::vector<std::string> stop;
  bool verbose = false;
  bool echo_prompt = true;
  bool mmap = false;
  std::string grammar_path;      // --grammar: GBNF file constraining the output
  std::string json_schema_path;  // --json-schema: output is JSON valid against this schema
  std::string regex;             // --regex: output matches this regex whole
  SpeculationFlags spec;
  SplitFlags split;  // --tp / --pp under mpirun
};

// The whole text of a file a flag names.
std::string ReadFlagFile(const char* flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail("{}: cannot read '{}'", flag, path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// `compile()`, with a ridge::Error it throws prefixed by the flag that asked for it.
template <typename Compile>
std::shared_ptr<const grammar::Grammar> CompileFor(const std::string& flag, Compile compile) {
  try {
    return compile();
  } catch (const Error& e) {
    Fail("{}: {}", flag, e.what());
  }
}

// The grammar --grammar, --json-schema or --regex asks for (null: none),
// compiled before the model loads so that a mistake shows at once.
std::shared_ptr<const grammar::Grammar> OutputGrammar(const RunArgs& a) {
  if (!a.grammar_path.empty()) {
    const std::string text = ReadFlagFile("--grammar", a.grammar_path);
    return CompileFor("--grammar " + a.grammar_path, [&] { return grammar::ParseGbnf(text); });
  }
  if (!a.json_schema_path.empty()) {
    const std::string text = ReadFlagFile("--json-schema", a.json_schema_path);
    return CompileFor("--json-schema " + a.json_schema_path,
                      [&] { return grammar::ParseGbnf(grammar::JsonSchemaToGbnf(text)); });
  }
  if (!a.regex.empty())
    return CompileFor("--regex", [&] { return grammar::ParseGbnf(grammar::RegexToGbnf(a.regex)); });
  return nullptr;
}

void PrintSummary(const GenerationResult& r, const Model& model, bool verbose, bool speculating) {
  std::fprintf(stderr, "\n\n--- ridge run ---\n");
  std::fprintf(stderr, "prompt tokens      %zu\n", r.prompt_tokens.size());
  std::fprintf(stderr, "output tokens      %zu  (finish: %s)\n", r.output_tokens.size(), FinishReasonName(r.finish_reason));
  std::fprintf(stderr, "TTFT               %.2f ms\n", r.ttft_ms);
  std::fprintf(stderr, "TPOT               %.2f ms   (= (E2E - TTFT) / (output tokens - 1))\n", r.TpotMs());
  std::fprintf(stderr, "E2E                %.2f ms\n", r.e2e_ms);
  std::fprintf(stderr, "prefill            %.1f tokens/s  (%.2f ms)\n", r.PrefillTokensPerSecond(), r.prefill_ms);
  std::fprintf(stderr, "decode             %.1f tokens/s  (%.2f ms)\n", r.DecodeTokensPerSecond(), r.decode_ms);
  double formula_bytes = r.kv.bytes_per_token * static_cast<double>(r.kv.tokens_stored);
  std::fprintf(stderr, "KV cache           %lld bytes allocated, %.0f bytes used by %lld tokens (%.0f bytes/token)\n",
               static_cast<long long>(r.kv.bytes_total), formula_bytes, static_cast<long long>(r.kv.tokens_stored),
               r.kv.bytes_per_token);
  if (speculating) {
    const SpecDecodeCounts& s = r.speculation;
    std::fprintf(stderr, "speculation        %lld drafted, %lld accepted: acceptance rate %.1f%%, mean accepted "
                 "length %.2f (+1 own token) over %lld verifying passes; %lld decode passes in all\n",
                 static_cast<long long>(s.draft_tokens), static_cast<long long>(s.accepted_tokens),
                 100.0 * s.AcceptanceRate(), s.MeanAcceptedLength(), static_cast<long long>(s.verify_steps),
                 static_cast<long long>(r.decode_passes));
  }
  if (r.finish_reason == FinishReason::kContextFull)
    std::fprintf(stderr, "note: generation stopped because the model's context of %lld tokens is full\n",
                 static_cast<long long>(model.config().n_ctx_train));
  if (verbose) {
    std::fprintf(stderr, "output token ids   %s\n", fmt::format("{}", fmt::join(r.output_tokens, " ")).c_str());
    const ModelConfig& c = model.config();
    std::fprintf(stderr, "\nKV lifecycle: allocated %lld blocks of %lld tokens at request start (%lld bytes), "
                 "filled by prefill (%zu tokens), appended by decode, freed at the end\n",
                 static_cast<long long>(r.kv.blocks_total), static_cast<long long>(r.kv.token_slots_allocated / std::max<int64_t>(r.kv.blocks_used, 1)),
                 static_cast<long long>(r.kv.bytes_total), r.prompt_tokens.size());
    std::fprintf(stderr, "formula: 2 x %lld layers x %lld KV heads x %lld head dim x %.4g bytes = %.0f bytes/token; "
                 "x %lld tokens = %.0f bytes (slots allocated %lld, utilization %.1f%%)\n",
                 static_cast<long long>(c.n_layers), static_cast<long long>(c.n_kv_heads), static_cast<long long>(c.head_dim),
                 r.kv.bytes_per_token / (2.0 * c.n_layers * c.n_kv_heads * c.head_dim), r.kv.bytes_per_token,
                 static_cast<long long>(r.kv.tokens_stored), formula_bytes, static_cast<long long>(r.kv.token_slots_allocated),
                 100.0 * r.kv.utilization);
    std::fprintf(stderr, "weights: %lld bytes, %s, %s; kernels: %s\n",
                 static_cast<long long>(model.weights().weight_bytes), DescribeMemory(model.file().memory()).c_str(),
                 DescribeWeightLayout(model.weights().layout).c_str(), IsaName(ActiveIsa()));
  }
}

// Generates on a loaded model: the whole of `ridge run` after loading, on
// rank 0 alone when the model is split across ranks.
int Generate(const RunArgs& a, Model& model, ThreadPool& pool, std::shared_ptr<const grammar::Grammar> output_grammar,
             const SpeculationOptions& speculation) {
  Tokenizer tokenizer = Tokenizer::FromGguf(model.file());
  SpeculationOptions speculation_with_draft = speculation;
  const std::unique_ptr<Model> draft = a.spec.LoadDraft(
      speculation_with_draft, tokenizer, a.mmap ? FileBacking::kMapped : FileBacking::kHugePageMemory);
  GenerateOptions options;
  options.max_new_tokens = a.n_predict;
  options.stop_strings = a.stop;
  options.sampling = a.sampling;
  if (!a.seed_set) options.sampling.seed = sampling::RandomSeed();
  auto kv_type = ParseGgmlType(a.kv_type);
  if (!kv_type) Fail("--kv-type: unknown type '{}'", a.kv_type);
  options.kv_type = *kv_type;
  options.kv_block_tokens = a.kv_block_tokens;
  options.grammar = output_grammar;
  options.speculation = speculation_with_draft;
  if (a.echo_prompt) {
    std::fputs(a.prompt.c_str(), stdout);
    std::fflush(stdout);
  }
  Generator generator(model, tokenizer, pool);
  GenerationResult r = generator.Generate(a.prompt, options, [](std::string_view text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  });
  PrintSummary(r, model, a.verbose, speculation.enabled());
  if (a.verbose) std::fprintf(stderr, "threads: %d\n", pool.n_threads());
  return 0;
}

// --tp N / --pp N: under `mpirun -np N`, each rank loads its part of the model.
int GenerateSplit(const RunArgs& a, std::shared_ptr<const grammar::Grammar> output_grammar,
                  const SpeculationOptions& speculation) {
#ifdef RIDGE_HAVE_MPI
  const GgmlType kv_type = ParseGgmlType(a.kv_type).value_or(GgmlType::kF16);
  return RunSplitFromFlags(a.split, a.model_path, a.threads, kv_type, false, [&](mpi::SplitRank& rank) {
    return Generate(a, rank.model, rank.pool, output_grammar, speculation);
  });
#else
  (void)a, (void)output_grammar, (void)speculation;
  FailWithoutMpi();
#endif
}

CommandRegistration kRun{{"run", "Generate text from a prompt, streaming it, then print TTFT/TPOT/E2E and KV figures",
  [](CLI::App& sub) -> std::function<int()> {
    auto a = std::make_shared<RunArgs>();
    sub.add_option("-m,--model", a->model_path, "GGUF model file")->required();
    sub.add_option("-p,--prompt", a->prompt, "prompt text");
    sub.add_option("-n,--n-predict", a->n_predict, "maximum tokens to generate")->check(CLI::PositiveNumber);
    sampling::SamplingParams& sp = a->sampling;
    sub.add_option("--temp", sp.temperature, "temperature (0 = greedy)");
    sub.add_option("--top-p", sp.top_p, "nucleus sampling mass (1 = off)");
    sub.add_option("--top-k", sp.top_k, "keep the k most likely tokens (0 = off)");
    sub.add_option("--min-p", sp.min_p, "drop tokens below min-p x the top probability (0 = off)");
    sub.add_option("--repeat-penalty", sp.repetition_penalty, "repetition penalty (1 = off)");
    sub.add_option("--presence-penalty", sp.presence_penalty, "presence penalty (0 = off)");
    sub.add_option("--frequency-penalty", sp.frequency_penalty, "frequency penalty (0 = off)");
    sub.add_option("--seed", sp.seed, "random seed (reproducible output)")->each([a](const std::string&) { a->seed_set = true; });
    sub.add_option("-t,--threads", a->threads, "threads (default: all hardware threads)");
    sub.add_option("--kv-type", a->kv_type, "KV cache element type: f16, bf16, f32, q8_0");
    sub.add_option("--kv-block", a->kv_block_tokens, "KV cache block size in tokens")->check(CLI::PositiveNumber);
    sub.add_option("--stop", a->stop, "stop string (repeatable)");
    sub.add_flag("--verbose", a->verbose, "show the KV-cache lifecycle and accounting");
    sub.add_flag("!--no-echo", a->echo_prompt, "do not print the prompt before the generated text");
    sub.add_flag("--mmap", a->mmap, kMmapFlagHelp);
    AddSpeculationFlags(sub, a->spec);
    AddSplitFlags(sub, a->split);
    auto* grammar_opt = sub.add_option("--grammar", a->grammar_path,
                                       "GBNF grammar file (llama.cpp's format): the output stays in its language");
    auto* schema_opt = sub.add_option("--json-schema", a->json_schema_path,
                                      "constrain the output to JSON valid against this JSON Schema file")
                           ->excludes(grammar_opt);
    sub.add_option("--regex", a->regex, "constrain the output to text matching this regular expression whole")
        ->excludes(schema_opt)
        ->excludes(grammar_opt);
    return [a]() {
      std::shared_ptr<const grammar::Grammar> output_grammar = OutputGrammar(*a);  // bad input fails before loading
      const SpeculationOptions speculation = a->spec.Resolve();
      CheckSplitFlags(a->split);
      if (a->split.requested()) return GenerateSplit(*a, output_grammar, speculation);
      auto model = Model::Load(a->model_path, a->mmap ? FileBacking::kMapped : FileBacking::kHugePageMemory);
      ThreadPool pool(a->threads > 0 ? a->threads : HardwareThreads());
      return Generate(*a, *model, pool, output_grammar, speculation);
    };
  }}};

}  // namespace
}  // namespace ridge::app
