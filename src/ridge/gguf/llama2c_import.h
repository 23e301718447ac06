#pragma once
// Import of llama2.c checkpoints (legacy version 0 format) and tokenizers into
// GGUF with llama.cpp's metadata keys and tensor names, so any GGUF runtime
// loads the result as a llama model. Formats: ../shared/models/README.md.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ridge/base/mapped_file.h"
#include "ridge/gguf/ggml_type.h"
#include "ridge/gguf/gguf_writer.h"
#include "ridge/gguf/llama2c_widen.h"

namespace ridge {

// The seven int32 of the checkpoint header: its shape and these.
struct Llama2cHeader : Llama2cShape {
  int64_t seq_len = 0;
  bool shared_classifier = true;  // the stored vocab_size was positive
};

// One weight array of the checkpoint: where its floats are and its GGUF name and dims.
struct Llama2cTensor {
  std::string gguf_name;        // "blk.0.attn_q.weight"
  std::vector<int64_t> dims;    // GGUF order: dims[0] is the row length
  uint64_t file_offset = 0;     // byte offset of the first float in the .bin
  int64_t n_floats = 0;
  bool is_norm = false;         // 1-D norm weights stay F32 whatever the --type
};

// A validated, memory-mapped checkpoint. The float arrays are read in place.
struct Llama2cCheckpoint {
  std::shared_ptr<MappedFile> file;
  Llama2cHeader header;
  std::vector<Llama2cTensor> tensors;  // in GGUF order (token_embd first, then blocks, output_norm, output)

  // Throws ridge::Error naming the file and the problem (bad header, size mismatch).
  static Llama2cCheckpoint Open(const std::string& path);
  // The floats of t (4-byte aligned: the header is 28 bytes and the mapping page-aligned).
  const float* Floats(const Llama2cTensor& t) const;
};

// GGUF token types (llama.cpp's llama_token_type).
enum class GgufTokenType : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

struct Llama2cVocab {
  std::vector<std::string> pieces;  // GGUF conventions: "▁" for space, "<0xNN>", "<s>", "</s>", "<unk>"
  std::vector<float> scores;
  std::vector<GgufTokenType> types;
};

// Reads a llama2.c tokenizer of exactly vocab_size tokens and converts the pieces.
Llama2cVocab ReadLlama2cTokenizer(const std::string& path, int64_t vocab_size);

struct Llama2cConvertOptions {
  GgmlType type = GgmlType::kF32;  // for 2-D weights; must satisfy CanQuantizeTo
  std::string name;                // general.name
  // Embed the model in this larger shape (llama2c_widen.h); the vocabulary
  // is padded with control tokens to its size.
  std::optional<Llama2cShape> widen;
};

// Fills a writer with the metadata and the tensors (produced lazily from the
// mapped checkpoint, which the writer's producers keep alive). Weights whose
// rows do not fit the block size of `type` fall back to F16; `notes` lists them.
GgufWriter BuildLlama2cGguf(const Llama2cCheckpoint& ckpt, const Llama2cVocab& vocab,
                            const Llama2cConvertOptions& options, std::vector<std::string>* notes = nullptr);

}  // namespace ridge
