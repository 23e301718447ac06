// ridge inspect FILE.gguf: metadata, tensors, parameter count, bytes per type,
// and the model's KV-cache accounting (inference-basics.md §2).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <map>
#include <string>

#include "ridge/base/error.h"
#include "ridge/command.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/tensor_names.h"
#include "ridge/model/model_config.h"

namespace ridge::app {
namespace {

constexpr size_t kMaxStringChars = 80;
constexpr size_t kArrayPreview = 3;   // elements shown of a long array
constexpr size_t kShortArray = 8;     // arrays up to this long are shown whole

std::string Quote(const std::string& s) {
  std::string out = "\"";
  size_t shown = 0;
  for (char c : s) {
    if (shown++ == kMaxStringChars) {
      out += fmt::format("…\" ({} bytes)", s.size());
      return out;
    }
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') out += std::string("\\") + c;
    else if (c == '\n') out += "\\n";
    else if (u < 0x20 || u == 0x7f) out += fmt::format("\\x{:02x}", u);
    else out += c;
  }
  return out + "\"";
}

std::string Scalar(const GgufValue& v) {
  if (const auto* s = v.AsString()) return Quote(*s);
  if (auto b = v.AsBool()) return *b ? "true" : "false";
  if (v.type == GgufValueType::kFloat32 || v.type == GgufValueType::kFloat64) return fmt::format("{:g}", *v.AsFloat());
  if (std::holds_alternative<uint64_t>(v.data)) return std::to_string(std::get<uint64_t>(v.data));
  if (std::holds_alternative<int64_t>(v.data)) return std::to_string(std::get<int64_t>(v.data));
  return "?";
}

std::string Describe(const GgufValue& v) {
  const auto* elems = v.AsArray();
  if (!elems) return Scalar(v);
  std::string out;
  const bool long_array = elems->size() > kShortArray;
  const std::string elem_name = v.array_elem_type == GgufValueType::kString ? "strings"
                                                                            : GgufValueTypeName(v.array_elem_type);
  out = long_array ? fmt::format("[{} {}: ", elems->size(), elem_name) : "[";
  const size_t n = long_array ? kArrayPreview : elems->size();
  for (size_t i = 0; i < n; ++i) out += (i ? ", " : "") + Describe((*elems)[i]);
  if (long_array) out += ", …";
  return out + "]";
}

std::string Shape(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? " × " : "") + std::to_string(dims[i]);
  return s;
}

// Pads to `width` characters on screen (UTF-8 continuation bytes take no column).
std::string PadRight(const std::string& s, size_t width) {
  size_t cols = 0;
  for (char c : s) cols += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return cols >= width ? s : s + std::string(width - cols, ' ');
}

std::string HumanBytes(double b) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} bytes", b) : fmt::format("{:.2f} {}", b, units[u]);
}

std::string HumanCount(double n) {
  if (n >= 1e9) return fmt::format("{:.2f}B", n / 1e9);
  if (n >= 1e6) return fmt::format("{:.2f}M", n / 1e6);
  if (n >= 1e3) return fmt::format("{:.1f}K", n / 1e3);
  return fmt::format("{:.0f}", n);
}

const char* RopeScalingName(RopeScalingType t) {
  switch (t) {
    case RopeScalingType::kNone: return "none";
    case RopeScalingType::kLinear: return "linear";
    case RopeScalingType::kYarn: return "yarn";
    case RopeScalingType::kLongRope: return "longrope";
  }
  return "?";
}

