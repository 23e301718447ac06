#pragma once
// Small random-weight models (ridge gen-model's generator) with the real
// Llama-2 vocabulary of ../shared/vocab.
#include <string>

#include "ridge/gguf/ggml_type.h"
#include "ridge/gguf/gguf_writer.h"
#include "ridge/gguf/model_generator.h"

namespace ridge::testing {

// dim 128, ffn 352, 2 layers, 4 heads, 2 KV heads, context 256, weights of
// `type`; written once per test process.
const std::string& RandomModelGguf(GgmlType type);

// A random model of `options` with the Llama-2 vocabulary, not yet written
// (for tests that edit its metadata first).
GgufWriter BuildRandomLlamaVocabModel(const RandomModelOptions& options);

// The same, written to ScratchDir(scratch_name)/file_name; returns its path.
std::string WriteRandomModelGguf(const RandomModelOptions& options, const std::string& scratch_name,
                                 const std::string& file_name = "model.gguf");

}  // namespace ridge::testing
