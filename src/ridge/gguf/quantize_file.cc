#include "ridge/gguf/quantize_file.h"

#include <cstring>
#include <memory>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/base/thread_pool.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/gguf_writer.h"
#include "ridge/gguf/row_chunks.h"

namespace ridge {
namespace {

bool IsFloatSource(GgmlType type) {
  return type == GgmlType::kF32 || type == GgmlType::kF16 || type == GgmlType::kBF16;
}

}  // namespace

uint32_t LlamaFileType(GgmlType type) {
  switch (type) {
    case GgmlType::kF32: return 0;
    case GgmlType::kF16: return 1;
    case GgmlType::kQ4_0: return 2;
    case GgmlType::kQ4_1: return 3;
    case GgmlType::kQ8_0: return 7;
    case GgmlType::kQ5_0: return 8;
    case GgmlType::kQ5_1: return 9;
    case GgmlType::kIQ4_NL: return 25;
    case GgmlType::kBF16: return 32;
    default: CheckFailed("LlamaFileType: a type ridge writes", __FILE__, __LINE__);
  }
}

QuantizeSummary QuantizeGgufFile(const std::string& in_path, const std::string& out_path, GgmlType type,
                                 ThreadPool* pool, const QuantizeProgress& progress) {
  if (!CanQuantizeTo(type))
    Fail("quantize: ridge cannot write {}; choose {}", GgmlTypeName(type), QuantizableTypeNames());
  // Shared by the producers, which run inside writer.Write() below.
  auto in = std::make_shared<GgufFile>(GgufFile::Open(in_path));

  GgufWriter writer;
  for (const auto& [key, value] : in->metadata()) writer.Set(key, value);
  writer.SetU32("general.file_type", LlamaFileType(type));
  if (TraitsOf(type).block_elems > 1) writer.SetU32("general.quantization_version", kGgmlQuantizationVersion);

  QuantizeSummary summary;
  const int64_t block = TraitsOf(type).block_elems;
  for (size_t index = 0; index < in->tensors().size(); ++index) {
    const GgufTensorInfo& t = in->tensors()[index];
    ++summary.n_tensors;
    summary.in_tensor_bytes += static_cast<uint64_t>(t.n_bytes);
    const bool convert = t.dims.size() >= 2 && t.type != type;
    if (!convert) {  // norms and tensors already of the type: the bytes as they are
      ++summary.n_copied;
      summary.out_tensor_bytes += static_cast<uint64_t>(t.n_bytes);
      writer.AddTensor(t.name, t.type, t.dims, [in, index](uint8_t* out, int64_t n_bytes) {
        std::memcpy(out, in->tensors()[index].data, static_cast<size_t>(n_bytes));
      });
      continue;
    }
    if (!IsFloatSource(t.type))
      Fail("quantize: {}: tensor '{}' is {}; ridge quantize reads F32, F16 or BF16 weights only", in_path, t.name,
           GgmlTypeName(t.type));
    const int64_t n_in = t.dims[0];  // [n_rows, n_in]
    if (n_in % block != 0)
      Fail("quantize: {}: tensor '{}' has rows of {} elements, not a multiple of the {} block size {}", in_path,
           t.name, n_in, GgmlTypeName(type), block);
    const int64_t n_rows = t.n_elements / n_in;
    const int64_t in_row_bytes = RowBytes(t.type, n_in);
    const int64_t out_row_bytes = RowBytes(type, n_in);
    ++summary.n_converted;
    summary.out_tensor_bytes += static_cast<uint64_t>(out_row_bytes * n_rows);
    // The producers hold `in`, so the mapping lives until the writer is done.
    writer.AddTensor(t.name, type, t.dims, [in, index, type, n_in, n_rows, in_row_bytes, out_row_bytes,
                                            pool](uint8_t* out, int64_t n_bytes) {
      RIDGE_CHECK(n_bytes == out_row_bytes * n_rows);
      const GgmlType src_type = in->tensors()[index].type;
      const uint8_t* src = in->tensors()[index].data;
      std::vector<std::vector<float>> scratch(static_cast<size_t>(RowChunkThreads(pool)));
      ForEachRowChunk(pool, n_rows, n_in, [&](int64_t begin, int64_t end, int thread) {
        std::vector<float>& row = scratch[static_cast<size_t>(thread)];
        row.resize(static_cast<size_t>(n_in));
        for (int64_t r = begin; r < end; ++r) {
          DequantizeRow(src_type, src + r * in_row_bytes, row.data(), n_in);
          QuantizeRow(type, row.data(), out + r * out_row_bytes, n_in);
        }
      });
    });
  }
  writer.Write(out_path, progress);
  return summary;
}

}  // namespace ridge
