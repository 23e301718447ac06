"""Causal multi-head attention with grouped K/V heads, optional sliding window, soft-capping and sinks."""
import numpy as np

from activations import soft_cap


def attention(q, k, v, positions, scale, window=0, logit_cap=0.0, sinks=None):
    """q: [n, n_heads, d_k]; k: [n, n_kv_heads, d_k]; v: [n, n_kv_heads, d_v]; positions: [n].
    Query head h reads K/V head h // (n_heads / n_kv_heads). A query at position p sees
    keys at positions q <= p, and with a window only those with p - q < window.
    sinks: [n_heads] or None: gpt-oss's learned sink, one more logit in head h's softmax
    (compared with the scaled scores, as ggml_soft_max_ext's sinks) whose weight is dropped,
    so that a head may attend to nothing.
    Returns [n, n_heads * d_v]."""
    n, n_heads, _ = q.shape
    group = n_heads // k.shape[1]
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    scores = np.einsum("qhd,khd->hqk", q, k) * scale
    if logit_cap:
        scores = soft_cap(scores, logit_cap)
    distance = positions[:, None] - positions[None, :]  # [query, key]
    visible = distance >= 0
    if window:
        visible &= distance < window
    scores = np.where(visible[None], scores, -np.inf)
    if sinks is not None:
        sink_column = np.broadcast_to(np.asarray(sinks, dtype=np.float64)[:, None, None], (n_heads, n, 1))
        scores = np.concatenate([scores, sink_column], axis=-1)
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = scores / scores.sum(axis=-1, keepdims=True)
    if sinks is not None:
        weights = weights[..., :-1]
    return np.einsum("hqk,khd->qhd", weights, v).reshape(n, -1)
