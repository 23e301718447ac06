#include "ridge/gguf/llama2c_import.h"

#include <cstring>
#include <filesystem>

#include "ridge/base/error.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/gguf/quantize_file.h"
#include "ridge/gguf/tensor_names.h"

namespace ridge {
namespace {

constexpr int64_t kHeaderBytes = 7 * 4;
constexpr int64_t kMaxHeaderValue = int64_t{1} << 24;  // keeps every product below in int64
constexpr int kFirstByteToken = 3;
constexpr int kNumByteTokens = 256;

int32_t LoadI32(const uint8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// llama.cpp's LLAMA_FTYPE for a file whose weights are all `type`.
}  // namespace

Llama2cCheckpoint Llama2cCheckpoint::Open(const std::string& path) {
  Llama2cCheckpoint c;
  c.file = std::make_shared<MappedFile>(MappedFile::Open(path));
  const uint64_t size = c.file->size_bytes();
  if (size < kHeaderBytes)
    Fail("{}: truncated llama2.c checkpoint: {} bytes, less than the {}-byte header", path, size, kHeaderBytes);
  const uint8_t* p = c.file->data();
  const char* names[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
  int64_t v[7];
  for (int i = 0; i < 7; ++i) {
    v[i] = LoadI32(p + 4 * i);
    const int64_t mag = i == 5 ? (v[i] < 0 ? -v[i] : v[i]) : v[i];
    if (mag <= 0 || mag > kMaxHeaderValue)
      Fail("{}: llama2.c header field {} (byte offset {}) = {} is out of range (1..{})", path, names[i], 4 * i, v[i],
           kMaxHeaderValue);
  }
  Llama2cHeader& h = c.header;
  h.dim = v[0];
  h.hidden_dim = v[1];
  h.n_layers = v[2];
  h.n_heads = v[3];
  h.n_kv_heads = v[4];
  h.shared_classifier = v[5] > 0;
  h.vocab_size = v[5] > 0 ? v[5] : -v[5];
  h.seq_len = v[6];
  if (h.dim % h.n_heads != 0) Fail("{}: llama2.c header: dim {} is not divisible by n_heads {}", path, h.dim, h.n_heads);
  if (h.n_heads % h.n_kv_heads != 0)
    Fail("{}: llama2.c header: n_heads {} is not divisible by n_kv_heads {}", path, h.n_heads, h.n_kv_heads);
  if (h.head_size() % 2 != 0) Fail("{}: llama2.c header: head size {} is odd (RoPE needs pairs)", path, h.head_size());

  const int64_t L = h.n_layers, dim = h.dim, hid = h.hidden_dim, kv = h.kv_dim();
  uint64_t offset = kHeaderBytes;
  // Adds one array of n floats (layered arrays are split per block) in file order.
  auto take = [&](int64_t n) {
    const uint64_t at = offset;
    offset += static_cast<uint64_t>(n) * 4;
    return at;
  };
  struct Layered {
    TensorRole role;
    std::vector<int64_t> dims;
    bool norm;
    uint64_t at = 0;
  };
  const uint64_t embd_at = take(h.vocab_size * dim);
  std::vector<Layered> layered = {
      {TensorRole::kAttnNorm, {dim}, true},         {TensorRole::kAttnQ, {dim, dim}, false},
      {TensorRole::kAttnK, {dim, kv}, false},       {TensorRole::kAttnV, {dim, kv}, false},
      {TensorRole::kAttnOutput, {dim, dim}, false}, {TensorRole::kFfnNorm, {dim}, true},
      {TensorRole::kFfnGate, {dim, hid}, false},    {TensorRole::kFfnDown, {hid, dim}, false},
      {TensorRole::kFfnUp, {dim, hid}, false},
  };
  for (auto& a : layered) {
    int64_t per_layer = 1;
    for (int64_t d : a.dims) per_layer *= d;
    a.at = take(L * per_layer);
  }
  const uint64_t final_norm_at = take(dim);
  take(h.seq_len * h.head_size());  // freq_cis_real and freq_cis_imag: seq_len × head_size/2 each, unused
  const uint64_t wcls_at = h.shared_classifier ? 0 : take(h.vocab_size * dim);
  if (size != offset)
    Fail("{}: llama2.c checkpoint should be {} bytes for its header (dim {}, hidden {}, {} layers, {} heads, {} kv "
         "heads, vocab {}{}, seq_len {}) but the file has {} bytes{}",
         path, offset, dim, hid, L, h.n_heads, h.n_kv_heads, h.vocab_size,
         h.shared_classifier ? "" : " with its own classifier", h.seq_len, size,
         size < offset ? " (truncated)" : " (trailing data)");

  c.tensors.push_back({TensorName(TensorRole::kTokenEmbd), {dim, h.vocab_size}, embd_at, h.vocab_size * dim, false});
  for (int64_t l = 0; l < L; ++l) {
    for (const auto& a : layered) {
      int64_t n = 1;
      for (int64_t d : a.dims) n *= d;
      c.tensors.push_back({TensorName(a.role, l), a.dims, a.at + static_cast<uint64_t>(l * n) * 4,
                           n, a.norm});
    }
  }
  c.tensors.push_back({TensorName(TensorRole::kOutputNorm), {dim}, final_norm_at, dim, true});
  if (!h.shared_classifier)
    c.tensors.push_back({TensorName(TensorRole::kOutput), {dim, h.vocab_size}, wcls_at, h.vocab_size * dim, false});
  return c;
}

const float* Llama2cCheckpoint::Floats(const Llama2cTensor& t) const {
  return reinterpret_cast<const float*>(file->data() + t.file_offset);
}

Llama2cVocab ReadLlama2cTokenizer(const std::string& path, int64_t vocab_size) {
  MappedFile f = MappedFile::Open(path);
  const uint8_t* p = f.data();
  const uint64_t size = f.size_bytes();
  uint64_t pos = 0;
  auto need = [&](uint64_t n, const std::string& what) {
    if (n > size - pos)
      Fail("{}: truncated llama2.c tokenizer: {} at byte offset {} needs {} bytes but only {} remain", path, what, pos,
           n, size - pos);
  };
  need(4, "max_token_length");
  const int32_t max_len = LoadI32(p);
  pos = 4;
  if (max_len <= 0) Fail("{}: llama2.c tokenizer: max_token_length {} at byte offset 0 is not positive", path, max_len);
  if (vocab_size < kFirstByteToken + kNumByteTokens)
    Fail("{}: vocabulary of {} tokens is too small for unk, BOS, EOS and 256 byte tokens", path, vocab_size);
  Llama2cVocab v;
  for (int64_t id = 0; id < vocab_size; ++id) {
    need(8, fmt::format("token {} score and length", id));
    float score;
    std::memcpy(&score, p + pos, 4);
    const int32_t len = LoadI32(p + pos + 4);
    if (len < 0 || len > max_len)
      Fail("{}: llama2.c tokenizer: token {} length {} at byte offset {} is not in 0..max_token_length {}", path, id,
           len, pos + 4, max_len);
    pos += 8;
    need(static_cast<uint64_t>(len), fmt::format("token {} bytes", id));
    std::string raw(reinterpret_cast<const char*>(p + pos), static_cast<size_t>(len));
    pos += static_cast<uint64_t>(len);

    std::string piece;
    GgufTokenType type = GgufTokenType::kNormal;
    if (id == 0) {
      piece = "<unk>";
      type = GgufTokenType::kUnknown;
    } else if (id == 1 || id == 2) {
      piece = id == 1 ? "<s>" : "</s>";
      type = GgufTokenType::kControl;
      if (raw != "\n" + piece + "\n" && raw != piece)
        Fail("{}: llama2.c tokenizer: token {} should be {} but is '{}'", path, id, piece, raw);
    } else if (id < kFirstByteToken + kNumByteTokens) {
      piece = fmt::format("<0x{:02X}>", id - kFirstByteToken);
      type = GgufTokenType::kByte;
      if (raw != piece) Fail("{}: llama2.c tokenizer: token {} should be the byte token {} but is '{}'", path, id, piece, raw);
    } else {
      for (char ch : raw) piece += ch == ' ' ? std::string("\xE2\x96\x81") : std::string(1, ch);  // U+2581
    }
    v.pieces.push_back(std::move(piece));
    v.scores.push_back(score);
    v.types.push_back(type);
  }
  if (pos != size)
    Fail("{}: llama2.c tokenizer has {} bytes after its {} tokens (vocabulary size mismatch?)", path, size - pos,
         vocab_size);
  return v;
}

GgufWriter BuildLlama2cGguf(const Llama2cCheckpoint& ckpt, const Llama2cVocab& vocab,
                            const Llama2cConvertOptions& options, std::vector<std::string>* notes) {
  if (!CanQuantizeTo(options.type))
    Fail("cannot convert to {}: ridge writes {}", GgmlTypeName(options.type), QuantizableTypeNames());
  const Llama2cHeader& h = ckpt.header;
  if (static_cast<int64_t>(vocab.pieces.size()) != h.vocab_size)
    Fail("tokenizer has {} tokens but the checkpoint's vocabulary has {}", vocab.pieces.size(), h.vocab_size);

  Llama2cShape shape = h;
  if (options.widen) {
    CheckWidening(ckpt, *options.widen);
    shape = *options.widen;
  }
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetString("general.name", options.name.empty() ? "llama2c" : options.name);
  w.SetU32("general.file_type", LlamaFileType(options.type));
  w.SetU32("llama.vocab_size", static_cast<uint32_t>(shape.vocab_size));
  w.SetU32("llama.context_length", static_cast<uint32_t>(h.seq_len));
  w.SetU32("llama.embedding_length", static_cast<uint32_t>(shape.dim));
  w.SetU32("llama.block_count", static_cast<uint32_t>(shape.n_layers));
  w.SetU32("llama.feed_forward_length", static_cast<uint32_t>(shape.hidden_dim));
  w.SetU32("llama.attention.head_count", static_cast<uint32_t>(shape.n_heads));
  w.SetU32("llama.attention.head_count_kv", static_cast<uint32_t>(shape.n_kv_heads));
  w.SetU32("llama.rope.dimension_count", static_cast<uint32_t>(shape.dim / shape.n_heads));
  w.SetF32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.SetF32("llama.rope.freq_base", 10000.0f);

  std::vector<GgufValue> tokens, scores, types;
  for (size_t i = 0; i < vocab.pieces.size(); ++i) {
    tokens.push_back(GgufValue::String(vocab.pieces[i]));
    scores.push_back(GgufValue::Float(GgufValueType::kFloat32, vocab.scores[i]));
    types.push_back(GgufValue::Int(GgufValueType::kInt32, static_cast<int32_t>(vocab.types[i])));
  }
  for (int64_t id = h.vocab_size; id < shape.vocab_size; ++id) {  // padding of a widened model: never produced
    tokens.push_back(GgufValue::String(fmt::format("<pad_{}>", id)));
    scores.push_back(GgufValue::Float(GgufValueType::kFloat32, 0.0f));
    types.push_back(GgufValue::Int(GgufValueType::kInt32, static_cast<int32_t>(GgufTokenType::kControl)));
  }
  w.SetString("tokenizer.ggml.model", "llama");
  w.Set("tokenizer.ggml.tokens", GgufValue::Array(GgufValueType::kString, std::move(tokens)));
  w.Set("tokenizer.ggml.scores", GgufValue::Array(GgufValueType::kFloat32, std::move(scores)));
  w.Set("tokenizer.ggml.token_type", GgufValue::Array(GgufValueType::kInt32, std::move(types)));
  w.SetU32("tokenizer.ggml.bos_token_id", 1);
  w.SetU32("tokenizer.ggml.eos_token_id", 2);
  w.SetU32("tokenizer.ggml.unknown_token_id", 0);
  w.SetBool("tokenizer.ggml.add_bos_token", true);
  w.SetBool("tokenizer.ggml.add_eos_token", false);

  if (options.widen) {
    AddWidenedTensors(w, ckpt, *options.widen, options.type);
    return w;
  }
  for (const Llama2cTensor& t : ckpt.tensors) {
    GgmlType type = t.is_norm ? GgmlType::kF32 : options.type;
    if (t.dims[0] % TraitsOf(type).block_elems != 0) {
      if (notes)
        notes->push_back(fmt::format("{}: rows of {} do not fit {} blocks of {}; stored as F16", t.gguf_name,
                                     t.dims[0], GgmlTypeName(type), TraitsOf(type).block_elems));
      type = GgmlType::kF16;
    }
    const float* src = ckpt.Floats(t);
    const int64_t row = t.dims[0];
    const int64_t rows = t.n_floats / row;
    auto keep_alive = ckpt.file;
    w.AddTensor(t.gguf_name, type, t.dims, [keep_alive, src, row, rows, type](uint8_t* out, int64_t n_bytes) {
      const int64_t row_bytes = RowBytes(type, row);
      RIDGE_CHECK(row_bytes * rows == n_bytes);
      for (int64_t r = 0; r < rows; ++r) QuantizeRow(type, src + r * row, out + r * row_bytes, row);
    });
  }
  return w;
}

}  // namespace ridge
