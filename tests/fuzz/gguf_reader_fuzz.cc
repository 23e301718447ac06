// libFuzzer target for the GGUF reader (built with clang: -fsanitize=fuzzer,
// address,undefined). Every input must either parse or throw ridge::Error;
// anything else (a crash, a sanitizer report, another exception, a broken
// invariant) is a finding. Inputs that parse are also checked for:
//   - tensor views inside the file, non-overlapping, of the size their type says;
//   - dequantizing each tensor's first row (arbitrary bytes must not trip UBSan);
//   - ModelConfig::FromGguf either succeeding consistently or throwing ridge::Error;
//   - write -> read -> write giving the same bytes (the writer reproduces what it reads).
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "ridge/base/error.h"
#include "ridge/gguf/dequantize.h"
#include "ridge/gguf/gguf_file.h"
#include "ridge/gguf/gguf_writer.h"
#include "ridge/model/model_config.h"

namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
    std::abort();
  }
}

std::string TempPath(const char* suffix) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/ridge-fuzz-" + std::to_string(getpid()) + suffix;
}

void WriteFile(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  Check(out.good(), "write the input file");
}

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

ridge::GgufWriter Rewrite(const ridge::GgufFile& f) {
  ridge::GgufWriter w;
  for (const auto& [k, v] : f.metadata()) w.Set(k, v);
  for (const auto& t : f.tensors())
    w.AddTensorBytes(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
  return w;
}

void CheckParsed(const ridge::GgufFile& f) {
  const uint8_t* begin = f.tensors().empty() ? nullptr : f.tensors()[0].data - f.tensors()[0].offset - f.data_offset();
  for (const auto& t : f.tensors()) {
    Check(t.n_bytes >= 0 && t.n_elements > 0, "positive sizes");
    Check(static_cast<uint64_t>(t.data - begin) == f.data_offset() + t.offset, "data pointer matches offset");
    Check(f.data_offset() + t.offset + static_cast<uint64_t>(t.n_bytes) <= f.file_bytes(), "tensor inside file");
    Check(t.offset % f.alignment() == 0, "aligned");
    const auto& traits = ridge::TraitsOf(t.type);
    Check(ridge::RowBytes(t.type, t.dims[0]) * (t.n_elements / t.dims[0]) == t.n_bytes, "bytes match type");
    if (traits.can_dequantize && t.dims[0] <= (1 << 16)) {
      std::vector<float> row(static_cast<size_t>(t.dims[0]));
      ridge::DequantizeRow(t.type, t.data, row.data(), t.dims[0]);
    }
    Check(f.FindTensor(t.name) == &t, "tensor index");
  }
  for (const auto& [k, v] : f.metadata()) {
    Check(f.Find(k) == &v, "metadata index");
    (void)v.AsInt();
    (void)v.AsFloat();
  }
  try {
    const ridge::ModelConfig c = ridge::ModelConfig::FromGguf(f);
    Check(c.n_heads > 0 && c.n_kv_heads > 0 && c.n_heads % c.n_kv_heads == 0, "config consistent");
    Check(c.head_dim > 0 && c.rope_dim <= c.head_dim && c.rope_dim % 2 == 0 && c.n_vocab > 0, "config consistent");
    Check(c.sliding_window >= 0 && c.attn_softcap >= 0 && c.final_softcap >= 0, "variant keys in range");
    Check(c.attention_scale > 0 && std::isfinite(c.attention_scale) && c.rope_scaling.factor > 0 &&
              c.rope_scaling.original_context > 0 && c.rope_scaling.attn_factor > 0,
          "variant keys in range");
  } catch (const ridge::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string in_path = TempPath(".in.gguf"), out1 = TempPath(".out1.gguf"),
                           out2 = TempPath(".out2.gguf");
  static const bool cleanup_registered = [] {
    std::atexit([] {
      for (const char* suffix : {".in.gguf", ".out1.gguf", ".out2.gguf"}) std::remove(TempPath(suffix).c_str());
    });
    return true;
  }();
  (void)cleanup_registered;
  WriteFile(in_path, data, size);
  try {
    const ridge::GgufFile f = ridge::GgufFile::Open(in_path);
    CheckParsed(f);
    try {
      Rewrite(f).Write(out1);
    } catch (const ridge::Error&) {
      return 0;  // e.g. a tensor name longer than llama.cpp allows: readable, not writable
    }
    const ridge::GgufFile g = ridge::GgufFile::Open(out1);  // must parse: the writer made it
    Check(g.metadata().size() == f.metadata().size() && g.tensors().size() == f.tensors().size(), "round trip counts");
    Rewrite(g).Write(out2);
    Check(ReadFile(out1) == ReadFile(out2), "write(read(write(x))) == write(x)");
  } catch (const ridge::Error&) {
  }
  return 0;
}
