#pragma once
// Well-known Llama-family shapes, so that the roofline and KV calculators (and
// `ridge gen-model`) can work without a model file. One table, one place.
#include <string>
#include <vector>

#include "ridge/model/llama_config.h"

namespace ridge {

struct ModelPreset {
  std::string name;         // "tinyllama-1.1b"
  std::string description;  // "TinyLlama 1.1B (Llama-2 vocabulary)"
  LlamaConfig config;       // shape only: architecture "llama", every size set
  bool tied_embeddings = false;  // the LM head reuses token_embd (no output.weight)
};

// In the order they are listed to a user.
const std::vector<ModelPreset>& ModelPresets();
// Throws ridge::Error listing the known names if `name` is not one of them.
const ModelPreset& FindModelPreset(const std::string& name);
// "tinyllama-1.1b, llama-3.2-1b, ..."
std::string ModelPresetNames();

}  // namespace ridge
