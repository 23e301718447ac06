#pragma once
// A llama2.c checkpoint embedded in a larger llama shape that computes the
// same function: a real trained model (stories260K) with the weight bytes,
// and so the decode cost, of a model people run (tinyllama-1.1b). Random
// weights cost the same but do not behave like a language model, so what a
// real model does to speed (prompt lookup's acceptance on text it copies)
// can only be measured at full size this way.
//
// Where the source's numbers go (d, hd: the source's dim and head size; D,
// hd': the target's; s = sqrt(d / D); r = hd' / hd):
// - the residual stream keeps dims 0..d-1; dim D-1 carries a small constant
//   c (every token's embedding) that no layer reads or writes and the other
//   dims stay zero; every norm weight is the source's times s, so that an
//   RMS over D dims normalises as the source's over d (c² moves it by
//   ~c² / (d·rms²), far below the weights' own rounding);
// - source query head h of kv group k (h = k·g + i, g = heads per kv head)
//   becomes target head k·g' + i, its kv head k stays k; within a head,
//   RoPE pair p becomes pair r·p (the same frequency, base^(-2p/hd)), and
//   the queries are scaled by sqrt(r) to undo the target's 1/sqrt(hd')
//   score scale; values take the same places as keys;
// - the feed-forward keeps rows (or columns) 0..hidden-1; layers past the
//   source's are all zeros (their attention and feed-forward add zero);
// - vocabulary rows past the source's are control tokens the tokenizer never
//   produces, whose output row is −M at dim D-1, so that their logits are
//   about −M·c·sqrt(D/d) / rms: never sampled.
#include <cstdint>

#include "ridge/gguf/ggml_type.h"
#include "ridge/gguf/gguf_writer.h"

namespace ridge {

struct Llama2cCheckpoint;

// A llama shape as llama2.c describes it: a checkpoint's (Llama2cHeader
// adds the rest of its header) or a widening target's.
struct Llama2cShape {
  int64_t dim = 0;
  int64_t hidden_dim = 0;
  int64_t n_layers = 0;
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t vocab_size = 0;  // absolute value

  int64_t head_size() const { return dim / n_heads; }
  int64_t kv_dim() const { return n_kv_heads * head_size(); }
};

// Throws ridge::Error saying which size cannot hold the checkpoint's.
void CheckWidening(const Llama2cCheckpoint& ckpt, const Llama2cShape& to);

// Adds every tensor of the widened model (2-D weights of `type`, norms F32),
// produced lazily from the mapped checkpoint.
void AddWidenedTensors(GgufWriter& w, const Llama2cCheckpoint& ckpt, const Llama2cShape& to, GgmlType type);

}  // namespace ridge
