// Recipes after llama.cpp's llama_tensor_get_type (src/llama-quant.cpp), for
// dense Llama-style models without an importance matrix.
#include "ridge/gguf/quant_recipe.h"

#include <algorithm>
#include <array>
#include <cctype>

#include "ridge/base/error.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/gguf/quantize_file.h"

namespace ridge {
namespace {

struct MixEntry {
  const char* name;
  QuantMix mix;
  GgmlType base;
  uint32_t file_type;  // llama_ftype: LLAMA_FTYPE_MOSTLY_*
};

constexpr std::array<MixEntry, 8> kMixes{{
    {"Q2_K", QuantMix::kQ2_K, GgmlType::kQ2_K, 10},
    {"Q3_K_M", QuantMix::kQ3_K_M, GgmlType::kQ3_K, 12},
    {"Q4_K_S", QuantMix::kQ4_K_S, GgmlType::kQ4_K, 14},
    {"Q4_K_M", QuantMix::kQ4_K_M, GgmlType::kQ4_K, 15},
    {"Q5_K_S", QuantMix::kQ5_K_S, GgmlType::kQ5_K, 16},
    {"Q5_K_M", QuantMix::kQ5_K_M, GgmlType::kQ5_K, 17},
    {"Q6_K", QuantMix::kQ6_K, GgmlType::kQ6_K, 18},
    {"IQ4_XS", QuantMix::kIQ4_XS, GgmlType::kIQ4_XS, 30},
}};

bool Contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// N of "blk.N.…", or −1.
int64_t LayerOf(const std::string& name) {
  if (name.rfind("blk.", 0) != 0) return -1;
  int64_t layer = 0;
  size_t i = 4;
  if (i >= name.size() || !std::isdigit(static_cast<unsigned char>(name[i]))) return -1;
  for (; i < name.size() && std::isdigit(static_cast<unsigned char>(name[i])); ++i) layer = layer * 10 + (name[i] - '0');
  return layer;
}

// llama.cpp's use_more_bits: the first and last eighth of the layers, and every third one between.
bool UseMoreBits(int64_t layer, int64_t n_layers) {
  return layer < n_layers / 8 || layer >= 7 * n_layers / 8 || (layer - n_layers / 8) % 3 == 2;
}

// The mix's rules, before any fallback for rows that do not fit.
GgmlType MixType(QuantMix mix, GgmlType base, const std::string& name, int64_t row_elems, const RecipeModel& m) {
  const bool is_output = name == "output.weight" || (!m.has_output && name == "token_embd.weight");
  if (is_output) return row_elems % kQK_K != 0 ? GgmlType::kQ8_0 : GgmlType::kQ6_K;
  const int64_t layer = std::max<int64_t>(LayerOf(name), 0);
  const int64_t n_layers = std::max<int64_t>(m.n_layers, 1);
  if (Contains(name, "attn_v.weight")) {
    switch (mix) {
      case QuantMix::kQ2_K: return m.n_gqa >= 4 ? GgmlType::kQ4_K : GgmlType::kQ3_K;
      case QuantMix::kQ3_K_M: return layer < 2 ? GgmlType::kQ5_K : GgmlType::kQ4_K;
      case QuantMix::kIQ4_XS: return m.n_gqa >= 4 ? GgmlType::kQ5_K : base;
      case QuantMix::kQ4_K_M:
      case QuantMix::kQ5_K_M: return UseMoreBits(layer, n_layers) ? GgmlType::kQ6_K : base;
      case QuantMix::kQ4_K_S: return layer < 4 ? GgmlType::kQ5_K : base;
      default: return base;
    }
  }
  if (Contains(name, "ffn_down")) {
    switch (mix) {
      case QuantMix::kQ2_K: return GgmlType::kQ3_K;
      case QuantMix::kQ3_K_M:
        // llama.cpp: Q4_K unless Falcon (whose middle layers stay Q3_K): every layer here.
        return layer < n_layers / 16 ? GgmlType::kQ5_K : GgmlType::kQ4_K;
      case QuantMix::kQ4_K_M:
      case QuantMix::kQ5_K_M: return UseMoreBits(layer, n_layers) ? GgmlType::kQ6_K : base;
      case QuantMix::kIQ4_XS:
      case QuantMix::kQ4_K_S: return layer < n_layers / 8 ? GgmlType::kQ5_K : base;
      default: return base;
    }
  }
  if (Contains(name, "attn_output.weight")) {
    if (mix == QuantMix::kQ2_K) return GgmlType::kQ3_K;
    if (mix == QuantMix::kQ3_K_M) return GgmlType::kQ4_K;
    return base;
  }
  if (Contains(name, "attn_qkv.weight")) {
    if (mix == QuantMix::kQ3_K_M) return GgmlType::kQ4_K;
    if (mix == QuantMix::kQ4_K_M) return GgmlType::kQ5_K;
    if (mix == QuantMix::kQ5_K_M) return GgmlType::kQ6_K;
    return base;
  }
  return base;  // token_embd, attn_q, attn_k, ffn_gate, ffn_up
}

// llama.cpp's substitute for a 256-block type whose rows do not fit.
std::optional<GgmlType> Fallback(GgmlType type) {
  GgmlType llama;
  switch (type) {
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kIQ4_XS: llama = GgmlType::kIQ4_NL; break;
    case GgmlType::kQ4_K: llama = GgmlType::kQ5_0; break;
    case GgmlType::kQ5_K: llama = GgmlType::kQ5_1; break;
    case GgmlType::kQ6_K: llama = GgmlType::kQ8_0; break;
    default: return std::nullopt;
  }
  return CanQuantizeTo(llama) ? llama : GgmlType::kQ8_0;
}

}  // namespace

std::optional<QuantRecipe> ParseQuantRecipe(const std::string& name) {
  std::string upper = name;
  std::transform(upper.begin(), upper.end(), upper.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  for (const MixEntry& e : kMixes)
    if (upper == e.name) return QuantRecipe{upper, e.mix, e.base, e.file_type};
  const std::optional<GgmlType> type = ParseGgmlType(upper);
  if (!type || !CanQuantizeTo(*type)) return std::nullopt;
  return PureRecipe(*type);
}

QuantRecipe PureRecipe(GgmlType type) {
  RIDGE_CHECK(CanQuantizeTo(type));
  return QuantRecipe{GgmlTypeName(type), QuantMix::kPure, type, LlamaFileType(type)};
}

bool RowsFit(GgmlType type, int64_t row_elems) { return row_elems % TraitsOf(type).block_elems == 0; }

std::optional<GgmlType> TypeFor(const QuantRecipe& recipe, const std::string& name, const std::vector<int64_t>& dims,
                                const RecipeModel& model) {
  if (dims.size() < 2) return std::nullopt;
  // Experts' routers stay as they are (llama.cpp never quantizes them: a
  // rounding error there picks other experts).
  if (name.ends_with("ffn_gate_inp.weight")) return std::nullopt;
  const int64_t row_elems = dims[0];
  if (recipe.mix == QuantMix::kPure) return recipe.base;
  const GgmlType type = MixType(recipe.mix, recipe.base, name, row_elems, model);
  if (RowsFit(type, row_elems)) return type;
  const std::optional<GgmlType> fallback = Fallback(type);
  return fallback && RowsFit(*fallback, row_elems) ? *fallback : GgmlType::kF16;
}

}  // namespace ridge
