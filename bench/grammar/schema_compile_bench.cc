// Compile time of a typical JSON Schema (issue 14's target: ≤ 50 ms for 20
// properties, nested): JsonSchemaToGbnf, then ParseGbnf of its text, each
// alone and together. The server caches the result by schema text, so this
// is paid once per distinct schema.
//
//   build/ridge_grammar_bench --benchmark_filter=Schema
#include <benchmark/benchmark.h>

#include <string>

#include "ridge/grammar/gbnf.h"
#include "ridge/grammar/json_schema_to_gbnf.h"

namespace {

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

}  // namespace