// The variant of each step of the block this file runs with, one per line.
void PrintVariant(const GgufFile& f, const ModelConfig& c) {
  const ArchitectureSpec& a = c.arch();
  auto has = [&](TensorRole role) { return f.FindTensor(TensorName(role, role == TensorRole::kAttnQBias ? 0 : -1)); };
  std::printf("  RoPE: %s pairs, base %g, %lld of %lld dims",
              a.rope_style == RopeStyle::kHalves ? "halves (neox)" : "adjacent (normal)", c.rope_freq_base,
              static_cast<long long>(c.rope_dim), static_cast<long long>(c.head_dim));
  if (c.rope_scaling.type != RopeScalingType::kNone)
    std::printf(", scaling %s factor %g over original context %lld, attention factor %g",
                RopeScalingName(c.rope_scaling.type), c.rope_scaling.factor,
                static_cast<long long>(c.rope_scaling.original_context), c.rope_scaling.attn_factor);
  if (has(TensorRole::kRopeFreqs)) std::printf(", rope_freqs divisors (Llama 3.1 scaling)");
  if (has(TensorRole::kRopeFactorsLong)) std::printf(", LongRoPE factors");
  std::printf("\n  attention: scale %g", c.attention_scale);
  if (a.fused_qkv) std::printf(", fused attn_qkv");
  if (has(TensorRole::kAttnQBias)) std::printf(", Q/K/V biases");
  if (a.attn_output_bias) std::printf(", output bias");
  if (a.attn_sinks) std::printf(", a learned sink logit per head");
  if (a.qk_norm) std::printf(", per-head Q/K RMSNorm");
  if (c.attn_softcap > 0) std::printf(", score soft-cap %g", c.attn_softcap);
  if (c.sliding_window > 0) {
    std::printf(", sliding window %lld tokens on %lld of %lld layers", static_cast<long long>(c.sliding_window),
                static_cast<long long>(c.SlidingLayerCount()), static_cast<long long>(c.n_layers));
    if (a.global_layer_every != 0 && c.rope_freq_base_swa != c.rope_freq_base)
      std::printf(" (their RoPE base %g)", c.rope_freq_base_swa);
  }
  const char* activation = a.ffn_activation == FfnActivation::kGeluTanh    ? "GeGLU (gelu tanh)"
                           : a.ffn_activation == FfnActivation::kSwigluOai ? "clamped SwiGLU (gpt-oss: alpha 1.702, limit 7)"
                                                                           : "SwiGLU (silu)";
  std::printf("\n  FFN: %s%s; norms: RMSNorm%s%s\n", activation,
              a.fused_gate_up ? ", gate+up fused in ffn_up" : "", a.sandwich_norms ? " before and after each block" : "",
              c.embedding_scale != 1.0f ? fmt::format(", embeddings x {:.4g}", c.embedding_scale).c_str() : "");
  if (c.is_moe()) {
    // Parameters a token reads: everything but the experts it is not routed to.
    double total = 0;
    for (const GgufTensorInfo& t : f.tensors()) total += static_cast<double>(t.n_elements);
    const double per_expert = 3.0 * static_cast<double>(c.n_embd * c.n_ff_exp);
    const double inactive =
        static_cast<double>(c.n_layers) * per_expert * static_cast<double>(c.n_expert - c.n_expert_used);
    std::printf("  experts: %lld per layer of feed-forward %lld, %lld per token (%s router weights)%s; parameters "
                "%.3f B in all, %.3f B active per token (%.1f%%)\n",
                static_cast<long long>(c.n_expert), static_cast<long long>(c.n_ff_exp),
                static_cast<long long>(c.n_expert_used),
                a.expert_gating == ExpertGating::kSoftmaxTopK ? "softmax over the top-k logits, biased"
                : a.norm_expert_weights                      ? "renormalised"
                                                             : "softmax",
                c.n_ff_shexp ? fmt::format(", a shared expert of {}", c.n_ff_shexp).c_str() : "", total / 1e9,
                (total - inactive) / 1e9, 100.0 * (total - inactive) / total);
  }
  std::printf("  output: %s%s\n", has(TensorRole::kOutput) ? "output.weight" : "tied to token_embd",
              c.final_softcap > 0 ? fmt::format(", logit soft-cap {:g}", c.final_softcap).c_str() : "");
}

void PrintModel(const GgufFile& f) {
  ModelConfig c;
  try {
    c = ModelConfig::FromGguf(f);
  } catch (const Error& e) {
    std::printf("\nmodel: no model description ridge can run here (%s)\n", e.what());
    return;
  }
  std::printf("\nmodel (%s)\n", c.architecture.c_str());
  std::printf("  %lld layers, %lld heads, %lld KV heads, head dim %lld, embedding %lld, feed-forward %lld\n",
              static_cast<long long>(c.n_layers), static_cast<long long>(c.n_heads),
              static_cast<long long>(c.n_kv_heads), static_cast<long long>(c.head_dim),
              static_cast<long long>(c.n_embd), static_cast<long long>(c.n_ff));
  std::printf("  vocab %lld, training context %lld, rms eps %g\n", static_cast<long long>(c.n_vocab),
              static_cast<long long>(c.n_ctx_train), c.rms_eps);
  PrintVariant(f, c);
  std::printf("\nKV cache: per token = 2 (K and V) × %lld layers × %lld KV heads × %lld head dim × bytes per element\n",
              static_cast<long long>(c.n_layers), static_cast<long long>(c.n_kv_heads),
              static_cast<long long>(c.head_dim));
  const int64_t sliding = c.SlidingLayerCount();
  struct Cache {
    const char* name;
    double bytes_per_element;
  };
  for (const Cache& k : {Cache{"f16  ", 2.0}, Cache{"8-bit", 1.0}}) {
    const double per_token = KvBytesPerToken(c.n_layers, c.n_kv_heads, c.head_dim, k.bytes_per_element);
    std::printf("  %s (%g byte%s/element): %.0f bytes per token; 1 token: %s; 4096 tokens: %.0f bytes (%s)\n", k.name,
                k.bytes_per_element, k.bytes_per_element == 1 ? "" : "s", per_token, HumanBytes(per_token).c_str(),
                per_token * 4096, HumanBytes(per_token * 4096).c_str());
    if (sliding == 0) continue;
    // A sliding layer needs its last `window` tokens only.
    const double layer_token = per_token / static_cast<double>(c.n_layers);
    for (int64_t ctx : {int64_t{4096}, c.n_ctx_train}) {
      const double needed = layer_token * (static_cast<double>(c.n_layers - sliding) * static_cast<double>(ctx) +
                                           static_cast<double>(sliding) *
                                               static_cast<double>(std::min(ctx, c.sliding_window)));
      std::printf("         with the window: %lld tokens need %.0f bytes (%s), %.1f%% of the full %s\n",
                  static_cast<long long>(ctx), needed, HumanBytes(needed).c_str(),
                  100.0 * needed / (per_token * static_cast<double>(ctx)),
                  HumanBytes(per_token * static_cast<double>(ctx)).c_str());
    }
  }
  if (sliding > 0)
    std::printf("  (ridge's paged cache keeps every position of every layer today: it allocates the full figure)\n");
}

