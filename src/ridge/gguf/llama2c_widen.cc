#include "ridge/gguf/llama2c_widen.h"

#include <cmath>
#include <functional>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/gguf/llama2c_import.h"
#include "ridge/gguf/tensor_names.h"

namespace ridge {
namespace {

// The value every token's embedding carries in the target's last dim, and
// the weight of the padding tokens' output rows there (see the header).
constexpr float kConstant = 0.1f;
constexpr float kPadLogitWeight = -1e4f;

// Fills row `row` of a target tensor (out: its dims[0] floats, zeroed).
using RowFill = std::function<void(int64_t row, float* out)>;

// Which source index a target head, kv head or head dim holds (−1: none).
struct HeadMap {
  int64_t group, target_group;     // query heads per kv head
  int64_t head_size, target_head_size;
  int64_t n_kv_heads;              // the source's

  int64_t QueryHead(int64_t target) const {
    const int64_t kv = target / target_group, i = target % target_group;
    return kv < n_kv_heads && i < group ? kv * group + i : -1;
  }
  int64_t KvHead(int64_t target) const { return target < n_kv_heads ? target : -1; }
  // RoPE pair p of the source is pair r·p of the target.
  int64_t HeadDim(int64_t target) const {
    const int64_t r = target_head_size / head_size, pair = target / 2;
    return pair % r == 0 ? 2 * (pair / r) + target % 2 : -1;
  }
  // The source row of target row `target` of a [heads · head size] matrix (−1: a zero row).
  int64_t Row(int64_t target, bool query) const {
    const int64_t head = query ? QueryHead(target / target_head_size) : KvHead(target / target_head_size);
    const int64_t dim = HeadDim(target % target_head_size);
    return head < 0 || dim < 0 ? -1 : head * head_size + dim;
  }
};

class Widener {
 public:
  Widener(GgufWriter& w, const Llama2cCheckpoint& ckpt, const Llama2cShape& to, GgmlType type)
      : w_(w), ckpt_(ckpt), src_(ckpt.header), to_(to), type_(type) {
    map_ = {src_.n_heads / src_.n_kv_heads, to.n_heads / to.n_kv_heads, src_.head_size(), to.head_size(),
            src_.n_kv_heads};
    norm_scale_ = static_cast<float>(std::sqrt(static_cast<double>(src_.dim) / static_cast<double>(to.dim)));
    query_scale_ = static_cast<float>(std::sqrt(static_cast<double>(map_.target_head_size / map_.head_size)));
  }

  void AddAll() {
    const int64_t d = src_.dim, D = to_.dim, V = src_.vocab_size;
    const float* embd = Source(TensorName(TensorRole::kTokenEmbd));
    Add(TensorName(TensorRole::kTokenEmbd), {D, to_.vocab_size}, false, [=](int64_t t, float* out) {
      if (t < V) Copy(embd + t * d, d, out);
      out[D - 1] = kConstant;
    });
    for (int64_t l = 0; l < to_.n_layers; ++l) AddLayer(l);
    AddNorm(TensorName(TensorRole::kOutputNorm), Source(TensorName(TensorRole::kOutputNorm)), 1.0f);
    const float* cls = src_.shared_classifier ? embd : Source(TensorName(TensorRole::kOutput));
    Add(TensorName(TensorRole::kOutput), {D, to_.vocab_size}, false, [=](int64_t t, float* out) {
      if (t < V) Copy(cls + t * d, d, out);
      else out[D - 1] = kPadLogitWeight;
    });
  }

 private:
  void AddLayer(int64_t l) {
    const int64_t d = src_.dim, D = to_.dim, hid = src_.hidden_dim, F = to_.hidden_dim;
    const int64_t q_rows = to_.n_heads * map_.target_head_size, kv_rows = to_.n_kv_heads * map_.target_head_size;
    const bool real = l < src_.n_layers;  // layers past the source's are zeros
    auto src = [&](TensorRole role) { return real ? Source(TensorName(role, l)) : nullptr; };
    const float* wq = src(TensorRole::kAttnQ);
    const float* wk = src(TensorRole::kAttnK);
    const float* wv = src(TensorRole::kAttnV);
    const float* wo = src(TensorRole::kAttnOutput);
    const float* gate = src(TensorRole::kFfnGate);
    const float* up = src(TensorRole::kFfnUp);
    const float* down = src(TensorRole::kFfnDown);
    AddNorm(TensorName(TensorRole::kAttnNorm, l), src(TensorRole::kAttnNorm), 0.0f);
    AddNorm(TensorName(TensorRole::kFfnNorm, l), src(TensorRole::kFfnNorm), 0.0f);
    const HeadMap map = map_;
    const float qs = query_scale_;
    auto heads = [=](const float* m, bool query, float scale) -> RowFill {
      return [=](int64_t row, float* out) {
        const int64_t from = m == nullptr ? -1 : map.Row(row, query);
        if (from >= 0) Copy(m + from * d, d, out, scale);
      };
    };
    Add(TensorName(TensorRole::kAttnQ, l), {D, q_rows}, false, heads(wq, true, qs));
    Add(TensorName(TensorRole::kAttnK, l), {D, kv_rows}, false, heads(wk, false, 1.0f));
    Add(TensorName(TensorRole::kAttnV, l), {D, kv_rows}, false, heads(wv, false, 1.0f));
    Add(TensorName(TensorRole::kAttnOutput, l), {q_rows, D}, false, [=](int64_t row, float* out) {
      if (wo == nullptr || row >= d) return;
      for (int64_t col = 0; col < q_rows; ++col)
        if (const int64_t from = map.Row(col, true); from >= 0) out[col] = wo[row * d + from];
    });
    auto rows_of = [=](const float* m) -> RowFill {  // [hidden, dim] into [F, D]
      return [=](int64_t row, float* out) {
        if (m != nullptr && row < hid) Copy(m + row * d, d, out);
      };
    };
    Add(TensorName(TensorRole::kFfnGate, l), {D, F}, false, rows_of(gate));
    Add(TensorName(TensorRole::kFfnUp, l), {D, F}, false, rows_of(up));
    Add(TensorName(TensorRole::kFfnDown, l), {F, D}, false, [=](int64_t row, float* out) {
      if (down != nullptr && row < d) Copy(down + row * hid, hid, out);
    });
  }

