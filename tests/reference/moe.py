"""Mixture-of-experts FFN (llama.cpp build_moe_ffn; Hugging Face MixtralSparseMoeBlock,
Qwen2MoeSparseMoeBlock, Qwen3MoeSparseMoeBlock):

  p = softmax(h Wrouter)                       router probabilities over all experts
  S = the k experts of largest p (ties: the lower index)
  w_e = p_e / sum_{e in S} p_e   when the architecture renormalises (Mixtral, qwen3moe), else p_e (qwen2moe)
  out = sum_{e in S} w_e * down_e(silu(gate_e h) * up_e h)
      + sigmoid(h . gate_inp_shexp) * down_s(silu(gate_s h) * up_s h)   (qwen2moe's shared expert)

Keys: {arch}.expert_count, {arch}.expert_used_count, {arch}.expert_feed_forward_length
(default feed_forward_length), {arch}.expert_shared_feed_forward_length (default the expert's).
Tensors per layer: ffn_gate_inp [n_embd, n_expert], ffn_{gate,up}_exps [n_embd, n_ff_exp, n_expert],
ffn_down_exps [n_ff_exp, n_embd, n_expert]; qwen2moe adds ffn_gate_inp_shexp [n_embd] and
ffn_{gate,up,down}_shexp.
"""
from types import SimpleNamespace

import numpy as np

from activations import silu


def has_experts(hp):
    return hp.key("expert_count", 0) > 0


def load(hp, w, prefix, normalise, shared):
    n_expert, k = hp.key("expert_count"), hp.key("expert_used_count")
    n_ff_exp = hp.key("expert_feed_forward_length", hp.n_ff)
    layer = SimpleNamespace(
        k=k, normalise=normalise,
        router=w.linear(prefix + "ffn_gate_inp.weight", n_expert, hp.n_embd),
        gate=w.experts(prefix + "ffn_gate_exps.weight", n_expert, n_ff_exp, hp.n_embd),
        up=w.experts(prefix + "ffn_up_exps.weight", n_expert, n_ff_exp, hp.n_embd),
        down=w.experts(prefix + "ffn_down_exps.weight", n_expert, hp.n_embd, n_ff_exp),
        shared=None)
    if shared:
        n_ff_sh = hp.key("expert_shared_feed_forward_length", n_ff_exp)
        layer.shared = SimpleNamespace(
            gate_inp=w.vector(prefix + "ffn_gate_inp_shexp.weight", hp.n_embd),
            gate=w.linear(prefix + "ffn_gate_shexp.weight", n_ff_sh, hp.n_embd),
            up=w.linear(prefix + "ffn_up_shexp.weight", n_ff_sh, hp.n_embd),
            down=w.linear(prefix + "ffn_down_shexp.weight", hp.n_embd, n_ff_sh))
    return layer


def forward(layer, h):
    """h: [n, n_embd] (the normalised FFN input) -> [n, n_embd]."""
    logits = layer.router(h)
    p = np.exp(logits - logits.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        chosen = np.argsort(-p[t], kind="stable")[:layer.k]
        weights = p[t, chosen] / (p[t, chosen].sum() if layer.normalise else 1.0)
        for e, weight in zip(chosen, weights):
            x = h[t:t + 1]
            out[t] += weight * layer.down[e](silu(layer.gate[e](x)) * layer.up[e](x))[0]
    if layer.shared is not None:
        s = layer.shared
        g = 1.0 / (1.0 + np.exp(-(h @ s.gate_inp)))
        out += g[:, None] * s.down(silu(s.gate(h)) * s.up(h))
    return out
