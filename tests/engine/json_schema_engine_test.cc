// JSON Schema constrained generation end to end, judged by python3-jsonschema
// (tests/grammar/schema_oracle.py): seeded random schemas whose documents
// are all short (so that a sampling model finishes one within its context)
// and a few hand-written ones, on stories260K and on random-weight models
// with the 32,000-token Llama 2 vocabulary and the byte-level BPE GPT-2
// vocabulary, at temperature 0 and 1, batched in one engine. Every output
// the grammar ended must parse with Python's json and validate; an output
// cut by max_tokens must still be a prefix the grammar accepts.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "constrained_test_models.h"
#include "grammar/schema_oracle.h"
#include "ridge/engine/engine.h"
#include "ridge/grammar/gbnf.h"
#include "ridge/grammar/json_schema_to_gbnf.h"
#include "ridge/grammar/matcher.h"
#include "ridge/grammar/regex_to_gbnf.h"
#include "stories_model.h"
#include "test_paths.h"

namespace ridge {
namespace {

// Hand-written schemas every model gets, beside the random ones.
const std::vector<std::string>& FixedSchemas() {
  static const std::vector<std::string> schemas = {
      R"({"type":"object","properties":{"name":{"type":"string","maxLength":6},"age":{"type":"integer","minimum":0,
          "maximum":120},"tags":{"type":"array","items":{"enum":["a","b","c"]},"maxItems":3}},
          "required":["name","age"],"additionalProperties":false})",
      R"({"type":"array","prefixItems":[{"type":"boolean"},{"type":"null"}],"items":false,"minItems":2})",
      R"({"anyOf":[{"type":"integer","minimum":-50,"maximum":50},{"type":"string","format":"date"}]})",
      R"({"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer","minimum":0,"maximum":9},
          "kids":{"type":"array","items":{"$ref":"#/$defs/node"},"maxItems":2}},"required":["v"],
          "additionalProperties":false}},"$ref":"#/$defs/node"})",
      R"({"type":"object","properties":{"when":{"type":"string","format":"date-time"},
          "id":{"type":"string","format":"uuid"},"score":{"type":"number","minimum":0,"maximum":1}},
          "required":["when","id","score"],"additionalProperties":false})",
  };
  return schemas;
}

struct Case {
  std::string model;
  float temperature;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " at temperature " << c.temperature; }

class JsonSchemaEngineTest : public ::testing::TestWithParam<Case> {};

TEST_P(JsonSchemaEngineTest, EveryFinishedOutputValidates) {
  const testing::LoadedModel& m = testing::ConstrainedTestModel(GetParam().model);
  std::vector<std::string> schemas = FixedSchemas();
  const int seed = GetParam().model.size() + static_cast<int>(GetParam().temperature * 10);
  for (const auto& r : testing::RunSchemaOracle("fuzz --bounded --count 16 --seed " + std::to_string(seed)))
    schemas.push_back(r["schema"].get<std::string>());

  EngineOptions options;
  options.n_threads = 2;
  options.kv_type = GgmlType::kF32;
  Engine engine(*m.model, *m.tokenizer, options);
  struct Submitted {
    std::shared_ptr<RequestStream> stream;
    std::shared_ptr<const grammar::Grammar> grammar;
    std::string schema;
  };
  std::vector<Submitted> submitted;
  const std::vector<TokenId> prompt = m.tokenizer->Encode("JSON:", true);
  const int64_t room = m.model->config().n_ctx_train - static_cast<int64_t>(prompt.size());
  for (size_t i = 0; i < schemas.size(); ++i) {
    RequestParams p;
    p.prompt = prompt;
    p.max_new_tokens = std::min<int64_t>(room, 240);
    p.sampling.temperature = GetParam().temperature;
    p.sampling.seed = i;
    p.grammar = grammar::ParseGbnf(grammar::JsonSchemaToGbnf(schemas[i]));
    submitted.push_back({engine.Submit(p), p.grammar, schemas[i]});
  }
  engine.RunUntilIdle();

  std::vector<std::pair<std::string, std::string>> finished;  // (schema, output)
  for (const Submitted& s : submitted) {
    const auto [ids, kind, error, request_fault] = testing::DrainStream(*s.stream);
    std::string text;
    for (TokenId id : ids) text += m.tokenizer->TokenBytes(id);
    ASSERT_NE(kind, FinishKind::kError) << error << "\nschema: " << s.schema << "\ntext: " << text;
    if (kind == FinishKind::kStop) {
      finished.emplace_back(s.schema, text);
    } else {
      grammar::GrammarMatcher matcher(s.grammar);
      EXPECT_TRUE(matcher.AcceptBytes(text)) << "cut output left the grammar\nschema: " << s.schema << "\n" << text;
    }
  }
  // Short documents: nearly every request ends by the grammar, not by max_tokens.
  EXPECT_GE(finished.size() * 10, submitted.size() * 7) << finished.size() << " of " << submitted.size();
  const auto verdicts = testing::ValidateWithOracle(finished);
  for (size_t i = 0; i < verdicts.size() && i < finished.size(); ++i)
    EXPECT_TRUE(verdicts[i].ok) << verdicts[i].error << "\nschema: " << finished[i].first
                                << "\noutput: " << finished[i].second;
}

