#pragma once
// Well-known model shapes of every supported architecture, so that the
// roofline and KV calculators (and `ridge gen-model`) can work without a model
// file. One table, one place.
#include <string>
#include <vector>

#include "ridge/gguf/model_generator.h"  // RandomRopeScaling
#include "ridge/model/model_config.h"

namespace ridge {

struct ModelPreset {
  std::string name;         // "tinyllama-1.1b"
  std::string description;  // "TinyLlama 1.1B (Llama-2 vocabulary)"
  ModelConfig config;       // shape and variant settings, every size set
  bool tied_embeddings = false;  // the LM head reuses token_embd (no output.weight)
  // How the real files carry RoPE scaling (Llama 3.2: rope_freqs.weight;
  // phi-3.5: LongRoPE factors), for gen-model; config.rope_scaling holds the factor and original context.
  RandomRopeScaling rope_scaling = RandomRopeScaling::kNone;
  std::string vocab_note;   // the stand-in vocabulary when the real one is not in ../shared/vocab
  // When no file in ../shared/vocab has n_vocab tokens: the file gen-model
  // copies instead (its size then sets the embeddings' and LM head's rows).
  std::string stand_in_vocab_file;
};

// In the order they are listed to a user.
const std::vector<ModelPreset>& ModelPresets();
// Throws ridge::Error listing the known names if `name` is not one of them.
const ModelPreset& FindModelPreset(const std::string& name);
// "tinyllama-1.1b, llama-3.2-1b, ..."
std::string ModelPresetNames();

}  // namespace ridge