int RunInspect(const std::string& path) {
  const GgufFile f = GgufFile::Open(path);
  std::printf("%s: GGUF v%u, %s, alignment %u, data section at byte %llu\n", path.c_str(), f.version(),
              HumanBytes(static_cast<double>(f.file_bytes())).c_str(), f.alignment(),
              static_cast<unsigned long long>(f.data_offset()));

  std::printf("\nmetadata (%zu keys)\n", f.metadata().size());
  size_t key_width = 0;
  for (const auto& [k, v] : f.metadata()) key_width = std::max(key_width, k.size());
  for (const auto& [k, v] : f.metadata())
    std::printf("  %-*s  %-7s  %s\n", static_cast<int>(key_width), k.c_str(), GgufValueTypeName(v.type),
                Describe(v).c_str());

  std::printf("\ntensors (%zu)\n", f.tensors().size());
  if (f.tensors().empty()) {
    std::printf("  none (a metadata-only file, e.g. a tokenizer)\n");
  } else {
    size_t name_width = 4;
    for (const auto& t : f.tensors()) name_width = std::max(name_width, t.name.size());
    std::printf("  %-*s  %-5s  %-20s  %12s\n", static_cast<int>(name_width), "name", "type", "shape", "bytes");
    for (const auto& t : f.tensors())
      std::printf("  %-*s  %-5s  %s  %12lld\n", static_cast<int>(name_width), t.name.c_str(), GgmlTypeName(t.type),
                  PadRight(Shape(t.dims), 20).c_str(), static_cast<long long>(t.n_bytes));
  }

  struct PerType {
    int64_t tensors = 0, elements = 0, bytes = 0;
  };
  std::map<std::string, PerType> per_type;
  int64_t n_params = 0, n_bytes = 0;
  for (const auto& t : f.tensors()) {
    PerType& p = per_type[GgmlTypeName(t.type)];
    ++p.tensors;
    p.elements += t.n_elements;
    p.bytes += t.n_bytes;
    n_params += t.n_elements;
    n_bytes += t.n_bytes;
  }
  std::printf("\nparameters: %lld (%s) in %s\n", static_cast<long long>(n_params),
              HumanCount(static_cast<double>(n_params)).c_str(), HumanBytes(static_cast<double>(n_bytes)).c_str());
  if (!per_type.empty()) {
    std::printf("bytes per type\n");
    for (const auto& [name, p] : per_type)
      std::printf("  %-5s  %4lld tensors  %12lld elements  %12lld bytes  %5.1f%%  (%.3f bytes/element)\n",
                  name.c_str(), static_cast<long long>(p.tensors), static_cast<long long>(p.elements),
                  static_cast<long long>(p.bytes), 100.0 * static_cast<double>(p.bytes) / static_cast<double>(n_bytes),
                  static_cast<double>(p.bytes) / static_cast<double>(p.elements));
  }
  PrintModel(f);
  return 0;
}

CommandRegistration kInspect{{"inspect", "Show a GGUF file's metadata, tensors, sizes and KV-cache accounting",
  [](CLI::App& sub) -> std::function<int()> {
    auto path = std::make_shared<std::string>();
    sub.add_option("file", *path, "GGUF file")->required();
    return [path] { return RunInspect(*path); };
  }}};

}  // namespace
}  // namespace ridge::app
