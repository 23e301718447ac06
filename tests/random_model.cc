#include "random_model.h"

#include <map>
#include <mutex>

#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/model_generator.h"
#include "test_paths.h"

namespace ridge::testing {

const std::string& RandomModelGguf(GgmlType type) {
  static std::mutex mutex;
  static std::map<GgmlType, std::string> paths;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = paths.find(type);
  if (it != paths.end()) return it->second;
  GgufFile vocab = GgufFile::Open(SharedDir() + "/vocab/ggml-vocab-llama-spm.gguf");
  RandomModelOptions options;
  options.shape = {128, 352, 2, 4, 2, 256};
  options.type = type;
  options.seed = 7;
  std::string path = ScratchDir("random") + "/random-" + GgmlTypeName(type) + ".gguf";
  BuildRandomModelGguf(vocab, options, nullptr).Write(path);
  return paths[type] = path;
}

}  // namespace ridge::testing