INSTANTIATE_TEST_SUITE_P(Models, JsonSchemaEngineTest,
                         ::testing::Values(Case{"stories260K", 0.0f}, Case{"stories260K", 1.0f},
                                           Case{"llama-spm", 0.0f}, Case{"llama-spm", 1.0f},
                                           Case{"gpt-2", 0.0f}, Case{"gpt-2", 1.0f}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name = info.param.model + (info.param.temperature == 0 ? "_greedy" : "_temp1");
                           for (char& c : name) c = c == '-' ? '_' : c;
                           return name;
                         });

// `ridge run --json-schema FILE` and `--regex R` on stories260K.
TEST(JsonSchemaCliTest, RunFollowsTheSchemaAndTheRegex) {
  const std::string dir = testing::ScratchDir("schema-cli");
  const std::string schema = FixedSchemas()[0];
  std::ofstream(dir + "/schema.json") << schema;
  for (const char* temp : {"0", "1"}) {
    const auto r = testing::RunRidge("run -m '" + testing::Stories260kGguf() + "' -p 'Once upon a time' -n 200 --temp " +
                                     temp + " --seed 3 --no-echo --json-schema '" + dir + "/schema.json'");
    ASSERT_EQ(r.exit_code, 0) << r.output();
    ASSERT_NE(r.err.find("finish: stop"), std::string::npos) << r.err;
    const auto verdicts = testing::ValidateWithOracle({{schema, r.out}});
    ASSERT_EQ(verdicts.size(), 1u);
    EXPECT_TRUE(verdicts[0].ok) << verdicts[0].error << "\n" << r.out;
  }
  const auto re = testing::RunRidge("run -m '" + testing::Stories260kGguf() +
                                    "' -p 'Once' -n 40 --temp 1 --no-echo --regex '(yes|no), [a-z]{2,5}\\.'");
  ASSERT_EQ(re.exit_code, 0) << re.output();
  EXPECT_TRUE(grammar::MatchesWhole(*grammar::ParseGbnf(grammar::RegexToGbnf("(yes|no), [a-z]{2,5}\\.")), re.out))
      << re.out;

  const auto bad = testing::RunRidge("run -m '" + testing::Stories260kGguf() + "' -p x --regex 'a(?=b)'");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_TRUE(bad.Has("--regex: lookahead is not supported")) << bad.output();
  std::ofstream(dir + "/bad.json") << R"({"type":"object","properties":{"a":{"not":{}}}})";
  const auto bad_schema =
      testing::RunRidge("run -m '" + testing::Stories260kGguf() + "' -p x --json-schema '" + dir + "/bad.json'");
  EXPECT_NE(bad_schema.exit_code, 0);
  EXPECT_TRUE(bad_schema.Has("json schema at /properties/a: 'not' is not supported")) << bad_schema.output();
}

}  // namespace
}  // namespace ridge
