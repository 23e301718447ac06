#include "ridge/roofline/cost_model.h"

#include <algorithm>
#include <cmath>

#include "ridge/base/error.h"

namespace ridge {
namespace {

constexpr int64_t kMaxTokens = int64_t{1} << 24;
constexpr int64_t kMaxBatch = int64_t{1} << 20;

void Finish(OpCost& op, const HardwareProfile& hw) {
  op.intensity = op.bytes > 0 ? op.flops / op.bytes : 0;
  const double compute_s = op.flops / (op.attention ? hw.AttentionPeak() : hw.peak_flops);
  const double memory_s = op.bytes / hw.bandwidth_bytes_per_s;
  op.time_s = std::max(compute_s, memory_s);
  op.compute_bound = compute_s >= memory_s;
}

void CheckWorkload(const Workload& w) {
  if (w.phase == Phase::kPrefill) {
    if (w.n_prompt_tokens < 1 || w.n_prompt_tokens > kMaxTokens)
      Fail("prefill prompt length {} is out of range (1..{})", w.n_prompt_tokens, kMaxTokens);
    if (w.depth < 0 || w.depth > kMaxTokens)
      Fail("prefill depth {} is out of range (0..{})", w.depth, kMaxTokens);
  } else {
    if (w.batch < 1 || w.batch > kMaxBatch) Fail("decode batch {} is out of range (1..{})", w.batch, kMaxBatch);
    if (w.context < 1 || w.context > kMaxTokens)
      Fail("decode context {} is out of range (1..{})", w.context, kMaxTokens);
  }
}

}  // namespace

const char* PhaseName(Phase phase) { return phase == Phase::kPrefill ? "prefill" : "decode"; }

PhaseCost AnalyzePhase(const ModelShape& shape, const Workload& w, const HardwareProfile& hw,
                       const CostOptions& options) {
  CheckWorkload(w);
  if (!(hw.peak_flops > 0) || !(hw.bandwidth_bytes_per_s > 0))
    Fail("hardware '{}' needs a positive peak and bandwidth", hw.name);
  const ModelConfig& c = shape.config;
  const auto& bpw = shape.bytes_per_weight;
  const double layers = static_cast<double>(c.n_layers);
  const double d = static_cast<double>(c.n_embd);
  const double ff = static_cast<double>(c.n_ff);
  const double kv_dim = static_cast<double>(c.n_kv_heads * c.head_dim);
  const double vocab = static_cast<double>(c.n_vocab);
  const double act = options.activation_bytes;
  const double kvb = options.kv_bytes_per_element;

  const bool prefill = w.phase == Phase::kPrefill;
  // T: tokens in the step; S: sequences; D: tokens cached before a prefill;
  // keys: cached tokens each sequence reads; pairs: (query, key) dot products per head.
  const double T = static_cast<double>(prefill ? w.n_prompt_tokens : w.batch);
  const double S = prefill ? 1.0 : static_cast<double>(w.batch);
  const double D = prefill ? static_cast<double>(w.depth) : 0.0;
  const double keys = prefill ? D + T : static_cast<double>(w.context);
  const double pairs = prefill ? T * D + T * (T + 1) / 2 : S * keys;
  // Sliding-window layers read at most `window` keys per query: their share of
  // the layers scales the attention terms (kv_frac: keys read, pair_frac: pairs).
  double kv_frac = 1.0, pair_frac = 1.0;
  if (c.sliding_window > 0) {
    const double W = static_cast<double>(c.sliding_window);
    // Σ_{a=1..n} min(a, W): the pairs of queries at positions 0..n-1.
    auto window_sum = [W](double n) { return n <= W ? n * (n + 1) / 2 : W * (W + 1) / 2 + (n - W) * W; };
    // A prefill past its window reads the window before its first query too.
    const double window_keys = prefill && D > 0 ? std::min(keys, W - 1 + T) : std::min(keys, W);
    const double window_pairs = prefill ? window_sum(D + T) - window_sum(D) : S * window_keys;
    const double share = static_cast<double>(c.SlidingLayerCount()) / layers;
    kv_frac = 1.0 - share + share * window_keys / std::max(keys, 1.0);
    pair_frac = 1.0 - share + share * window_pairs / std::max(pairs, 1.0);
  }
  const double q = static_cast<double>(c.q_dim());  // n_heads · head_dim (n_embd in llama)

  PhaseCost p;
  p.workload = w;
  p.tokens = prefill ? w.n_prompt_tokens : w.batch;
  auto add = [&](const char* name, double flops, double weight_bytes, double kv_bytes, double act_bytes,
                 bool attention = false) {
    OpCost op;
    op.name = name;
    op.attention = attention;
    op.flops = flops;
    op.weight_bytes = weight_bytes;
    op.kv_bytes = kv_bytes;
    op.bytes = weight_bytes + kv_bytes + act_bytes;
    Finish(op, hw);
    p.ops.push_back(op);
  };
  // [T, d] × [d, q + 2 kv_dim] → Q [T, q] (activation), K and V [T, kv_dim] appended to the cache.
  add("QKV projections", layers * 2 * T * d * (q + 2 * kv_dim),
      layers * d * (q * bpw.attn_q + kv_dim * bpw.attn_k + kv_dim * bpw.attn_v), layers * T * 2 * kv_dim * kvb,
      layers * (T * d * act + T * q * act));
  // Q [T, n_heads, head_dim] · K [keys, n_kv_heads, head_dim] for every (query, key) pair.
  add("attention scores", layers * 2 * pairs * pair_frac * q, 0, layers * S * keys * kv_frac * kv_dim * kvb,
      layers * T * q * act, true);
  // softmax(scores) [T, n_heads, keys] × V [keys, n_kv_heads, head_dim] → [T, q].
  add("attention x V", layers * 2 * pairs * pair_frac * q, 0, layers * S * keys * kv_frac * kv_dim * kvb,
      layers * T * q * act, true);
  add("output projection", layers * 2 * T * q * d, layers * q * d * bpw.attn_output, 0,
      layers * T * (q + d) * act);
  if (c.is_moe()) {
    // Each token runs its k experts; the step reads the experts any of its T
    // tokens is routed to: E·(1 − (1 − k/E)^T) of them when routing is uniform.
    const double E = static_cast<double>(c.n_expert), k = static_cast<double>(c.n_expert_used);
    const double eff = static_cast<double>(c.n_ff_exp), sff = static_cast<double>(c.n_ff_shexp);
    const double hit = E * (1.0 - std::pow(1.0 - k / E, T));
    add("FFN router", layers * 2 * T * d * E, layers * d * E * 4.0, 0, layers * T * (d + E) * act);
    add("FFN experts", layers * 2 * T * k * 3 * d * eff,
        layers * hit * d * eff * (bpw.ffn_gate + bpw.ffn_up + bpw.ffn_down), 0, layers * T * k * (2 * d + 3 * eff) * act);
    if (sff > 0)
      add("FFN shared expert", layers * 2 * T * 3 * d * sff, layers * d * sff * (bpw.ffn_gate + bpw.ffn_up + bpw.ffn_down),
          0, layers * T * (2 * d + 3 * sff) * act);
  } else {
    // [T, d] × [d, ff] twice (gate and up) → [T, ff] each.
    add("FFN gate/up", layers * 2 * T * d * 2 * ff, layers * d * ff * (bpw.ffn_gate + bpw.ffn_up), 0,
        layers * (T * d + 2 * T * ff) * act);
    // [T, ff] × [ff, d] → [T, d].
    add("FFN down", layers * 2 * T * ff * d, layers * ff * d * bpw.ffn_down, 0, layers * (T * ff + T * d) * act);
  }
  // Logits of one token per sequence: [S, d] × [d, vocab] → [S, vocab] FP32.
  add("LM head", 2 * S * d * vocab, d * vocab * bpw.output, 0, S * d * act + S * vocab * 4.0);

  double attention_flops = 0;
  for (const OpCost& op : p.ops) {
    if (op.attention) attention_flops += op.flops;
    p.flops += op.flops;
    p.bytes += op.bytes;
    p.weight_bytes += op.weight_bytes;
    p.kv_bytes += op.kv_bytes;
    p.time_s += op.time_s;
  }
  p.intensity = p.flops / p.bytes;
  p.compute_s = hw.AttentionPeak() == hw.peak_flops
                    ? p.flops / hw.peak_flops
                    : (p.flops - attention_flops) / hw.peak_flops + attention_flops / hw.AttentionPeak();
  p.memory_s = p.bytes / hw.bandwidth_bytes_per_s;
  p.roofline_time_s = std::max(p.compute_s, p.memory_s);
  p.compute_bound = p.compute_s >= p.memory_s;
  return p;
}

double MatmulIntensity(const PhaseCost& phase) {
  double flops = 0, bytes = 0;
  for (const OpCost& op : phase.ops)
    if (op.weight_bytes > 0) {
      flops += op.flops;
      bytes += op.bytes;
    }
  return bytes > 0 ? flops / bytes : 0;
}

BatchSweep SweepDecodeBatch(const ModelShape& shape, int64_t context, const HardwareProfile& hw,
                            const CostOptions& options, int64_t max_batch) {
  if (max_batch < 1 || max_batch > kMaxBatch) Fail("sweep max batch {} is out of range (1..{})", max_batch, kMaxBatch);
  auto at = [&](int64_t batch) {
    Workload w;
    w.phase = Phase::kDecode;
    w.batch = batch;
    w.context = context;
    return AnalyzePhase(shape, w, hw, options);
  };
  BatchSweep sweep;
  for (int64_t b = 1; b <= max_batch; b *= 2) {
    const PhaseCost p = at(b);
    sweep.points.push_back(
        {b, p.intensity, MatmulIntensity(p), p.time_s, p.TokensPerSecond(), p.flops / p.time_s, p.compute_bound});
  }
  // Intensities rise monotonically with the batch (weights are shared, the
  // rest grows linearly), so each crossing is found by bisection.
  auto first_batch = [&](const std::function<bool(const PhaseCost&)>& crossed) -> std::optional<int64_t> {
    if (!crossed(at(max_batch))) return std::nullopt;
    int64_t lo = 0, hi = max_batch;  // lo: not crossed (or 0), hi: crossed
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      (crossed(at(mid)) ? hi : lo) = mid;
    }
    return hi;
  };
  const double ridge = hw.RidgePoint();
  sweep.crossing_batch = first_batch([](const PhaseCost& p) { return p.compute_bound; });
  sweep.matmul_crossing_batch = first_batch([&](const PhaseCost& p) { return MatmulIntensity(p) >= ridge; });
  const PhaseCost one = at(1), two = at(2);
  sweep.intensity_limit = (two.flops - one.flops) / (two.bytes - one.bytes);
  return sweep;
}

std::vector<QuantRow> CompareWeightTypes(const ModelShape& shape, const std::vector<GgmlType>& types,
                                         const Workload& decode, const Workload& prefill,
                                         const std::function<HardwareProfile(GgmlType)>& hardware_for,
                                         const CostOptions& options) {
  std::vector<QuantRow> rows;
  for (GgmlType type : types) {
    const ModelShape quantized = WithWeightType(shape, type);
    const HardwareProfile hw = hardware_for(type);
    QuantRow row;
    row.type = type;
    row.decode = AnalyzePhase(quantized, decode, hw, options);
    row.prefill = AnalyzePhase(quantized, prefill, hw, options);
    row.weight_bytes = row.decode.weight_bytes;
    if (!rows.empty()) {
      row.decode_speedup = rows.front().decode.time_s / row.decode.time_s;
      row.prefill_speedup = rows.front().prefill.time_s / row.prefill.time_s;
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace ridge