  // A norm weight: the source's times s over its dims, `last` at dim D-1.
  void AddNorm(const std::string& name, const float* g, float last) {
    const int64_t d = src_.dim, D = to_.dim;
    const float s = norm_scale_;
    Add(name, {D}, true, [=](int64_t, float* out) {
      if (g != nullptr) Copy(g, d, out, s);
      out[D - 1] = last;
    });
  }

  void Add(const std::string& name, std::vector<int64_t> dims, bool is_norm, RowFill fill) {
    GgmlType type = is_norm ? GgmlType::kF32 : type_;
    if (dims[0] % TraitsOf(type).block_elems != 0) type = GgmlType::kF16;
    const int64_t row = dims[0], rows = dims.size() > 1 ? dims[1] : 1;
    auto keep_alive = ckpt_.file;
    w_.AddTensor(name, type, dims, [keep_alive, fill, row, rows, type](uint8_t* out, int64_t n_bytes) {
      const int64_t row_bytes = RowBytes(type, row);
      RIDGE_CHECK(row_bytes * rows == n_bytes);
      std::vector<float> floats(static_cast<size_t>(row));
      for (int64_t r = 0; r < rows; ++r) {
        std::fill(floats.begin(), floats.end(), 0.0f);
        fill(r, floats.data());
        QuantizeRow(type, floats.data(), out + r * row_bytes, row);
      }
    });
  }

  static void Copy(const float* from, int64_t n, float* to, float scale = 1.0f) {
    for (int64_t i = 0; i < n; ++i) to[i] = from[i] * scale;
  }

  const float* Source(const std::string& name) const {
    for (const Llama2cTensor& t : ckpt_.tensors)
      if (t.gguf_name == name) return ckpt_.Floats(t);
    Fail("llama2.c checkpoint has no tensor {}", name);
  }

  GgufWriter& w_;
  const Llama2cCheckpoint& ckpt_;
  const Llama2cHeader& src_;
  Llama2cShape to_;
  GgmlType type_;
  HeadMap map_{};
  float norm_scale_ = 1.0f, query_scale_ = 1.0f;
};

}  // namespace

void CheckWidening(const Llama2cCheckpoint& ckpt, const Llama2cShape& to) {
  const Llama2cHeader& h = ckpt.header;
  auto need = [](bool ok, std::string_view what, int64_t target, int64_t source, std::string_view rule) {
    if (!ok) Fail("cannot widen the llama2.c model: target {} {} {} the source's {}", what, target, rule, source);
  };
  need(to.dim > h.dim, "dim", to.dim, h.dim, "must exceed (one spare dim carries a constant)");
  need(to.hidden_dim >= h.hidden_dim, "hidden_dim", to.hidden_dim, h.hidden_dim, "must be at least");
  need(to.n_layers >= h.n_layers, "n_layers", to.n_layers, h.n_layers, "must be at least");
  need(to.n_kv_heads >= h.n_kv_heads, "n_kv_heads", to.n_kv_heads, h.n_kv_heads, "must be at least");
  need(to.vocab_size >= h.vocab_size, "vocab_size", to.vocab_size, h.vocab_size, "must be at least");
  need(to.n_heads > 0 && to.n_kv_heads > 0 && to.n_heads % to.n_kv_heads == 0 && to.dim % to.n_heads == 0, "n_heads",
       to.n_heads, h.n_heads, "must divide dim and be a multiple of n_kv_heads, unlike");
  need(to.n_heads / to.n_kv_heads >= h.n_heads / h.n_kv_heads, "heads per kv head", to.n_heads / to.n_kv_heads,
       h.n_heads / h.n_kv_heads, "must be at least");
  need(to.head_size() % h.head_size() == 0, "head size", to.head_size(), h.head_size(), "must be a multiple of");
}

void AddWidenedTensors(GgufWriter& w, const Llama2cCheckpoint& ckpt, const Llama2cShape& to, GgmlType type) {
  CheckWidening(ckpt, to);
  Widener(w, ckpt, to, type).AddAll();
}

}  // namespace ridge
