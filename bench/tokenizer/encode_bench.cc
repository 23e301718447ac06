// Encoding speed of the tokenizer on English text, one thread: long prompts are
// tokenized on the request path, so the target is >= 5 MB/s per core with the
// Llama 3 vocabulary (byte-level BPE, pre-tokenizer llama-bpe).
//
//   build/ridge_tokenizer_bench                       # the shared docs, repeated to 4 MiB
//   RIDGE_BENCH_TEXT=some.txt build/ridge_tokenizer_bench
//
// bytes_per_second is input bytes (UTF-8) per second of one thread.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "ridge/gguf/gguf_file.h"
#include "ridge/tokenizer/tokenizer.h"
#include "test_paths.h"

namespace {

constexpr size_t kTextBytes = size_t{4} << 20;

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// $RIDGE_BENCH_TEXT, or the English prose of ../shared/docs, repeated to kTextBytes.
const std::string& Text() {
  static const std::string text = [] {
    std::string one;
    if (const char* path = std::getenv("RIDGE_BENCH_TEXT")) {
      one = ReadFile(path);
    } else {
      std::vector<std::filesystem::path> docs;
      for (const auto& entry : std::filesystem::directory_iterator(ridge::testing::SharedDir() + "/docs")) {
        if (entry.path().extension() == ".md") docs.push_back(entry.path());
      }
      std::sort(docs.begin(), docs.end());
      for (const auto& doc : docs) one += ReadFile(doc);
    }
    if (one.empty()) {
      std::fprintf(stderr, "no benchmark text (RIDGE_BENCH_TEXT or ../shared/docs/*.md)\n");
      std::exit(1);
    }
    std::string out;
    while (out.size() < kTextBytes) out += one;
    return out;
  }();
  return text;
}

void BM_Encode(benchmark::State& state, const char* vocab_file, bool parse_special) {
  const ridge::GgufFile file = ridge::GgufFile::Open(ridge::testing::SharedDir() + "/vocab/" + vocab_file);
  const ridge::Tokenizer tokenizer = ridge::Tokenizer::FromGguf(file);
  const std::string& text = Text();
  size_t n_tokens = 0;
  for (auto _ : state) {
    const std::vector<int32_t> ids = tokenizer.Encode(text, /*add_bos=*/false, parse_special);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["bytes_per_token"] = static_cast<double>(text.size()) / static_cast<double>(n_tokens);
  state.counters["tokens_per_second"] =
      benchmark::Counter(static_cast<double>(n_tokens), benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK_CAPTURE(BM_Encode, llama_bpe, "ggml-vocab-llama-bpe.gguf", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, llama_bpe_parse_special, "ggml-vocab-llama-bpe.gguf", true)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, qwen2, "ggml-vocab-qwen2.gguf", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, gpt_2, "ggml-vocab-gpt-2.gguf", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, deepseek_llm, "ggml-vocab-deepseek-llm.gguf", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, llama_spm, "ggml-vocab-llama-spm.gguf", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, gemma_4, "ggml-vocab-gemma-4.gguf", false)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Encode, bert_bge, "ggml-vocab-bert-bge.gguf", false)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
