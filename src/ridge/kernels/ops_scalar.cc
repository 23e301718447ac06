// Scalar reference twins of every kernel in ops.h: plain loops, double-free of
// cleverness, the ground truth for the SIMD versions.
#include <algorithm>
#include <cmath>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/base/half.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/kernels/ops.h"

namespace ridge::kernels::scalar {

void MatMul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool) {
  RIDGE_CHECK(!w.panels);  // the file's rows only (kernels::MatMul unpacks repacked weights)
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

void Rope(float* x, int64_t n_heads, int64_t head_dim, const RopeFrequencies& freqs, int64_t position) {
  RIDGE_CHECK(freqs.n_pairs >= 0 && 2 * freqs.n_pairs <= head_dim);
  // Adjacent pairs (2i, 2i+1), or halves (i, i + n_pairs).
  const bool adjacent = freqs.style == RopeStyle::kAdjacentPairs;
  for (int64_t i = 0; i < freqs.n_pairs; ++i) {
    const float angle = static_cast<float>(position) * freqs.inv_freq[i];
    const float c = std::cos(angle) * freqs.mscale, s = std::sin(angle) * freqs.mscale;
    const int64_t first = adjacent ? 2 * i : i, second = adjacent ? 2 * i + 1 : i + freqs.n_pairs;
    for (int64_t h = 0; h < n_heads; ++h) {
      float* head = x + h * head_dim;
      const float a = head[first], b = head[second];
      head[first] = a * c - b * s;
      head[second] = a * s + b * c;
    }
  }
}

namespace {

// x[i] = exp(x[i] − m) with m = max_i x[i] (n >= 1); returns m, and Σ x[i] in *sum.
float ExpFromMax(float* x, int64_t n, double* sum) {
  float max = x[0];
  for (int64_t i = 1; i < n; ++i) max = std::fmax(max, x[i]);
  *sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    *sum += x[i];
  }
  return max;
}

}  // namespace

void SoftmaxInPlace(float* x, int64_t n) {
  if (n <= 0) return;
  double sum = 0.0;
  ExpFromMax(x, n, &sum);
  float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void SwiGlu(const float* gate, const float* up, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void SwigluOai(const float* gate, const float* up, int64_t n, float alpha, float limit, float* out) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = std::fmin(gate[i], limit), u = std::fmax(std::fmin(up[i], limit), -limit);
    out[i] = g / (1.0f + std::exp(-alpha * g)) * (u + 1.0f);
  }
}

void SoftCap(float* x, int64_t n, float cap) {
  for (int64_t i = 0; i < n; ++i) x[i] = cap * std::tanh(x[i] / cap);
}

void GeGlu(const float* gate, const float* up, int64_t n, float* out) {
  constexpr float kSqrt2OverPi = 0.7978845608f;
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = 0.5f * g * (1.0f + std::tanh(kSqrt2OverPi * (g + 0.044715f * g * g * g))) * up[i];
  }
}

namespace {
// The head_dim elements of the view's position as floats.
void LoadKvHead(const KvHeadView& view, int64_t position, int64_t head_dim, float* out) {
  const int64_t p = view.first_position + position;
  const uint8_t* head = view.blocks[p / view.block_tokens] + (p % view.block_tokens) * view.token_stride_bytes;
  if (view.dim_stride_bytes == 0) return DequantizeRow(view.type, head, out, head_dim);
  for (int64_t c = 0; c < head_dim; ++c) DequantizeRow(view.type, head + c * view.dim_stride_bytes, out + c, 1);
}
}  // namespace

