// Per-step cost of grammar-constrained decoding: the token mask for the next
// step (TokenMasker::FillMask), advancing the automaton by the chosen token
// (AcceptToken) and applying the mask to the logits, replayed over the tokens
// of a nested JSON document under the GBNF JSON grammar, with the Llama 2
// (32,000-token SentencePiece) and Llama 3 (128,256-token byte-level BPE)
// vocabularies of ../shared/vocab.
//
//   build/ridge_grammar_bench
//
// BM_MaskStep: cache warm (the document replayed once first), µs per token.
// BM_ColdDocument: a fresh masker per document: what the first request with
//   a grammar pays while the cache fills (the trie walks), per document.
// BM_ApplyMask: the -inf pass over one step's logits alone.
#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "ridge/gguf/gguf_file.h"
#include "ridge/grammar/gbnf.h"
#include "ridge/grammar/grammar_vocabulary.h"
#include "ridge/grammar/matcher.h"
#include "ridge/grammar/token_masker.h"
#include "ridge/tokenizer/tokenizer.h"
#include "test_paths.h"

namespace {

using namespace ridge;
using namespace ridge::grammar;

constexpr std::string_view kJsonGbnf = R"gbnf(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt/] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9]{1,16})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)gbnf";

constexpr std::string_view kDocument =
    R"({"name": "Ada Lovelace", "born": 1815, "languages": ["English", "French", "Italian"],)"
    R"( "notes": "Wrote the first published algorithm; called her approach \"poetical science\".",)"
    R"( "address": {"city": "London", "street": "St James's Square", "number": 12, "zip": "SW1Y"},)"
    R"( "scores": [1.5, -2e3, 0, 42, 3.14159], "active": true, "spouse": null,)"
    R"( "children": [{"name": "Byron", "born": 1836}, {"name": "Anne Isabella", "born": 1837},)"
    R"( {"name": "Ralph Gordon", "born": 1839}], "tags": ["mathematics", "computing", "poetry"]})";

const char* VocabFile(int64_t which) { return which == 0 ? "ggml-vocab-llama-spm.gguf" : "ggml-vocab-llama-bpe.gguf"; }

struct Setup {
  std::shared_ptr<const Grammar> grammar;
  std::shared_ptr<const GrammarVocabulary> vocab;
  std::vector<int32_t> tokens;  // the document, then end of generation
  bool strips_first_space = false;
};

const Setup& GetSetup(int64_t which) {
  static Setup setups[2];
  Setup& s = setups[which];
  if (!s.grammar) {
    const GgufFile file = GgufFile::Open(testing::SharedDir() + "/vocab/" + VocabFile(which));
    const Tokenizer tokenizer = Tokenizer::FromGguf(file);
    s.grammar = ParseGbnf(kJsonGbnf);
    s.vocab = std::make_shared<GrammarVocabulary>(tokenizer);
    s.tokens = tokenizer.Encode(kDocument, /*add_bos=*/false);
    s.tokens.push_back(tokenizer.eos_id());
    s.strips_first_space = tokenizer.add_space_prefix();
  }
  return s;
}

// One pass over the document; false if a token is refused (a bug).
bool Replay(const Setup& s, TokenMasker& masker, TokenBitmask& mask, bool skip_first) {
  GrammarMatcher matcher(s.grammar);
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    const bool first = i == 0;
    if (!(skip_first && first)) masker.FillMask(matcher, first, &mask);
    if (!masker.AcceptToken(&matcher, s.tokens[i], first)) return false;
  }
  return true;
}

void BM_MaskStep(benchmark::State& state) {
  const Setup& s = GetSetup(state.range(0));
  TokenMasker masker(s.grammar, s.vocab);
  TokenBitmask mask;
  if (!Replay(s, masker, mask, false)) state.SkipWithError("the document is not accepted");
  for (auto _ : state) {
    // The first step (an uncached walk for SentencePiece's leading space) is measured apart.
    Replay(s, masker, mask, /*skip_first=*/true);
  }
  const auto steps = static_cast<double>(s.tokens.size() - 1);
  state.counters["us_per_step"] = benchmark::Counter(steps * 1e-6, benchmark::Counter::kIsIterationInvariantRate |
                                                                        benchmark::Counter::kInvert);
  state.counters["cache_entries"] = static_cast<double>(masker.stats().cache_entries);
  state.counters["cache_MiB"] = static_cast<double>(masker.stats().cache_bytes) / (1 << 20);
  state.SetLabel(VocabFile(state.range(0)));
}
BENCHMARK(BM_MaskStep)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_FirstStep(benchmark::State& state) {
  const Setup& s = GetSetup(state.range(0));
  TokenMasker masker(s.grammar, s.vocab);
  TokenBitmask mask;
  GrammarMatcher matcher(s.grammar);
  for (auto _ : state) masker.FillMask(matcher, /*first_token=*/true, &mask);
  state.SetLabel(VocabFile(state.range(0)));
}
BENCHMARK(BM_FirstStep)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_ColdDocument(benchmark::State& state) {
  const Setup& s = GetSetup(state.range(0));
  TokenBitmask mask;
  for (auto _ : state) {
    TokenMasker masker(s.grammar, s.vocab);
    Replay(s, masker, mask, false);
  }
  state.SetLabel(VocabFile(state.range(0)));
}
BENCHMARK(BM_ColdDocument)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_ApplyMask(benchmark::State& state) {
  const Setup& s = GetSetup(state.range(0));
  TokenMasker masker(s.grammar, s.vocab);
  TokenBitmask mask;
  GrammarMatcher matcher(s.grammar);
  matcher.AcceptBytes("{\"name\": \"Ada");  // inside a string: most tokens allowed
  masker.FillMask(matcher, false, &mask);
  std::vector<float> logits(static_cast<size_t>(s.vocab->n_vocab()), 0.5f);
  for (auto _ : state) {
    ApplyTokenMask(mask, logits);
    benchmark::DoNotOptimize(logits.data());
  }
  state.SetLabel(VocabFile(state.range(0)));
}
BENCHMARK(BM_ApplyMask)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void BM_BuildVocabulary(benchmark::State& state) {
  const GgufFile file = GgufFile::Open(testing::SharedDir() + "/vocab/" + VocabFile(state.range(0)));
  const Tokenizer tokenizer = Tokenizer::FromGguf(file);
  for (auto _ : state) {
    GrammarVocabulary vocab(tokenizer);
    benchmark::DoNotOptimize(vocab.n_vocab());
  }
  state.SetLabel(VocabFile(state.range(0)));
}
BENCHMARK(BM_BuildVocabulary)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
