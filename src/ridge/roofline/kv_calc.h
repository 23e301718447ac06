#pragma once
// The KV-cache calculator: bytes per token, per request at a context length,
// for a batch, and how many requests fit in a memory budget; and the same
// model with multi-head, grouped-query and multi-query attention side by side.
// The formula itself is KvBytesPerToken (ridge/kv/kv_formula.h).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ridge/gguf/ggml_type.h"

namespace ridge {

struct KvShape {
  int64_t n_layers = 0;
  int64_t n_heads = 0;     // query heads (0 when unknown: no variants)
  int64_t n_kv_heads = 0;
  int64_t head_dim = 0;
};

// Bytes per cached element: F32 4, F16/BF16 2, Q8_0 34/32. Throws
// ridge::Error for a type ridge does not store KV in.
double KvElementBytes(GgmlType type);

struct KvSizing {
  double bytes_per_token = 0;
  double bytes_per_request = 0;  // × context tokens
  double bytes_for_batch = 0;    // × batch requests
  // Requests of `context` tokens that fit in the budget (nullopt: no budget).
  std::optional<int64_t> max_requests;
  // Tokens that fit in the budget, however they are shared between requests.
  std::optional<int64_t> max_tokens;
};

// Throws ridge::Error for sizes < 1 (context, batch, shape) or a negative budget.
KvSizing SizeKv(const KvShape& shape, double bytes_per_element, int64_t context, int64_t batch,
                std::optional<double> budget_bytes = std::nullopt);

struct KvVariant {
  std::string label;     // "MHA", "GQA-8", "MQA"
  int64_t n_kv_heads = 0;
  bool is_model = false;  // the model's own layout
  KvSizing sizing;
};

// MHA (KV heads = query heads), the model's own GQA if it has one, GQA with
// 8 KV heads when that divides the query heads and differs from both, and MQA
// (one KV head). Needs shape.n_heads.
std::vector<KvVariant> AttentionVariants(const KvShape& shape, double bytes_per_element, int64_t context,
                                         int64_t batch, std::optional<double> budget_bytes = std::nullopt);

}  // namespace ridge
