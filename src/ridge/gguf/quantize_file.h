#pragma once
// `ridge quantize`: rewrites a GGUF with its weight matrices in another type.
//
// Every tensor with two or more dimensions is converted to the type its
// recipe gives it (quant_recipe.h: one type for all, or a llama.cpp mix such
// as Q4_K_M) from an F32, F16 or BF16 source, by the reference quantizers of
// dequantize.h; 1-D tensors (norms) are copied unchanged, as llama.cpp's
// quantize does. All metadata is copied in order; general.file_type is set to
// the recipe's llama.cpp number and general.quantization_version to 2 when
// any tensor is block-quantized.
#include <cstdint>
#include <functional>
#include <string>

#include "ridge/gguf/ggml_type.h"
#include "ridge/gguf/quant_recipe.h"

namespace ridge {

class ThreadPool;

// llama.cpp's llama_ftype numbering of a file whose weights are all `type`
// (ALL_F32 = 0, MOSTLY_F16 = 1, MOSTLY_Q4_0 = 2, MOSTLY_Q4_1 = 3, MOSTLY_Q8_0 = 7,
// MOSTLY_Q5_0 = 8, MOSTLY_Q5_1 = 9, MOSTLY_Q4_K_S = 14 for Q4_K, ...,
// MOSTLY_IQ4_NL = 25, MOSTLY_IQ4_XS = 30, MOSTLY_BF16 = 32,
// MOSTLY_MXFP4_MOE = 38). RIDGE_CHECKs that llama.cpp has one.
uint32_t LlamaFileType(GgmlType type);

// ggml's GGML_QNT_VERSION, written as general.quantization_version.
inline constexpr uint32_t kGgmlQuantizationVersion = 2;

struct QuantizeSummary {
  int64_t n_tensors = 0;
  int64_t n_converted = 0;   // tensors written in a new type
  int64_t n_fallback = 0;    // of those, tensors whose rows did not fit the recipe's K-quant
  int64_t n_copied = 0;      // tensors copied unchanged (1-D, or already of the type)
  uint64_t in_tensor_bytes = 0;
  uint64_t out_tensor_bytes = 0;
};

using QuantizeProgress = std::function<void(uint64_t done_bytes, uint64_t total_bytes)>;

// Throws ridge::Error, before writing anything, when a tensor to convert has
// a source type other than F32/F16/BF16 (naming the tensor and its type), or
// its rows are not a multiple of its type's block (with no fallback). The
// model's layers are counted from its blk.N tensor names, its GQA ratio read
// from {arch}.attention.head_count(_kv). The conversion runs on `pool` when
// given.
QuantizeSummary QuantizeGgufFile(const std::string& in_path, const std::string& out_path, const QuantRecipe& recipe,
                                 ThreadPool* pool = nullptr, const QuantizeProgress& progress = nullptr);
// The pure recipe of `type`; throws ridge::Error when ridge cannot write it.
QuantizeSummary QuantizeGgufFile(const std::string& in_path, const std::string& out_path, GgmlType type,
                                 ThreadPool* pool = nullptr, const QuantizeProgress& progress = nullptr);

}  // namespace ridge
