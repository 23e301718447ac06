#pragma once
// Small random-weight llama models (ridge gen-model's generator) with the real
// Llama-2 vocabulary of ../shared/vocab, written once per test process.
#include <string>

#include "ridge/gguf/ggml_type.h"

namespace ridge::testing {

// dim 128, ffn 352, 2 layers, 4 heads, 2 KV heads, context 256, weights of `type`.
const std::string& RandomModelGguf(GgmlType type);

}  // namespace ridge::testing
