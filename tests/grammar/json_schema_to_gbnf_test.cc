// The JSON Schema front end judged by python3-jsonschema: for the table of
// schemas in schema_oracle.py and a seeded fuzz of random ones, the grammar
// accepts every valid instance written in its documented layout and never an
// invalid text. Then the layout rules and the refusals, by hand.
#include <gtest/gtest.h>

#include <string>

#include "grammar/schema_oracle.h"
#include "ridge/base/error.h"
#include "ridge/grammar/gbnf.h"
#include "ridge/grammar/json_schema_to_gbnf.h"
#include "ridge/grammar/matcher.h"

namespace ridge::grammar {
namespace {

struct Tally {
  int accepted = 0, rejected = 0;
};

// Checks one oracle record: {"name", "schema", "cases": [{"text", "valid", "expect"}]}.
Tally CheckRecord(const nlohmann::json& record) {
  const std::string name = record["name"], schema = record["schema"];
  std::string gbnf;
  try {
    gbnf = JsonSchemaToGbnf(schema);
  } catch (const Error& e) {
    ADD_FAILURE() << name << ": " << e.what() << "\nschema: " << schema;
    return {};
  }
  auto grammar = ParseGbnf(gbnf);
  Tally tally;
  for (const auto& c : record["cases"]) {
    const std::string text = c["text"], expect = c["expect"];
    const bool accepted = MatchesWhole(*grammar, text);
    (accepted ? tally.accepted : tally.rejected)++;
    const std::string context = name + "\nschema: " + schema + "\ntext: " + text + "\ngrammar:\n" + gbnf;
    if (accepted) {
      EXPECT_TRUE(c["valid"].get<bool>()) << "accepted an invalid text (" << c["error"] << "): " << context;
    } else {
      EXPECT_NE(expect, "accept") << "rejected a valid text in the documented layout: " << context;
    }
  }
  return tally;
}

TEST(JsonSchemaToGbnfTest, TableJudgedByJsonschema) {
  const auto records = testing::RunSchemaOracle("cases --seed 1");
  ASSERT_GE(records.size(), 20u);
  Tally total;
  for (const auto& r : records) {
    Tally t = CheckRecord(r);
    total.accepted += t.accepted, total.rejected += t.rejected;
  }
  // Both verdicts must occur often, or the table tests little.
  EXPECT_GT(total.accepted, 150);
  EXPECT_GT(total.rejected, 150);
}

TEST(JsonSchemaToGbnfTest, FuzzJudgedByJsonschema) {
  for (int seed : {11, 12}) {
    const auto records = testing::RunSchemaOracle("fuzz --count 120 --seed " + std::to_string(seed));
    ASSERT_EQ(records.size(), 120u);
    Tally total;
    for (const auto& r : records) {
      Tally t = CheckRecord(r);
      total.accepted += t.accepted, total.rejected += t.rejected;
    }
    EXPECT_GT(total.accepted, 300) << "seed " << seed;
    EXPECT_GT(total.rejected, 200) << "seed " << seed;
  }
}

bool Matches(const std::string& schema, const std::string& text) {
  return MatchesWhole(*ParseGbnf(JsonSchemaToGbnf(schema)), text);
}

TEST(JsonSchemaToGbnfTest, PropertiesInDeclarationOrder) {
  const std::string schema =
      R"({"type":"object","properties":{"z":{"type":"integer"},"a":{"type":"integer"}},"required":["z","a"],
          "additionalProperties":false})";
  EXPECT_TRUE(Matches(schema, R"({"z":1,"a":2})"));
  EXPECT_FALSE(Matches(schema, R"({"a":2,"z":1})"));
}

TEST(JsonSchemaToGbnfTest, WhitespaceIsBounded) {
  const std::string schema = R"({"type":"array","items":{"type":"integer"}})";
  EXPECT_TRUE(Matches(schema, "[1, 2]"));
  EXPECT_TRUE(Matches(schema, "\n[\n" + std::string(20, ' ') + "1,\n\t2\n]\n"));
  EXPECT_FALSE(Matches(schema, "[\n" + std::string(21, ' ') + "1]"));  // indent past 20 columns
  EXPECT_FALSE(Matches(schema, "[1,  2]"));                           // two spaces
  EXPECT_FALSE(Matches(schema, "[1,\n\n2]"));                         // a blank line
}

TEST(JsonSchemaToGbnfTest, JsonObjectModeTakesAnyObject) {
  auto grammar = ParseGbnf(JsonObjectGbnf());
  for (const char* ok : {"{}", R"({"a": [1, {"b": null}], "c": "d"})", "{\n  \"x\": -1.5e3\n}"})
    EXPECT_TRUE(MatchesWhole(*grammar, ok)) << ok;
  for (const char* bad : {"[]", "1", "\"s\"", "null", R"({"a":})", R"({"a":1,})", "{} {}"})
    EXPECT_FALSE(MatchesWhole(*grammar, bad)) << bad;
}

TEST(JsonSchemaToGbnfTest, RefusesUnsupportedKeywordsNamingThem) {
  struct Case {
    std::string schema, message;
  };
  const std::vector<Case> cases = {
      {R"({"type":"object","properties":{"a":{"not":{"type":"string"}}}})",
       "json schema at /properties/a: 'not' is not supported"},
      {R"({"type":"array","items":{"type":"string"},"uniqueItems":true})", "json schema at /: 'uniqueItems'"},
      {R"({"type":"object","patternProperties":{"^x":{}}})", "'patternProperties' is not supported"},
      {R"({"$defs":{"a":{"if":{}}},"$ref":"#/$defs/a"})", "json schema at /$defs/a: 'if' is not supported"},
      {R"({"$ref":"https://example.com/s.json"})", "json schema at /$ref: '$ref' 'https://example.com/s.json'"},
      {R"({"$ref":"#/$defs/missing"})", "does not name a schema"},
      {R"({"type":"string","format":"uri"})", "json schema at /format: format \"uri\" is not supported"},
      {R"js({"type":"object","properties":{"p":{"type":"string","pattern":"a(?=b)"}}})js",
       "json schema at /properties/p/pattern: lookahead is not supported"},
      {R"({"type":"integer","minimum":5,"maximum":4})", "no integer lies within"},
      {R"({"type":"string","maxLength":100000})", "json schema at /maxLength: 'maxLength' above 1000"},
      {R"({"type":"array","minItems":-1})", "'minItems' must be a non-negative integer"},
      {R"({"type":"decimal"})", "json schema at /type: unknown type 'decimal'"},
      {R"({"allOf":[{"type":"string"},{"maxLength":3}]})", "'allOf' with more than one schema"},
      {R"({"type":"object","required":["x"]})", "required property 'x' is not in 'properties'"},
      {R"({"type":"string","enum":[1,2]})", "no value of 'enum'"},
      {R"({"type":"number","exclusiveMinimum":true})", "draft-04's boolean form"},
      {R"({"$ref":"#/$defs/a","type":"object","$defs":{"a":{}}})", "'$ref' together with 'type'"},
      {R"(false)", "the schema false matches nothing"},
      {R"({"type":"object",)", "json schema is not valid JSON"},
  };
  for (const auto& c : cases) {
    try {
      JsonSchemaToGbnf(c.schema);
      ADD_FAILURE() << c.schema << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos) << c.schema << "\n" << e.what();
    }
  }
}

}  // namespace
}  // namespace ridge::grammar
