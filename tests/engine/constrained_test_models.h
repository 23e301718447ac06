#pragma once
// The models the constrained-decoding engine tests run on, each loaded once
// per test process, and the loop that collects a request's tokens:
//   "stories260K"  the real tiny model (SentencePiece, 512 tokens)
//   "llama-spm"    a random-weight model with the 32,000-token Llama 2 vocabulary
//   "gpt-2"        a random-weight model with GPT-2's byte-level BPE (50,257 tokens)
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "drained_stream.h"
#include "random_model.h"
#include "ridge/engine/engine.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/model_generator.h"
#include "stories_model.h"
#include "test_paths.h"

namespace ridge::testing {

struct LoadedModel {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
};

// GPT-2's vocabulary on a small random model with a 512-token context.
inline const std::string& Gpt2RandomModelGguf() {
  static const std::string path = [] {
    const GgufFile vocab = GgufFile::Open(SharedDir() + "/vocab/ggml-vocab-gpt-2.gguf");
    RandomModelOptions options;
    options.shape = {128, 352, 2, 4, 2, 512};
    options.shape.tied_embeddings = true;
    options.type = GgmlType::kF16;
    options.seed = 23;
    const std::string p = ScratchDir("constrained-gpt2") + "/random-gpt2.gguf";
    BuildRandomModelGguf(vocab, options, nullptr).Write(p);
    return p;
  }();
  return path;
}

// One of the names above.
inline const LoadedModel& ConstrainedTestModel(const std::string& name) {
  static std::map<std::string, LoadedModel> models;
  LoadedModel& m = models[name];
  if (!m.model) {
    const std::string path = name == "stories260K" ? Stories260kGguf()
                             : name == "llama-spm" ? RandomModelGguf(GgmlType::kF32)
                                                   : Gpt2RandomModelGguf();
    m.model = Model::Load(path);
    m.tokenizer = std::make_unique<Tokenizer>(Tokenizer::FromGguf(m.model->file()));
  }
  return m;
}


}  // namespace ridge::testing
