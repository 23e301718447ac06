#include "ridge/gguf/quantize_file.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
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

// Layers from the blk.N tensor names; the GQA ratio from the architecture's head counts.
RecipeModel RecipeModelOf(const GgufFile& file) {
  RecipeModel m;
  int64_t max_layer = -1;
  for (const GgufTensorInfo& t : file.tensors()) {
    if (t.name.rfind("blk.", 0) != 0) continue;
    max_layer = std::max<int64_t>(max_layer, std::strtoll(t.name.c_str() + 4, nullptr, 10));
  }
  m.n_layers = std::max<int64_t>(max_layer + 1, 1);
  m.has_output = file.FindTensor("output.weight") != nullptr;
  if (const std::optional<std::string> arch = file.GetString("general.architecture")) {
    const std::optional<int64_t> heads = file.GetInt(*arch + ".attention.head_count");
    const std::optional<int64_t> kv_heads = file.GetInt(*arch + ".attention.head_count_kv");
    if (heads && kv_heads && *kv_heads > 0) m.n_gqa = *heads / *kv_heads;
  }
  return m;
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
    case GgmlType::kQ2_K: return 10;
    case GgmlType::kQ3_K: return 11;  // MOSTLY_Q3_K_S
    case GgmlType::kQ4_K: return 14;  // MOSTLY_Q4_K_S
    case GgmlType::kQ5_K: return 16;  // MOSTLY_Q5_K_S
    case GgmlType::kQ6_K: return 18;
    case GgmlType::kIQ4_NL: return 25;
    case GgmlType::kIQ4_XS: return 30;
    case GgmlType::kBF16: return 32;
    case GgmlType::kMXFP4: return 38;  // MOSTLY_MXFP4_MOE
    default: CheckFailed("LlamaFileType: a type ridge writes", __FILE__, __LINE__);
  }
}

QuantizeSummary QuantizeGgufFile(const std::string& in_path, const std::string& out_path, GgmlType type,
                                 ThreadPool* pool, const QuantizeProgress& progress) {
  if (!CanQuantizeTo(type))
    Fail("quantize: ridge cannot write {}; choose {} (or a mix such as Q4_K_M)", GgmlTypeName(type),
         QuantizableTypeNames());
  return QuantizeGgufFile(in_path, out_path, PureRecipe(type), pool, progress);
}

QuantizeSummary QuantizeGgufFile(const std::string& in_path, const std::string& out_path, const QuantRecipe& recipe,
                                 ThreadPool* pool, const QuantizeProgress& progress) {
  // Shared by the producers, which run inside writer.Write() below.
  auto in = std::make_shared<GgufFile>(GgufFile::Open(in_path));
  const RecipeModel model = RecipeModelOf(*in);

  GgufWriter writer;
  for (const auto& [key, value] : in->metadata()) writer.Set(key, value);
  writer.SetU32("general.file_type", recipe.file_type);

  QuantizeSummary summary;
  bool any_blocks = false;
  for (size_t index = 0; index < in->tensors().size(); ++index) {
    const GgufTensorInfo& t = in->tensors()[index];
    ++summary.n_tensors;
    summary.in_tensor_bytes += static_cast<uint64_t>(t.n_bytes);
    const std::optional<GgmlType> wanted = TypeFor(recipe, t.name, t.dims, model);
    if (!wanted || *wanted == t.type) {  // norms and tensors already of the type: the bytes as they are
      ++summary.n_copied;
      summary.out_tensor_bytes += static_cast<uint64_t>(t.n_bytes);
      writer.AddTensor(t.name, t.type, t.dims, [in, index](uint8_t* out, int64_t n_bytes) {
        std::memcpy(out, in->tensors()[index].data, static_cast<size_t>(n_bytes));
      });
      continue;
    }
    const GgmlType type = *wanted;
    if (!IsFloatSource(t.type))
      Fail("quantize: {}: tensor '{}' is {}; ridge quantize reads F32, F16 or BF16 weights only", in_path, t.name,
           GgmlTypeName(t.type));
    const int64_t n_in = t.dims[0];  // [n_rows, n_in]
    if (!RowsFit(type, n_in))
      Fail("quantize: {}: tensor '{}' has rows of {} elements, not a multiple of the {} block size {}", in_path,
           t.name, n_in, GgmlTypeName(type), TraitsOf(type).block_elems);
    if (type != recipe.base && recipe.mix != QuantMix::kPure && !RowsFit(recipe.base, n_in)) ++summary.n_fallback;
    any_blocks = any_blocks || TraitsOf(type).block_elems > 1;
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
  if (any_blocks) writer.SetU32("general.quantization_version", kGgmlQuantizationVersion);
  writer.Write(out_path, progress);
  return summary;
}

}  // namespace ridge
