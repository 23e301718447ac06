// A typical JSON Schema (20 properties, nested, issue 14's example):
//  - compile time (target ≤ 50 ms): JsonSchemaToGbnf, then ParseGbnf of its
//    text, each alone and together; the server caches the result by schema
//    text, so this is paid once per distinct schema;
//  - the per-step token mask under the schema's grammar, cache warm, replaying
//    a valid document's tokens (as BM_MaskStep does for the GBNF JSON grammar),
//    with the Llama 2 (32,000) and Llama 3 (128,256) vocabularies.
//
//   build/ridge_grammar_bench --benchmark_filter=Schema
#include <benchmark/benchmark.h>

#include <string>

#include "ridge/gguf/gguf_file.h"
#include "ridge/grammar/gbnf.h"
#include "ridge/grammar/grammar_vocabulary.h"
#include "ridge/grammar/json_schema_to_gbnf.h"
#include "ridge/grammar/matcher.h"
#include "ridge/grammar/token_masker.h"
#include "ridge/tokenizer/tokenizer.h"
#include "test_paths.h"

namespace {

using namespace ridge;
using namespace ridge::grammar;

// 20 properties over three levels: strings with bounds, a pattern, formats,
// integer and number ranges, enums, arrays, an optional nested object and a
// recursive $ref.
const std::string kSchema = R"({
  "$defs": {"tag": {"type": "object", "properties": {"key": {"type": "string", "maxLength": 16},
    "children": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "maxItems": 4}}, "required": ["key"],
    "additionalProperties": false}},
  "type": "object",
  "properties": {
    "id": {"type": "string", "format": "uuid"},
    "name": {"type": "string", "minLength": 1, "maxLength": 40},
    "email": {"type": "string", "format": "email"},
    "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "score": {"type": "number", "minimum": 0, "maximum": 100},
    "created": {"type": "string", "format": "date-time"},
    "birthday": {"type": "string", "format": "date"},
    "status": {"enum": ["active", "inactive", "banned", "pending"]},
    "code": {"type": "string", "pattern": "^[A-Z]{3}-\\d{4}$"},
    "verified": {"type": "boolean"},
    "nickname": {"type": ["string", "null"], "maxLength": 20},
    "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "maxItems": 8},
    "address": {"type": "object", "properties": {
      "street": {"type": "string"}, "city": {"type": "string"}, "zip": {"type": "string", "pattern": "^\\d{5}$"},
      "country": {"enum": ["US", "FR", "DE", "JP"]}, "geo": {"type": "object", "properties": {
        "lat": {"type": "number", "minimum": -90, "maximum": 90},
        "lon": {"type": "number", "minimum": -180, "maximum": 180}}, "required": ["lat", "lon"],
        "additionalProperties": false}},
      "required": ["city", "country"], "additionalProperties": false},
    "scores": {"type": "array", "items": {"type": "integer", "minimum": -1000, "maximum": 1000}, "minItems": 1,
               "maxItems": 10},
    "notes": {"type": "string"},
    "level": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10},
    "ratio": {"type": "number"},
    "meta": {"type": "object", "additionalProperties": {"type": "string"}},
    "pair": {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false}
  },
  "required": ["id", "name", "age", "status", "tags"],
  "additionalProperties": false
})";

void BM_SchemaToGbnf(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(JsonSchemaToGbnf(kSchema));
  state.counters["gbnf_bytes"] = static_cast<double>(JsonSchemaToGbnf(kSchema).size());
}
BENCHMARK(BM_SchemaToGbnf)->Unit(benchmark::kMillisecond);

void BM_SchemaGbnfParse(benchmark::State& state) {
  const std::string gbnf = JsonSchemaToGbnf(kSchema);
  for (auto _ : state) benchmark::DoNotOptimize(ParseGbnf(gbnf));
}
BENCHMARK(BM_SchemaGbnfParse)->Unit(benchmark::kMillisecond);

void BM_SchemaCompile(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(ParseGbnf(JsonSchemaToGbnf(kSchema)));
}
BENCHMARK(BM_SchemaCompile)->Unit(benchmark::kMillisecond);

// Valid against kSchema, properties in its order (the converter's layout).
constexpr std::string_view kDocument =
    R"({"id": "123e4567-e89b-12d3-a456-426614174000", "name": "Ada Lovelace", "email": "ada@example.org",)"
    R"( "age": 36, "score": 99.5, "created": "1843-07-10T12:00:00Z", "birthday": "1815-12-10",)"
    R"( "status": "active", "code": "ABC-1234", "verified": true, "nickname": null,)"
    R"( "tags": [{"key": "math", "children": [{"key": "analysis"}]}, {"key": "poetry"}],)"
    R"( "address": {"street": "St James's Square", "city": "London", "zip": "12345", "country": "FR",)"
    R"( "geo": {"lat": 51.5, "lon": -0.25}}, "scores": [1, -2, 1000], "notes": "Wrote \"poetical science\".",)"
    R"( "level": 3, "ratio": -2e3, "meta": {"era": "Victorian"}, "pair": ["x", 2]})";

void BM_SchemaMaskStep(benchmark::State& state) {
  const char* file = state.range(0) == 0 ? "ggml-vocab-llama-spm.gguf" : "ggml-vocab-llama-bpe.gguf";
  const GgufFile gguf = GgufFile::Open(testing::SharedDir() + "/vocab/" + file);
  const Tokenizer tokenizer = Tokenizer::FromGguf(gguf);
  auto grammar = ParseGbnf(JsonSchemaToGbnf(kSchema));
  auto vocab = std::make_shared<GrammarVocabulary>(tokenizer);
  std::vector<int32_t> tokens = tokenizer.Encode(kDocument, /*add_bos=*/false);
  tokens.push_back(tokenizer.eos_id());
  TokenMasker masker(grammar, vocab);
  TokenBitmask mask;
  // One pass over the document; false if a token is refused (a bug).
  auto replay = [&] {
    GrammarMatcher matcher(grammar);
    for (int32_t token : tokens) {
      masker.FillMask(matcher, /*first_token=*/false, &mask);
      if (!masker.AcceptToken(&matcher, token, /*first_token=*/false)) return false;
    }
    return true;
  };
  if (!replay()) state.SkipWithError("the document is not accepted");
  for (auto _ : state) replay();
  state.counters["us_per_step"] = benchmark::Counter(static_cast<double>(tokens.size()) * 1e-6,
                                                     benchmark::Counter::kIsIterationInvariantRate |
                                                         benchmark::Counter::kInvert);
  state.counters["cache_entries"] = static_cast<double>(masker.stats().cache_entries);
  state.counters["cache_MiB"] = static_cast<double>(masker.stats().cache_bytes) / (1 << 20);
  state.SetLabel(file);
}
BENCHMARK(BM_SchemaMaskStep)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
