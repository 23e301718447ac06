// Scalar reference twins of every kernel in ops.h: plain loops, double-free of
// cleverness, the ground truth for the SIMD versions.
#include <cmath>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/kernels/ops.h"

namespace ridge::kernels::scalar {

void MatMul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  pool.ParallelFor(w.n_rows, [&](int64_t r, int) {
    thread_local std::vector<float> row;
    row.resize(static_cast<size_t>(w.n_cols));
    DequantizeRow(w.type, w.data + r * w.row_bytes, row.data(), w.n_cols);
    for (int64_t t = 0; t < n_tokens; ++t) {
      const float* xt = x + t * w.n_cols;
      double sum = 0.0;
      for (int64_t c = 0; c < w.n_cols; ++c) sum += static_cast<double>(row[c]) * xt[c];
      y[t * w.n_rows + r] = static_cast<float>(sum);
    }
  });
}

void RmsNorm(const float* x, const float* weight, int64_t n, float eps, float* out) {
  double sum_sq = 0.0;
  for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(x[i]) * x[i];
  float inv = 1.0f / std::sqrt(static_cast<float>(sum_sq / static_cast<double>(n)) + eps);
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv * weight[i];
}

void Rope(float* x, int64_t n_heads, int64_t head_dim, int64_t rope_dim, int64_t position, float freq_base) {
  for (int64_t i = 0; i < rope_dim; i += 2) {
    float freq = std::pow(freq_base, -static_cast<float>(i) / static_cast<float>(rope_dim));
    float angle = static_cast<float>(position) * freq;
    float c = std::cos(angle), s = std::sin(angle);
    for (int64_t h = 0; h < n_heads; ++h) {
      float* pair = x + h * head_dim + i;
      float a = pair[0], b = pair[1];
      pair[0] = a * c - b * s;
      pair[1] = a * s + b * c;
    }
  }
}

void SoftmaxInPlace(float* x, int64_t n) {
  if (n <= 0) return;
  float max = x[0];
  for (int64_t i = 1; i < n; ++i) max = std::fmax(max, x[i]);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void SwiGlu(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

namespace {
const uint8_t* KvAt(const KvHeadView& view, int64_t position) {
  return view.blocks[position / view.block_tokens] + (position % view.block_tokens) * view.token_stride_bytes +
         view.head_offset_bytes;
}
}  // namespace

void AttendHead(const float* q, int64_t head_dim, const KvHeadView& k, const KvHeadView& v, int64_t n_positions,
                float scale, float* scores, float* out) {
  std::vector<float> row(static_cast<size_t>(head_dim));
  for (int64_t p = 0; p < n_positions; ++p) {
    DequantizeRow(k.type, KvAt(k, p), row.data(), head_dim);
    double dot = 0.0;
    for (int64_t d = 0; d < head_dim; ++d) dot += static_cast<double>(q[d]) * row[d];
    scores[p] = static_cast<float>(dot) * scale;
  }
  SoftmaxInPlace(scores, n_positions);
  for (int64_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
  for (int64_t p = 0; p < n_positions; ++p) {
    DequantizeRow(v.type, KvAt(v, p), row.data(), head_dim);
    for (int64_t d = 0; d < head_dim; ++d) out[d] += scores[p] * row[d];
  }
}

}  // namespace ridge::kernels::scalar
