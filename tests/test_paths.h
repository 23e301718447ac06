#pragma once
// Where tests find ../shared (read in place, never copied) and scratch space.
#include <string>

namespace ridge::testing {

// $RIDGE_SHARED_DIR, or the shared/ folder beside the source tree.
std::string SharedDir();
// A fresh directory under the system temp folder, unique per call, removed when the test process exits.
std::string ScratchDir(const std::string& name);
// The source tree (test data and scripts: tests/jinja/templates, tests/grammar/schema_oracle.py).
std::string SourceDir();
// The ridge binary built alongside the tests.
std::string RidgeBinary();

}  // namespace ridge::testing
