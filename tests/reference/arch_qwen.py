"""qwen2 and qwen3 (llama.cpp src/models/qwen2.cpp, qwen3.cpp; Hugging Face Qwen2ForCausalLM,
Qwen3ForCausalLM): llama's graph with NEOX RoPE (pairs (i, i + rope_dim/2)) and

  qwen2: biases on the Q, K and V projections (attn_q.bias, attn_k.bias, attn_v.bias);
  qwen3: no biases; Q and K each RMS-normalised per head (attn_q_norm.weight,
         attn_k_norm.weight, [head_dim]) before RoPE; head_dim from
         {arch}.attention.key_length, which may differ from n_embd / n_heads.
Neither has a sliding window in llama.cpp's graphs.
"""
from types import SimpleNamespace

import numpy as np

import moe
from activations import rms_norm, silu
from attention import attention
from rope import rope_from_hparams


def dense_ffn(gate, up, down):
    return lambda h: down(silu(gate(h)) * up(h))


def load_qwen2(hp, w, n_ctx):
    del n_ctx  # the RoPE of both does not depend on the context in use
    return _load(hp, w, qk_bias=True, qk_norm=False)


def load_qwen3(hp, w, n_ctx):
    del n_ctx
    return _load(hp, w, qk_bias=False, qk_norm=True)


def load_qwen2moe(hp, w, n_ctx):
    """qwen2 with experts (router weights not renormalised) and a sigmoid-gated shared expert."""
    del n_ctx
    return _load(hp, w, qk_bias=True, qk_norm=False, experts=True, normalise=False, shared=True)


def load_qwen3moe(hp, w, n_ctx):
    """qwen3 with experts, the top-k router weights renormalised to sum 1."""
    del n_ctx
    return _load(hp, w, qk_bias=False, qk_norm=True, experts=True, normalise=True, shared=False)


def _load(hp, w, qk_bias, qk_norm, experts=False, normalise=False, shared=False):
    rope = rope_from_hparams(hp, neox=True)
    hd_k, hd_v = hp.head_dim_k, hp.head_dim_v
    embeddings = w.embeddings(hp.n_vocab, hp.n_embd)
    layers = []
    for il in range(hp.n_layers):
        p = f"blk.{il}."

        def bias(name):
            return p + name if qk_bias else None

        layers.append(SimpleNamespace(
            attn_norm=w.vector(p + "attn_norm.weight", hp.n_embd),
            wq=w.linear(p + "attn_q.weight", hp.n_heads * hd_k, hp.n_embd, bias("attn_q.bias")),
            wk=w.linear(p + "attn_k.weight", hp.n_kv_heads * hd_k, hp.n_embd, bias("attn_k.bias")),
            wv=w.linear(p + "attn_v.weight", hp.n_kv_heads * hd_v, hp.n_embd, bias("attn_v.bias")),
            q_norm=w.vector(p + "attn_q_norm.weight", hd_k) if qk_norm else None,
            k_norm=w.vector(p + "attn_k_norm.weight", hd_k) if qk_norm else None,
            wo=w.linear(p + "attn_output.weight", hp.n_embd, hp.n_heads * hd_v),
            ffn_norm=w.vector(p + "ffn_norm.weight", hp.n_embd),
            ffn=(moe.load(hp, w, p, normalise, shared) if experts else
                 dense_ffn(w.linear(p + "ffn_gate.weight", hp.n_ff, hp.n_embd),
                           w.linear(p + "ffn_up.weight", hp.n_ff, hp.n_embd),
                           w.linear(p + "ffn_down.weight", hp.n_embd, hp.n_ff))),
        ))
    output_norm = w.vector("output_norm.weight", hp.n_embd)
    output = w.output(hp.n_vocab, hp.n_embd)
    scale = 1.0 / np.sqrt(hd_k)

    def forward(tokens, rows):
        n = len(tokens)
        positions = np.arange(n)
        x = embeddings[tokens]
        for layer in layers:
            h = rms_norm(x, layer.attn_norm, hp.rms_eps)
            q = layer.wq(h).reshape(n, hp.n_heads, hd_k)
            k = layer.wk(h).reshape(n, hp.n_kv_heads, hd_k)
            v = layer.wv(h).reshape(n, hp.n_kv_heads, hd_v)
            if qk_norm:
                q = rms_norm(q, layer.q_norm, hp.rms_eps)
                k = rms_norm(k, layer.k_norm, hp.rms_eps)
            q, k = rope.apply(q, positions), rope.apply(k, positions)
            x = x + layer.wo(attention(q, k, v, positions, scale))
            h = rms_norm(x, layer.ffn_norm, hp.rms_eps)
            x = x + (moe.forward(layer.ffn, h) if experts else layer.ffn(h))
        return output(rms_norm(x[rows], output_norm, hp.rms_eps))

    return forward
