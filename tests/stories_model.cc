#include "stories_model.h"

#include "ridge/gguf/llama2c_import.h"
#include "test_paths.h"

namespace ridge::testing {

namespace {

std::string ConvertStories(const std::string& file_name, const Llama2cConvertOptions& options) {
  std::string models = SharedDir() + "/models/";
  Llama2cCheckpoint ckpt = Llama2cCheckpoint::Open(models + "stories260K.bin");
  Llama2cVocab vocab = ReadLlama2cTokenizer(models + "tok512.bin", ckpt.header.vocab_size);
  std::string out = ScratchDir("stories") + "/" + file_name;
  BuildLlama2cGguf(ckpt, vocab, options).Write(out);
  return out;
}

}  // namespace

const std::string& Stories260kGguf() {
  static const std::string path = ConvertStories("stories260K.gguf", {.name = "stories260K", .widen = {}});
  return path;
}

const std::string& WidenedStories260kGguf() {
  static const std::string path = ConvertStories(
      "stories260K-widened.gguf", {.name = "stories260K-widened",
                                   .widen = Llama2cShape{.dim = 256, .hidden_dim = 256, .n_layers = 7,
                                                         .n_heads = 16, .n_kv_heads = 4, .vocab_size = 600}});
  return path;
}

}  // namespace ridge::testing
