#include "stories_model.h"

#include "ridge/gguf/llama2c_import.h"
#include "test_paths.h"

namespace ridge::testing {

const std::string& Stories260kGguf() {
  static const std::string path = [] {
    std::string models = SharedDir() + "/models/";
    Llama2cCheckpoint ckpt = Llama2cCheckpoint::Open(models + "stories260K.bin");
    Llama2cVocab vocab = ReadLlama2cTokenizer(models + "tok512.bin", ckpt.header.vocab_size);
    Llama2cConvertOptions options;
    options.name = "stories260K";
    std::string out = ScratchDir("stories") + "/stories260K.gguf";
    BuildLlama2cGguf(ckpt, vocab, options).Write(out);
    return out;
  }();
  return path;
}

}  // namespace ridge::testing
