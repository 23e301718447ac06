#pragma once
// Quantization recipes: which type each tensor of a model gets.
//
// A single type name ("Q8_0", "Q4_0", "Q4_K", ...) is a pure recipe: every
// weight matrix in that type (llama.cpp's `--pure`). The llama.cpp file types
// Q2_K, Q3_K_M, Q4_K_S, Q4_K_M, Q5_K_S, Q5_K_M, Q6_K and IQ4_XS are mixes
// that follow llama.cpp's llama_tensor_get_type for Llama-style models:
//   * output.weight (or token_embd.weight when the model ties its output to
//     it) Q6_K, or Q8_0 when its rows are not a multiple of 256;
//   * attn_v / ffn_down / attn_output / attn_qkv more bits in some layers,
//     e.g. Q4_K_M: attn_v and ffn_down Q6_K in the "use more bits" layers
//     (the first and last eighth, and every third layer between), the rest
//     Q4_K;
//   * a K-quant whose rows are not a multiple of 256 falls back as llama.cpp
//     does: Q2_K, Q3_K, IQ4_XS -> IQ4_NL, Q4_K -> Q5_0, Q5_K -> Q5_1,
//     Q6_K -> Q8_0; to Q8_0 where ridge cannot write that type yet, and to
//     F16 where the fallback's block does not fit either.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ridge/gguf/ggml_type.h"

namespace ridge {

enum class QuantMix {
  kPure,  // every matrix `base`
  kQ2_K,
  kQ3_K_M,
  kQ4_K_S,
  kQ4_K_M,
  kQ5_K_S,
  kQ5_K_M,
  kQ6_K,
  kIQ4_XS,
};

struct QuantRecipe {
  std::string name;  // as parsed, upper case: "Q4_K_M", "Q8_0", ...
  QuantMix mix;
  GgmlType base;       // the type of the tensors no rule picks out
  uint32_t file_type;  // llama.cpp's llama_ftype, for general.file_type
};

// Case-insensitive; nullopt when the name is neither a mix nor a type ridge
// can write.
std::optional<QuantRecipe> ParseQuantRecipe(const std::string& name);
// The pure recipe of a type ridge can write (RIDGE_CHECKs that it can).
QuantRecipe PureRecipe(GgmlType type);

// What a recipe needs to know of the model besides one tensor.
struct RecipeModel {
  int64_t n_layers = 1;
  int64_t n_gqa = 1;        // query heads per KV head
  bool has_output = true;   // false: token_embd.weight doubles as the output matrix
};

// The type for tensor `name` of dims (GGUF order: dims[0] is the row length),
// or nullopt for tensors kept as they are (fewer than two dims: norms; the
// experts' routers ffn_gate_inp).
// llama.cpp tensor names: token_embd.weight, output.weight,
// blk.N.{attn_q, attn_k, attn_v, attn_output, attn_qkv, ffn_gate, ffn_up,
// ffn_down}.weight. The result may still not fit the rows (a pure recipe's
// type, or a fallback without one); RowsFit tells.
std::optional<GgmlType> TypeFor(const QuantRecipe& recipe, const std::string& name, const std::vector<int64_t>& dims,
                                const RecipeModel& model);

// Whether rows of row_elems elements are whole blocks of `type`.
bool RowsFit(GgmlType type, int64_t row_elems);

}  // namespace ridge
