#include "random_model.h"

#include <map>
#include <mutex>

#include "ridge/gguf/gguf_file.h"
#include "test_paths.h"

namespace ridge::testing {

const std::string& RandomModelGguf(GgmlType type) {
  static std::mutex mutex;
  static std::map<GgmlType, std::string> paths;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = paths.find(type);
  if (it != paths.end()) return it->second;
  RandomModelOptions options;
  options.shape = {128, 352, 2, 4, 2, 256};
  options.type = type;
  options.seed = 7;
  return paths[type] = WriteRandomModelGguf(options, "random", "random-" + std::string(GgmlTypeName(type)) + ".gguf");
}

GgufWriter BuildRandomLlamaVocabModel(const RandomModelOptions& options) {
  const GgufFile vocab = GgufFile::Open(SharedDir() + "/vocab/ggml-vocab-llama-spm.gguf");
  return BuildRandomModelGguf(vocab, options, nullptr);
}

std::string WriteRandomModelGguf(const RandomModelOptions& options, const std::string& scratch_name,
                                 const std::string& file_name) {
  const std::string path = ScratchDir(scratch_name) + "/" + file_name;
  BuildRandomLlamaVocabModel(options).Write(path);
  return path;
}

}  // namespace ridge::testing
