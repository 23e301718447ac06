#pragma once
// The real tiny model of ../shared/models (stories260K, llama2.c format)
// converted to GGUF once per test process, in a scratch folder.
#include <string>

namespace ridge::testing {

// Path of stories260K converted to GGUF with F32 weights (converted on first call).
const std::string& Stories260kGguf();

// Path of stories260K widened (llama2c_widen.h) into a larger llama shape
// with F32 weights: dim 256, hidden 256, 7 layers, 16 heads (4 kv, head
// size 16), 600 tokens. The same function, so the same greedy stories.
const std::string& WidenedStories260kGguf();

}  // namespace ridge::testing
