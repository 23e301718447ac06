#pragma once
// The reference model's KV-cache formula (../shared/docs/inference-basics.md §2).
#include <cstdint>

namespace ridge {

// per_token_bytes = 2 (K and V) × layers × KV heads × head dim × bytes per element.
inline double KvBytesPerToken(int64_t n_layers, int64_t n_kv_heads, int64_t head_dim, double bytes_per_element) {
  return 2.0 * static_cast<double>(n_layers) * static_cast<double>(n_kv_heads) * static_cast<double>(head_dim) *
         bytes_per_element;
}

}  // namespace ridge
