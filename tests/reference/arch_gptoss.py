"""gpt-oss (llama.cpp src/models/openai-moe-iswa.cpp, LLM_ARCH_OPENAI_MOE; Hugging Face
GptOssForCausalLM; general.architecture "gpt-oss"):

  attention: Q, K, V and output projections with biases (attn_{q,k,v,output}.bias); NEOX
    RoPE (pairs (i, i + rope_dim/2)) with the file's scaling (YaRN in the real files) on
    every layer; scale 1/sqrt(head_dim); each head's softmax takes one more logit, its
    learned sink attn_sinks.weight [n_heads], whose weight is dropped;
  sliding window: layers 0, 2, 4, ... see only their last {arch}.attention.sliding_window
    positions (llama.cpp's swa pattern 2), the odd layers every position;
  the FFN's input norm is post_attention_norm.weight (there is no ffn_norm);
  experts: router logits l = W h + b (ffn_gate_inp.weight and .bias); S = the k experts of
    largest logit (ties: the lower index); weights = softmax of l over S only
    (llama.cpp's SOFTMAX_WEIGHT gating); each expert has biases on its three projections
    (ffn_{gate,up,down}_exps.bias, [n_ff_exp or n_embd, n_expert]) and the clamped SwiGLU
      g = min(gate, 7), u = clamp(up, -7, 7), a = g * sigmoid(1.702 g) * (u + 1)
    (ggml_swiglu_oai with alpha 1.702, limit 7).
"""
from types import SimpleNamespace

import numpy as np

from activations import rms_norm
from attention import attention
from rope import rope_from_hparams

SWIGLU_ALPHA = 1.702
SWIGLU_LIMIT = 7.0


def swiglu_oai(gate, up):
    g = np.minimum(gate, SWIGLU_LIMIT)
    u = np.clip(up, -SWIGLU_LIMIT, SWIGLU_LIMIT)
    return g / (1.0 + np.exp(-SWIGLU_ALPHA * g)) * (u + 1.0)


def load(hp, w, n_ctx):
    del n_ctx  # YaRN's frequencies do not depend on the context in use
    rope = rope_from_hparams(hp, neox=True)
    hd = hp.head_dim_k
    n_expert, k = hp.key("expert_count"), hp.key("expert_used_count")
    n_ff_exp = hp.key("expert_feed_forward_length", hp.n_ff)
    embeddings = w.embeddings(hp.n_vocab, hp.n_embd)
    layers = []
    for il in range(hp.n_layers):
        p = f"blk.{il}."
        layers.append(SimpleNamespace(
            window=hp.sliding_window if il % 2 == 0 else 0,
            attn_norm=w.vector(p + "attn_norm.weight", hp.n_embd),
            wq=w.linear(p + "attn_q.weight", hp.n_heads * hd, hp.n_embd, p + "attn_q.bias"),
            wk=w.linear(p + "attn_k.weight", hp.n_kv_heads * hd, hp.n_embd, p + "attn_k.bias"),
            wv=w.linear(p + "attn_v.weight", hp.n_kv_heads * hd, hp.n_embd, p + "attn_v.bias"),
            wo=w.linear(p + "attn_output.weight", hp.n_embd, hp.n_heads * hd, p + "attn_output.bias"),
            sinks=w.vector(p + "attn_sinks.weight", hp.n_heads),
            ffn_norm=w.vector(p + "post_attention_norm.weight", hp.n_embd),
            router=w.linear(p + "ffn_gate_inp.weight", n_expert, hp.n_embd, p + "ffn_gate_inp.bias"),
            gate=w.experts(p + "ffn_gate_exps.weight", n_expert, n_ff_exp, hp.n_embd),
            up=w.experts(p + "ffn_up_exps.weight", n_expert, n_ff_exp, hp.n_embd),
            down=w.experts(p + "ffn_down_exps.weight", n_expert, hp.n_embd, n_ff_exp),
            gate_b=w.vectors(p + "ffn_gate_exps.bias", n_expert, n_ff_exp),
            up_b=w.vectors(p + "ffn_up_exps.bias", n_expert, n_ff_exp),
            down_b=w.vectors(p + "ffn_down_exps.bias", n_expert, hp.n_embd),
        ))
    output_norm = w.vector("output_norm.weight", hp.n_embd)
    output = w.output(hp.n_vocab, hp.n_embd)
    scale = 1.0 / np.sqrt(hd)

    def experts(layer, h):
        """h: [n, n_embd] (the normalised FFN input) -> [n, n_embd]."""
        logits = layer.router(h)
        out = np.zeros_like(h)
        for t in range(h.shape[0]):
            chosen = np.argsort(-logits[t], kind="stable")[:k]
            weights = np.exp(logits[t, chosen] - logits[t, chosen].max())
            weights /= weights.sum()
            x = h[t:t + 1]
            for e, weight in zip(chosen, weights):
                a = swiglu_oai(layer.gate[e](x) + layer.gate_b[e], layer.up[e](x) + layer.up_b[e])
                out[t] += weight * (layer.down[e](a) + layer.down_b[e])[0]
        return out

    def forward(tokens, rows):
        n = len(tokens)
        positions = np.arange(n)
        x = embeddings[tokens]
        for layer in layers:
            h = rms_norm(x, layer.attn_norm, hp.rms_eps)
            q = rope.apply(layer.wq(h).reshape(n, hp.n_heads, hd), positions)
            k_ = rope.apply(layer.wk(h).reshape(n, hp.n_kv_heads, hd), positions)
            v = layer.wv(h).reshape(n, hp.n_kv_heads, hd)
            x = x + layer.wo(attention(q, k_, v, positions, scale, window=layer.window, sinks=layer.sinks))
            x = x + experts(layer, rms_norm(x, layer.ffn_norm, hp.rms_eps))
        return output(rms_norm(x[rows], output_norm, hp.rms_eps))

    return forward
