#include "ridge/roofline/kv_calc.h"

#include <cmath>

#include <fmt/format.h>

#include "ridge/base/error.h"
#include "ridge/kv/kv_formula.h"

namespace ridge {

double KvElementBytes(GgmlType type) {
  switch (type) {
    case GgmlType::kF32: return 4.0;
    case GgmlType::kF16:
    case GgmlType::kBF16: return 2.0;
    case GgmlType::kQ8_0: return 34.0 / 32.0;
    default: break;
  }
  Fail("KV cache type {} is not supported (F32, F16, BF16 or Q8_0)", GgmlTypeName(type));
}

KvSizing SizeKv(const KvShape& shape, double bytes_per_element, int64_t context, int64_t batch,
                std::optional<double> budget_bytes) {
  if (shape.n_layers < 1 || shape.n_kv_heads < 1 || shape.head_dim < 1)
    Fail("KV shape needs layers, KV heads and head dim >= 1 (got {}, {}, {})", shape.n_layers, shape.n_kv_heads,
         shape.head_dim);
  if (context < 1) Fail("context length {} must be >= 1", context);
  if (batch < 1) Fail("batch {} must be >= 1", batch);
  if (!(bytes_per_element > 0)) Fail("bytes per KV element must be > 0");
  if (budget_bytes && !(*budget_bytes >= 0)) Fail("memory budget must be >= 0 bytes");
  KvSizing s;
  s.bytes_per_token = KvBytesPerToken(shape.n_layers, shape.n_kv_heads, shape.head_dim, bytes_per_element);
  s.bytes_per_request = s.bytes_per_token * static_cast<double>(context);
  s.bytes_for_batch = s.bytes_per_request * static_cast<double>(batch);
  if (budget_bytes) {
    s.max_requests = static_cast<int64_t>(std::floor(*budget_bytes / s.bytes_per_request));
    s.max_tokens = static_cast<int64_t>(std::floor(*budget_bytes / s.bytes_per_token));
  }
  return s;
}

std::vector<KvVariant> AttentionVariants(const KvShape& shape, double bytes_per_element, int64_t context,
                                         int64_t batch, std::optional<double> budget_bytes) {
  if (shape.n_heads < 1) Fail("attention variants need the number of query heads");
  if (shape.n_kv_heads > shape.n_heads || shape.n_heads % shape.n_kv_heads != 0)
    Fail("{} KV heads do not divide {} query heads", shape.n_kv_heads, shape.n_heads);
  std::vector<KvVariant> out;
  auto add = [&](std::string label, int64_t kv_heads) {
    KvShape s = shape;
    s.n_kv_heads = kv_heads;
    out.push_back({std::move(label), kv_heads, kv_heads == shape.n_kv_heads, SizeKv(s, bytes_per_element, context,
                                                                                    batch, budget_bytes)});
  };
  add("MHA", shape.n_heads);
  if (shape.n_kv_heads != shape.n_heads && shape.n_kv_heads != 1)
    add(fmt::format("GQA-{}", shape.n_kv_heads), shape.n_kv_heads);
  else if (shape.n_heads % 8 == 0 && shape.n_heads > 8)
    add("GQA-8", 8);
  if (shape.n_heads > 1) add("MQA", 1);
  return out;
}

}  // namespace ridge
