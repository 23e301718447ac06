#pragma once
// Runs tests/grammar/schema_oracle.py (Debian's python3-jsonschema, the
// independent judge of the JSON Schema front end) from C++ tests: the table
// and fuzz cases it labels, and verdicts on texts a model generated.
// /usr/bin/python3 is Debian's, where scripts/setup.sh installs jsonschema.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "test_paths.h"

namespace ridge::testing {

// stdout of `schema_oracle.py ARGS < input`, one parsed JSON value per line.
// A failing script fails the test (and returns nothing).
inline std::vector<nlohmann::json> RunSchemaOracle(const std::string& args, const std::string& input = "") {
  const std::string dir = ScratchDir("schema-oracle");
  const std::string in = dir + "/in.jsonl", out = dir + "/out.jsonl", err = dir + "/err.txt";
  std::ofstream(in, std::ios::binary) << input;
  const std::string command = "PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 '" + SourceDir() +
                              "/tests/grammar/schema_oracle.py' " + args + " < '" + in + "' > '" + out + "' 2> '" +
                              err + "'";
  const int rc = std::system(command.c_str());
  std::stringstream errors;
  errors << std::ifstream(err).rdbuf();
  EXPECT_EQ(rc, 0) << command << "\n" << errors.str() << "(is python3-jsonschema installed? scripts/setup.sh)";
  std::vector<nlohmann::json> records;
  if (rc != 0) return records;
  std::ifstream lines(out, std::ios::binary);
  for (std::string line; std::getline(lines, line);)
    if (!line.empty()) records.push_back(nlohmann::json::parse(line));
  return records;
}

struct OracleVerdict {
  bool ok = false;
  std::string error;  // jsonschema's message, or why the text is not JSON
};

// jsonschema's verdict on each (schema text, document text).
inline std::vector<OracleVerdict> ValidateWithOracle(const std::vector<std::pair<std::string, std::string>>& docs) {
  std::string input;
  for (const auto& [schema, text] : docs) input += nlohmann::json{{"schema", schema}, {"text", text}}.dump() + "\n";
  std::vector<OracleVerdict> verdicts;
  for (const auto& r : RunSchemaOracle("validate", input))
    verdicts.push_back({r["ok"].get<bool>(), r["error"].is_string() ? r["error"].get<std::string>() : ""});
  EXPECT_EQ(verdicts.size(), docs.size());
  return verdicts;
}

}  // namespace ridge::testing
