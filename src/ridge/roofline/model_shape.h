#pragma once
// What the roofline needs to know about a model: its shape and how many bytes
// each weight matrix takes per weight (its storage type).
#include <string>

#include "ridge/gguf/ggml_type.h"
#include "ridge/model/model_config.h"
#include "ridge/roofline/model_presets.h"

namespace ridge {

class GgufFile;

// Bytes per weight of a type: block bytes / block elements (F16 2, Q8_0
// 34/32, Q4_0 18/32, Q4_K 144/256, ...).
double BytesPerWeight(GgmlType type);

struct ModelShape {
  std::string name;
  ModelConfig config;
  bool tied_embeddings = false;
  // Bytes per weight of each matrix kind; a file that mixes types across
  // layers gets the average (total bytes / total weights) of that kind.
  struct {
    double attn_q = 2, attn_k = 2, attn_v = 2, attn_output = 2;
    double ffn_gate = 2, ffn_up = 2, ffn_down = 2;
    double output = 2;  // the LM head (token_embd when tied)
  } bytes_per_weight;
  std::string weight_types;  // for display: "F16", or "Q4_K + Q6_K (12%), LM head Q6_K"
  GgmlType main_weight_type = GgmlType::kF16;  // the type of most of the layers' weights
  double total_weight_bytes = 0;  // every tensor of the model (embeddings and norms too)
};

// Every matrix of `weight_type`; norms F32; token_embd of the same type.
ModelShape ShapeFromPreset(const ModelPreset& preset, GgmlType weight_type);
// The shape from the metadata and the byte sizes of the actual tensors.
// Throws ridge::Error naming a missing or misshapen tensor.
ModelShape ShapeFromGguf(const GgufFile& file);
// The same model with every matrix stored as `weight_type` (weight-only
// quantization), norms F32.
ModelShape WithWeightType(const ModelShape& shape, GgmlType weight_type);

}  // namespace ridge
