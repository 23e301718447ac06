"""phi3 (llama.cpp src/models/phi3.cpp; Hugging Face Phi3ForCausalLM): llama's residual
structure with

  fused QKV: attn_qkv.weight, rows Q (n_heads * head_dim), then K, then V (n_kv_heads * head_dim each);
  fused FFN: ffn_up.weight of 2 * n_ff rows, the first half the gate: (silu(g) * u) Wdown;
  NEOX RoPE (pairs (i, i + rope_dim/2)) with LongRoPE: rope_factors_long.weight when the
  context in use exceeds rope.scaling.original_context_length, else rope_factors_short.weight,
  divide the frequencies ([rope_dim/2]); rope.scaling.attn_factor multiplies cos and sin;
  {arch}.attention.sliding_window, when given, on every layer (Hugging Face's definition;
  llama.cpp currently ignores Phi's window).
"""
from types import SimpleNamespace

import numpy as np

from activations import rms_norm, silu
from attention import attention
from rope import rope_from_hparams


def rope_factors(hp, w, n_ctx):
    long = n_ctx > hp.rope_ctx_orig
    names = ("rope_factors_long.weight", "rope_factors_short.weight")
    present = [name for name in names if w.has(name)]
    if not present:
        return None
    if len(present) != 2:
        raise ValueError(f"LongRoPE needs both {names[0]} and {names[1]}; the file has only {present[0]}")
    factors = [w.vector(name, hp.rope_dim // 2) for name in names]  # both are read: both are part of the graph
    return factors[0] if long else factors[1]


def load(hp, w, n_ctx):
    rope = rope_from_hparams(hp, neox=True, freq_factors=rope_factors(hp, w, n_ctx))
    hd = hp.head_dim_k
    q_dim, kv_dim = hp.n_heads * hd, hp.n_kv_heads * hd
    embeddings = w.embeddings(hp.n_vocab, hp.n_embd)
    layers = []
    for il in range(hp.n_layers):
        p = f"blk.{il}."
        layers.append(SimpleNamespace(
            attn_norm=w.vector(p + "attn_norm.weight", hp.n_embd),
            wqkv=w.linear(p + "attn_qkv.weight", q_dim + 2 * kv_dim, hp.n_embd),
            wo=w.linear(p + "attn_output.weight", hp.n_embd, q_dim),
            ffn_norm=w.vector(p + "ffn_norm.weight", hp.n_embd),
            w_up=w.linear(p + "ffn_up.weight", 2 * hp.n_ff, hp.n_embd),
            w_down=w.linear(p + "ffn_down.weight", hp.n_embd, hp.n_ff),
        ))
    output_norm = w.vector("output_norm.weight", hp.n_embd)
    output = w.output(hp.n_vocab, hp.n_embd)
    scale = 1.0 / np.sqrt(hd)

    def forward(tokens, rows):
        n = len(tokens)
        positions = np.arange(n)
        x = embeddings[tokens]
        for layer in layers:
            h = rms_norm(x, layer.attn_norm, hp.rms_eps)
            qkv = layer.wqkv(h)
            q = rope.apply(qkv[:, :q_dim].reshape(n, hp.n_heads, hd), positions)
            k = rope.apply(qkv[:, q_dim:q_dim + kv_dim].reshape(n, hp.n_kv_heads, hd), positions)
            v = qkv[:, q_dim + kv_dim:].reshape(n, hp.n_kv_heads, hd)
            x = x + layer.wo(attention(q, k, v, positions, scale, hp.sliding_window))
            h = rms_norm(x, layer.ffn_norm, hp.rms_eps)
            gate_up = layer.w_up(h)
            x = x + layer.w_down(silu(gate_up[:, :hp.n_ff]) * gate_up[:, hp.n_ff:])
        return output(rms_norm(x[rows], output_norm, hp.rms_eps))

    return forward
