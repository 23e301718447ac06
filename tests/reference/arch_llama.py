"""llama (llama.cpp src/models/llama.cpp; Hugging Face LlamaForCausalLM).

  x = token_embd[tokens]
  per layer:  h = rms_norm(x) * attn_norm
              q, k, v = h Wq, h Wk, h Wv; RoPE ("normal": adjacent pairs) on q and k
              x += attention(q, k, v, scale 1/sqrt(head_dim)) Wo
              h = rms_norm(x) * ffn_norm
              x += (silu(h Wgate) * (h Wup)) Wdown
  logits = (rms_norm(x) * output_norm) Woutput   (Woutput = token_embd when output.weight is absent)

RoPE: rope_freqs.weight, when present, divides each pair's frequency (Llama 3.1
"llama3" scaling); {arch}.rope.scaling.type linear or yarn; sliding window
{arch}.attention.sliding_window on every layer when given. Mixtral is a llama file
with {arch}.expert_count: the FFN is a mixture of experts (moe.py), weights renormalised.
"""
from types import SimpleNamespace

import numpy as np

import moe
from activations import rms_norm, silu
from attention import attention
from rope import rope_from_hparams


def dense_ffn(gate, up, down):
    return lambda h: down(silu(gate(h)) * up(h))


def load(hp, w, n_ctx):
    del n_ctx  # llama's RoPE does not depend on the context in use
    freq_factors = w.vector("rope_freqs.weight", hp.rope_dim // 2) if w.has("rope_freqs.weight") else None
    rope = rope_from_hparams(hp, neox=False, freq_factors=freq_factors)
    q_dim, kv_dim = hp.n_heads * hp.head_dim_k, hp.n_kv_heads * hp.head_dim_k
    v_dim = hp.n_kv_heads * hp.head_dim_v
    embeddings = w.embeddings(hp.n_vocab, hp.n_embd)
    experts = moe.has_experts(hp)  # Mixtral: a llama file with experts
    layers = []
    for il in range(hp.n_layers):
        p = f"blk.{il}."
        layers.append(SimpleNamespace(
            attn_norm=w.vector(p + "attn_norm.weight", hp.n_embd),
            wq=w.linear(p + "attn_q.weight", q_dim, hp.n_embd),
            wk=w.linear(p + "attn_k.weight", kv_dim, hp.n_embd),
            wv=w.linear(p + "attn_v.weight", v_dim, hp.n_embd),
            wo=w.linear(p + "attn_output.weight", hp.n_embd, hp.n_heads * hp.head_dim_v),
            ffn_norm=w.vector(p + "ffn_norm.weight", hp.n_embd),
            ffn=(moe.load(hp, w, p, normalise=True, shared=False) if experts else
                 dense_ffn(w.linear(p + "ffn_gate.weight", hp.n_ff, hp.n_embd),
                           w.linear(p + "ffn_up.weight", hp.n_ff, hp.n_embd),
                           w.linear(p + "ffn_down.weight", hp.n_embd, hp.n_ff))),
        ))
    output_norm = w.vector("output_norm.weight", hp.n_embd)
    output = w.output(hp.n_vocab, hp.n_embd)
    scale = 1.0 / np.sqrt(hp.head_dim_k)

    def forward(tokens, rows):
        n = len(tokens)
        positions = np.arange(n)
        x = embeddings[tokens]
        for layer in layers:
            h = rms_norm(x, layer.attn_norm, hp.rms_eps)
            q = rope.apply(layer.wq(h).reshape(n, hp.n_heads, hp.head_dim_k), positions)
            k = rope.apply(layer.wk(h).reshape(n, hp.n_kv_heads, hp.head_dim_k), positions)
            v = layer.wv(h).reshape(n, hp.n_kv_heads, hp.head_dim_v)
            x = x + layer.wo(attention(q, k, v, positions, scale, hp.sliding_window))
            h = rms_norm(x, layer.ffn_norm, hp.rms_eps)
            x = x + (moe.forward(layer.ffn, h) if experts else layer.ffn(h))
        return output(rms_norm(x[rows], output_norm, hp.rms_eps))

    return forward
