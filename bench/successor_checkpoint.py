#!/usr/bin/env python3
"""A llama2.c checkpoint whose greedy output follows a fixed cycle of words.

For speculative decoding's upper bound on copy-heavy text (issue 17): the
cycle is every token of a llama2.c tokenizer that is a whole word with its
leading space (" the", " to", ... of tok512.bin: 61 of them, which the
tokenizer gives back one token a word), and after token t the model always
predicts succ(t), the next word of the cycle (after any other token, the
word whose classifier row is nearest its embedding). The prompt written beside it holds the cycle three times, so prompt
lookup drafts exactly what the model then says: every draft is accepted, and
the speedup measured is what the verifying passes allow on this machine, not
what a trained model's acceptance allows. Widen it to a real shape with
`ridge convert --widen-to`.

The stories260K shape (dim 64, 5 layers, 8 heads on 4 KV heads, vocab 512):
every layer's weights are zero (the residual stream stays the token's
embedding), the embeddings are seeded Gaussian vectors e_t, and the
classifier row of succ(t) is 0.1 · u_t, u_t = e_t / rms(e_t), so the logit
of succ(t) is 0.1 · 64 = 6.4 and every other one 0.1 · u_t · u_a, about
N(0, 0.8²) for a ≠ t.

Usage: successor_checkpoint.py TOKENIZER.bin OUT.bin PROMPT.txt
"""
import struct
import sys

import numpy as np

DIM, HIDDEN, LAYERS, HEADS, KV_HEADS, VOCAB, SEQ_LEN = 64, 172, 5, 8, 4, 512, 512


def word_tokens(tokenizer_path: str) -> list[tuple[int, str]]:
    """(id, piece) of the tokenizer's whole-word pieces with a leading space."""
    data = open(tokenizer_path, "rb").read()
    offset, pieces = 4, []  # after max_token_length: per token a float score, an int length, the bytes
    while offset < len(data):
        _, n = struct.unpack_from("fi", data, offset)
        pieces.append(data[offset + 8 : offset + 8 + n])
        offset += 8 + n
    if len(pieces) != VOCAB:
        sys.exit(f"{tokenizer_path}: {len(pieces)} tokens, expected {VOCAB}")
    return [(i, p.decode()) for i, p in enumerate(pieces) if p.startswith(b" ") and p[1:].isalpha() and len(p) > 2]


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    words = word_tokens(sys.argv[1])
    cycle = [i for i, _ in words]
    succ = {t: cycle[(k + 1) % len(cycle)] for k, t in enumerate(cycle)}
    rng = np.random.default_rng(260)
    embd = rng.standard_normal((VOCAB, DIM)).astype(np.float32)  # [vocab, dim]
    unit = embd / np.sqrt(np.mean(embd * embd, axis=1, keepdims=True))  # what the final RMSNorm makes of e_t
    wcls = np.zeros((VOCAB, DIM), np.float32)  # [vocab, dim]
    for t, s in succ.items():
        wcls[s] = 0.1 * unit[t]
    kv_dim = DIM // HEADS * KV_HEADS
    head_size = DIM // HEADS
    zeros = lambda *shape: np.zeros(shape, np.float32)
    ones = lambda *shape: np.ones(shape, np.float32)
    with open(sys.argv[2], "wb") as f:
        # A negative vocabulary size: the classifier follows the weights (not shared with the embeddings).
        f.write(struct.pack("7i", DIM, HIDDEN, LAYERS, HEADS, KV_HEADS, -VOCAB, SEQ_LEN))
        for array in (
            embd,
            ones(LAYERS, DIM),  # rms_att
            zeros(LAYERS, DIM, DIM),  # wq
            zeros(LAYERS, DIM, kv_dim),  # wk
            zeros(LAYERS, DIM, kv_dim),  # wv
            zeros(LAYERS, DIM, DIM),  # wo
            ones(LAYERS, DIM),  # rms_ffn
            zeros(LAYERS, HIDDEN, DIM),  # w1
            zeros(LAYERS, DIM, HIDDEN),  # w2
            zeros(LAYERS, HIDDEN, DIM),  # w3
            ones(DIM),  # rms_final
            zeros(SEQ_LEN, head_size),  # freq_cis real and imaginary (unused)
            wcls,
        ):
            f.write(array.tobytes())
    with open(sys.argv[3], "w") as f:
        f.write("".join(piece for _, piece in words * 3).strip() + "\n")


if __name__ == "__main__":
    main()
