#pragma once
// The real tiny model of ../shared/models (stories260K, llama2.c format)
// converted to GGUF once per test process, in a scratch folder.
#include <string>

namespace ridge::testing {

// Path of stories260K converted to GGUF with F32 weights (converted on first call).
const std::string& Stories260kGguf();

}  // namespace ridge::testing
