"""gemma2 and gemma3 (llama.cpp src/models/gemma2-iswa.cpp, gemma3.cpp; Hugging Face
Gemma2ForCausalLM, Gemma3ForCausalLM).

  x = token_embd[tokens] * sqrt(n_embd)
  per layer:  h = rms_norm(x) * attn_norm
              q, k, v = h Wq, h Wk, h Wv
              gemma3: q, k RMS-normalised per head (attn_q_norm, attn_k_norm)
              NEOX RoPE on q and k
              a = attention(q, k, v), scale {arch}.attention.scale or 1/sqrt(head_dim)
                  gemma2: scores soft-capped, c * tanh(s / c), c = attn_logit_softcapping
              x += rms_norm(a Wo) * post_attention_norm
              h = rms_norm(x) * ffn_norm
              x += rms_norm((gelu_tanh(h Wgate) * (h Wup)) Wdown) * post_ffw_norm
  logits = (rms_norm(x) * output_norm) Woutput   (tied to token_embd when output.weight is absent)
           gemma2: soft-capped by final_logit_softcapping

Norm weights are used as stored: llama.cpp's converter already added the 1 of
Gemma's (1 + w). Sliding-window layers: gemma2 the even ones (window default
4096, llama.cpp's); gemma3 all but every sliding_window_pattern-th (default 6),
and those use RoPE base {arch}.rope.freq_base_swa (default 10000) unscaled while
the global layers use rope.freq_base with rope.scaling.factor.
"""
from types import SimpleNamespace

import numpy as np

from activations import gelu_tanh, rms_norm, soft_cap
from attention import attention
from rope import rope_from_hparams


def load_gemma2(hp, w, n_ctx):
    del n_ctx  # the RoPE does not depend on the context in use
    rope = rope_from_hparams(hp, neox=True)
    layers = _load_layers(hp, w, qk_norm=False)
    for il, layer in enumerate(layers):
        layer.window = hp.key("attention.sliding_window", 4096) if il % 2 == 0 else 0
        layer.rope = rope
    attn_cap = hp.key("attn_logit_softcapping", 50.0)
    final_cap = hp.key("final_logit_softcapping", 30.0)
    return _graph(hp, w, layers, attn_cap, final_cap)


def load_gemma3(hp, w, n_ctx):
    del n_ctx
    pattern = hp.key("attention.sliding_window_pattern", 6)
    local_rope = rope_from_hparams(hp, neox=True, base=hp.key("rope.freq_base_swa", 10000.0), factor=1.0)
    global_rope = rope_from_hparams(hp, neox=True)
    layers = _load_layers(hp, w, qk_norm=True)
    for il, layer in enumerate(layers):
        local = (il + 1) % pattern != 0
        layer.window = hp.key("attention.sliding_window") if local else 0
        layer.rope = local_rope if local else global_rope
    return _graph(hp, w, layers, attn_cap=0.0, final_cap=0.0)


def _load_layers(hp, w, qk_norm):
    hd_k, hd_v = hp.head_dim_k, hp.head_dim_v
    layers = []
    for il in range(hp.n_layers):
        p = f"blk.{il}."
        layers.append(SimpleNamespace(
            attn_norm=w.vector(p + "attn_norm.weight", hp.n_embd),
            wq=w.linear(p + "attn_q.weight", hp.n_heads * hd_k, hp.n_embd),
            wk=w.linear(p + "attn_k.weight", hp.n_kv_heads * hd_k, hp.n_embd),
            wv=w.linear(p + "attn_v.weight", hp.n_kv_heads * hd_v, hp.n_embd),
            q_norm=w.vector(p + "attn_q_norm.weight", hd_k) if qk_norm else None,
            k_norm=w.vector(p + "attn_k_norm.weight", hd_k) if qk_norm else None,
            wo=w.linear(p + "attn_output.weight", hp.n_embd, hp.n_heads * hd_v),
            post_attn_norm=w.vector(p + "post_attention_norm.weight", hp.n_embd),
            ffn_norm=w.vector(p + "ffn_norm.weight", hp.n_embd),
            w_gate=w.linear(p + "ffn_gate.weight", hp.n_ff, hp.n_embd),
            w_up=w.linear(p + "ffn_up.weight", hp.n_ff, hp.n_embd),
            w_down=w.linear(p + "ffn_down.weight", hp.n_embd, hp.n_ff),
            post_ffn_norm=w.vector(p + "post_ffw_norm.weight", hp.n_embd),
        ))
    return layers


def _graph(hp, w, layers, attn_cap, final_cap):
    hd_k, hd_v = hp.head_dim_k, hp.head_dim_v
    embeddings = w.embeddings(hp.n_vocab, hp.n_embd)
    output_norm = w.vector("output_norm.weight", hp.n_embd)
    output = w.output(hp.n_vocab, hp.n_embd)
    scale = hp.key("attention.scale", 1.0 / np.sqrt(hd_k))
    eps = hp.rms_eps

    def forward(tokens, rows):
        n = len(tokens)
        positions = np.arange(n)
        x = embeddings[tokens] * np.sqrt(hp.n_embd)
        for layer in layers:
            h = rms_norm(x, layer.attn_norm, eps)
            q = layer.wq(h).reshape(n, hp.n_heads, hd_k)
            k = layer.wk(h).reshape(n, hp.n_kv_heads, hd_k)
            v = layer.wv(h).reshape(n, hp.n_kv_heads, hd_v)
            if layer.q_norm is not None:
                q = rms_norm(q, layer.q_norm, eps)
                k = rms_norm(k, layer.k_norm, eps)
            q, k = layer.rope.apply(q, positions), layer.rope.apply(k, positions)
            a = attention(q, k, v, positions, scale, layer.window, attn_cap)
            x = x + rms_norm(layer.wo(a), layer.post_attn_norm, eps)
            h = rms_norm(x, layer.ffn_norm, eps)
            f = layer.w_down(gelu_tanh(layer.w_gate(h)) * layer.w_up(h))
            x = x + rms_norm(f, layer.post_ffn_norm, eps)
        logits = output(rms_norm(x[rows], output_norm, eps))
        return soft_cap(logits, final_cap) if final_cap else logits

    return forward