void SoftmaxWithSink(float* x, int64_t n, float sink) {
  if (n <= 0) return;
  float max = sink;
  for (int64_t i = 0; i < n; ++i) max = std::fmax(max, x[i]);
  double sum = std::exp(static_cast<double>(sink - max));  // 0 for a sink of −∞
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

namespace {

// scores[p] = scale · q·k_{first + p} for p < n, soft-capped when softcap > 0.
void Scores(const float* q, int64_t head_dim, const KvHeadView& k, int64_t first, int64_t n, float scale,
            float softcap, float* scores) {
  std::vector<float> row(static_cast<size_t>(head_dim)), q_used(q, q + head_dim);
  if (k.type == GgmlType::kBF16)  // q rounded to BF16 (AttendHead's contract)
    for (float& x : q_used) x = Bf16ToF32(F32ToBf16(x));
  for (int64_t p = 0; p < n; ++p) {
    LoadKvHead(k, first + p, head_dim, row.data());
    double dot = 0.0;
    for (int64_t d = 0; d < head_dim; ++d) dot += static_cast<double>(q_used[d]) * row[d];
    scores[p] = static_cast<float>(dot) * scale;
    if (softcap > 0.0f) scores[p] = softcap * std::tanh(scores[p] / softcap);
  }
}

// out = Σ_{p < n} weights[p] · v_{first + p}.
// With BF16 values each weight is rounded to BF16 first (AttendHead's contract).
void WeightedSum(const float* weights, int64_t n, const KvHeadView& v, int64_t first, int64_t head_dim, float* out) {
  std::vector<float> row(static_cast<size_t>(head_dim));
  for (int64_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
  for (int64_t p = 0; p < n; ++p) {
    LoadKvHead(v, first + p, head_dim, row.data());
    const float w = v.type == GgmlType::kBF16 ? Bf16ToF32(F32ToBf16(weights[p])) : weights[p];
    for (int64_t d = 0; d < head_dim; ++d) out[d] += w * row[d];
  }
}

}  // namespace

void AttendHead(const float* q, int64_t head_dim, const KvHeadView& k, const KvHeadView& v, int64_t n_positions,
                float scale, float softcap, float sink, float* scores, float* out) {
  if (const int64_t n_splits = AttentionSplits(n_positions); n_splits > 1) {
    const int64_t stride = AttentionStateFloats(head_dim);
    std::vector<float> states(static_cast<size_t>(n_splits * stride));
    for (int64_t j = 0; j < n_splits; ++j)
      AttendHeadSplit(q, head_dim, k, v, n_positions, j, scale, softcap, scores, states.data() + j * stride);
    MergeSplitStates(states.data(), n_splits, stride, head_dim, sink, out);
    return;
  }
  Scores(q, head_dim, k, 0, n_positions, scale, softcap, scores);
  SoftmaxWithSink(scores, n_positions, sink);
  WeightedSum(scores, n_positions, v, 0, head_dim, out);
}

void AttendHeadSplit(const float* q, int64_t head_dim, const KvHeadView& k, const KvHeadView& v, int64_t n_positions,
                     int64_t split, float scale, float softcap, float* scores, float* state) {
  const int64_t first = split * kAttentionSplitPositions;
  const int64_t n = std::min(kAttentionSplitPositions, n_positions - first);
  RIDGE_CHECK(n > 0);
  Scores(q, head_dim, k, first, n, scale, softcap, scores);
  double sum = 0.0;
  state[0] = ExpFromMax(scores, n, &sum);
  state[1] = static_cast<float>(sum);
  WeightedSum(scores, n, v, first, head_dim, state + 2);
}

void MergeSplitStates(const float* states, int64_t n_splits, int64_t state_stride, int64_t head_dim, float sink,
                      float* out) {
  float max = sink;
  for (int64_t j = 0; j < n_splits; ++j) max = std::fmax(max, states[j * state_stride]);
  thread_local std::vector<double> scale;  // exp(m_j − M), each taken once
  scale.resize(static_cast<size_t>(n_splits));
  double total = std::exp(static_cast<double>(sink) - max);  // the sink's share (0 without one)
  for (int64_t j = 0; j < n_splits; ++j) {
    const float* state = states + j * state_stride;
    scale[static_cast<size_t>(j)] = std::exp(static_cast<double>(state[0]) - max);
    total += static_cast<double>(state[1]) * scale[static_cast<size_t>(j)];
  }
  for (int64_t d = 0; d < head_dim; ++d) out[d] = 0.0f;
  for (int64_t j = 0; j < n_splits; ++j) {
    const float* state = states + j * state_stride;
    const auto c = static_cast<float>(scale[static_cast<size_t>(j)] / total);
    for (int64_t d = 0; d < head_dim; ++d) out[d] += c * state[2 + d];
  }
}

}  // namespace ridge::kernels::scalar
