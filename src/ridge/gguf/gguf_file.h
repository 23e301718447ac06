#pragma once
// GGUF v3 reader. Memory-maps the file (or copies it into huge-page memory,
// see MappedFile) and validates every length, count,
// offset and size against the file before using it; bad input throws
// ridge::Error naming the file, the field and the byte offset. Tensor data is
// not copied: TensorInfo::data points into the mapping.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ridge/base/mapped_file.h"
#include "ridge/gguf/ggml_type.h"
#include "ridge/gguf/gguf_value.h"

namespace ridge {

constexpr int kGgufMaxDims = 4;

struct GgufTensorInfo {
  std::string name;
  GgmlType type = GgmlType::kF32;
  // dims[0] is the fastest-varying (contiguous) dimension, as in ggml:
  // a weight matrix [n_out rows, n_in columns] has dims = {n_in, n_out}.
  std::vector<int64_t> dims;
  uint64_t offset = 0;        // relative to the data section
  int64_t n_elements = 0;
  int64_t n_bytes = 0;
  const uint8_t* data = nullptr;  // into the file's memory
};

class GgufFile {
 public:
  static GgufFile Open(const std::string& path, FileBacking backing = FileBacking::kMapped);

  const std::string& path() const { return file_.path(); }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  uint64_t file_bytes() const { return file_.size_bytes(); }
  const MappedFile& memory() const { return file_; }
  MappedFile& memory() { return file_; }

  // Keys in file order.
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }
  const GgufValue* Find(const std::string& key) const;
  // Typed look-ups: nullopt when absent; ridge::Error when present with the wrong kind.
  std::optional<int64_t> GetInt(const std::string& key) const;
  std::optional<double> GetFloat(const std::string& key) const;
  std::optional<bool> GetBool(const std::string& key) const;
  std::optional<std::string> GetString(const std::string& key) const;
  // ridge::Error when absent or of the wrong kind.
  int64_t RequireInt(const std::string& key) const;
  std::string RequireString(const std::string& key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* FindTensor(const std::string& name) const;

 private:
  MappedFile file_;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::map<std::string, size_t> metadata_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
  friend class GgufParser;
};

}  // namespace ridge
