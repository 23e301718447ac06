#pragma once
// GGUF v3 writer: metadata in insertion order, tensor infos, then tensor data,
// each tensor aligned to general.alignment (32 unless set) with zero padding.
// Tensor bytes are streamed to disk when Write() runs, so gigabyte models are
// never held in memory: each tensor is given as a producer that fills its bytes.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ridge/gguf/ggml_type.h"
#include "ridge/gguf/gguf_value.h"

namespace ridge {

class GgufWriter {
 public:
  // Fills `out` (exactly RowBytes(type, dims[0]) * rows bytes) for one tensor.
  using TensorProducer = std::function<void(uint8_t* out, int64_t n_bytes)>;
  // Called after each tensor is written: (bytes written so far, total bytes).
  using Progress = std::function<void(uint64_t done_bytes, uint64_t total_bytes)>;

  void Set(const std::string& key, GgufValue value);  // replaces an existing key in place
  void SetString(const std::string& key, const std::string& v);
  void SetU32(const std::string& key, uint32_t v);
  void SetI32(const std::string& key, int32_t v);
  void SetF32(const std::string& key, float v);
  void SetBool(const std::string& key, bool v);

  // dims as in GgufTensorInfo (dims[0] fastest). Throws on duplicate names.
  void AddTensor(const std::string& name, GgmlType type, std::vector<int64_t> dims, TensorProducer producer);
  // Convenience: the bytes are copied now.
  void AddTensorBytes(const std::string& name, GgmlType type, std::vector<int64_t> dims, std::vector<uint8_t> bytes);

  // Writes the whole file; throws ridge::Error on I/O failure.
  void Write(const std::string& path, const Progress& progress = nullptr) const;

 private:
  struct PendingTensor {
    std::string name;
    GgmlType type;
    std::vector<int64_t> dims;
    TensorProducer producer;
  };
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace ridge
